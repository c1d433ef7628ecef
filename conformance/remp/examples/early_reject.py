"""A client that tells its user "rejected" as soon as one validator rejects, although another may
still include the message (001: "All validators must reject the message before it is finally
rejected")."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.reference_impl.remp.adapter import make_machine
from rmkit.protocols.remp.events import ConsumeReceipt, ConsumerOutcome


class EarlyRejectConsumer:
    def __init__(self, profile, params):
        self.inner = make_machine("consumer", dict(params, profile=profile))
        self.rejected = False

    def step(self, event):
        out = self.inner.step(event)
        if isinstance(event, ConsumeReceipt) and str(event.receipt.get("kind", "")).startswith("RejectedBy"):
            self.rejected = True
        if self.rejected and out and not out[0].final:
            return [ConsumerOutcome("rejected", True, False)]  # the bug: one reject is taken as final
        return out


class Adapter(VariantAdapter):
    faulty_role = "consumer"
    name = "example: rejected at the first reject"

    variant = EarlyRejectConsumer


def factory(role):
    return Adapter(role)
