"""What the faulty examples share: the reference adapter with one machine swapped for a variant."""

from __future__ import annotations

from rmkit.reference_impl.remp.adapter import ReferenceAdapter, make_machine


class VariantAdapter(ReferenceAdapter):
    """The reference adapter whose machine is built by ``build(role, params)`` for the faulty role
    (the other roles stay the reference's)."""

    faulty_role = ""
    name = "faulty example"

    def build(self, params: dict):
        raise NotImplementedError

    def hello(self, params: dict) -> dict:
        self.machine = self.build(params) if self.role == self.faulty_role else make_machine(self.role, params)
        return {"type": "ready", "implementation": self.name}
