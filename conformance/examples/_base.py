"""What the faulty examples share: the reference adapter with one machine swapped for a variant."""

from __future__ import annotations

from rmkit.reference_impl.remp.adapter import ReferenceAdapter, make_machine


class VariantAdapter(ReferenceAdapter):
    """The reference adapter whose ``faulty_role`` machine is built by :func:`make_machine` with
    ``variant`` (a machine subclass carrying the bug) or ``config`` (config fields the bug changes), and
    ``params`` (a change to the hello's parameters); the other roles stay the reference's."""

    faulty_role = ""
    name = "faulty example"
    variant = None
    config: dict = {}

    def params(self, params: dict) -> dict:
        return params

    def hello(self, params: dict) -> dict:
        if self.role == self.faulty_role:
            self.machine = make_machine(self.role, self.params(params), self.variant, **self.config)
        else:
            self.machine = make_machine(self.role, params)
        return {"type": "ready", "implementation": self.name}
