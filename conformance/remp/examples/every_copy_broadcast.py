"""LEGAL: the base protocol of 000 without its "Proposals for speeding up": a validator puts every
message it gets into the REMP catchain, from the full node or from the catchain itself, whether or
not the catchain already delivered it ("Each validator informs other validators about the new
message it received. This results in N^2 messages."; "A message may exist in the Message Queue
Catchain in several copies"). Not re-transmitting catchain copies is a proposal (REMP-FREE-010)."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.protocols.remp.events import NEW, CatchainBroadcast, CatchainRecord, MessageFromFullNode
from rmkit.reference_impl.remp.validator import Validator


class EveryCopyValidator(Validator):
    def step(self, event):
        out = super().step(event)
        copy = isinstance(event, MessageFromFullNode) or (isinstance(event, CatchainRecord) and event.kind == NEW
                                                          and event.sender != self.id)
        m = self.msgs.get(event.msg_id) if copy else None
        if m is not None and m.body and not any(isinstance(o, CatchainBroadcast) for o in out):
            out.append(CatchainBroadcast(CatchainRecord(self.id, m.id, self.session, NEW, event.time, m.uid, m.session)))
        return out


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "legal example: every copy into the catchain (000's base protocol)"
    variant = EveryCopyValidator


def factory(role):
    return Adapter(role)
