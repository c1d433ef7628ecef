"""An ever-node validator whose paced sender waits 10 s between sends: a final receipt comes later
than the pacing bound allows (remp-as-built section 3: 0 / 1000 / 2000 / 5000 ms; REMP-SEND-001)."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.reference_impl.remp.sender import ReceiptSender


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: paced beyond the bound (ever-node)"
    config = {"paced": True}

    def hello(self, params):
        reply = super().hello(params)
        if self.role == self.faulty_role:
            self.machine.sender = ReceiptSender((0, 10_000), 30_000)  # the bug: 10 s between sends
        return reply


def factory(role):
    return Adapter(role)
