"""LEGAL: a full node that sends each message to its own random floor(N/3)+1 validators of each set
(000: "It is possible to limit their set by N/3+1 random validators") and resends to a random one of
those left, through the machine's choice hook; it must pass wherever the reference passes."""

import random

from rmkit.conformance.remp.examples._base import ChoiceMachine, VariantAdapter
from rmkit.protocols.remp.model import model_for
from rmkit.protocols.remp.events import Submit, Tick
from rmkit.reference_impl.remp.fullnode import FullNode


class RandomFanoutFullNode(ChoiceMachine, FullNode):
    hook = "choose"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.rng = random.Random(7)

    def choice(self, event):
        if isinstance(event, Submit) and event.msg_id not in self.msgs and event.error is None and event.has_body:
            picked = []
            for vs in self.sets():
                k = model_for(self.traits.profile).threshold("fanout_min", len(vs))
                picked += [v for v in self.rng.sample(list(vs), min(k, len(vs))) if v not in picked]
            return {event.msg_id: picked}
        if isinstance(event, Tick):
            due = {}
            for mid in list(self.watch):
                if self.resend_due(mid, event.time):
                    m = self.msgs[mid]
                    due[mid] = [self.rng.choice(sorted({v for vs in self.sets() for v in vs if v not in m.targets}))]
            return due
        return None


class Adapter(VariantAdapter):
    faulty_role = "fullnode"
    name = "legal example: random floor(N/3)+1 validators"
    variant = RandomFanoutFullNode


def factory(role):
    return Adapter(role)
