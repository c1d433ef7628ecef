"""LEGAL: a client that concludes the final reject as soon as every validator that reported the
message queued has answered it with a reject or a timeout (001: "Unless you have a pair for each
“New” message, you cannot be sure that the message is finally declined"), without waiting for
the validators of the set it has not heard from (REMP-FREE-012). Its final outcome never changes."""

from rmkit.conformance.examples._base import VariantAdapter
from rmkit.reference_impl.remp.adapter import make_machine


class PairsConsumer:
    def __init__(self, profile, params):
        self.inner = make_machine("consumer", dict(params, profile=profile))
        self.inner.c.set_size = None  # the choice: the validators it heard from are the ones that count

    def step(self, event):
        return self.inner.step(event)


class Adapter(VariantAdapter):
    faulty_role = "consumer"
    name = "legal example: final reject by 001's pairs"
    variant = PairsConsumer


def factory(role):
    return Adapter(role)
