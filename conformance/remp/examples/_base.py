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

    def outputs(self, outs: list) -> list:
        """The faulty role's outputs of one step, as the variant sends them (default: the machine's)."""
        return outs

    def step(self, event: dict) -> list:
        out = super().step(event)
        return self.outputs(out) if self.role == self.faulty_role else out

    def hello(self, params: dict) -> dict:
        if self.role == self.faulty_role:
            self.machine = make_machine(self.role, self.params(params), self.variant, **self.config)
        else:
            self.machine = make_machine(self.role, params)
        return {"type": "ready", "implementation": self.name}


class ChoiceMachine:
    """Mixin for a machine subclass that makes a choice of its own through the machine's choice hook
    (``choose`` of the full node, ``choose_order`` of the validator) for the events where
    :meth:`choice` returns one."""

    hook = ""

    def choice(self, event):
        return None

    def step(self, event):
        value = self.choice(event)
        if value is None:
            return super().step(event)
        setattr(self, self.hook, value)
        try:
            return super().step(event)
        finally:
            setattr(self, self.hook, None)
