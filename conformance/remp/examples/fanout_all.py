"""LEGAL: a full node that sends every message to every validator of the current set and of an
announced next one (000: "It sends the message to each validator in the current shard, or to each
validator in the current shard and to each validator in the next shard"), the documents' form
before the N/3+1 optimisation."""

from rmkit.conformance.remp.examples._base import ChoiceMachine, VariantAdapter
from rmkit.protocols.remp.events import Submit
from rmkit.reference_impl.remp.fullnode import FullNode


class FanoutAllFullNode(ChoiceMachine, FullNode):
    hook = "choose"

    def choice(self, event):
        if isinstance(event, Submit) and event.msg_id not in self.msgs:
            return {event.msg_id: list(dict.fromkeys(v for vs in self.sets() for v in vs))}
        return None


class Adapter(VariantAdapter):
    faulty_role = "fullnode"
    name = "legal example: every validator"
    variant = FanoutAllFullNode


def factory(role):
    return Adapter(role)
