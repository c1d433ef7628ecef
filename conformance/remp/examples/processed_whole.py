"""LEGAL: the base protocol's hand-over without 000's proposal to send processed messages as ids:
"All validators inform the next validator set about ... The messages that were processed by the
validators in the current session (for replay protection purposes)", here whole, as the pending
ones ("Only currently processed messages should be delivered in full" is a proposal for speeding
up, REMP-FREE-014). Finally rejected messages still go as ids."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.protocols.remp.events import Forwarded
from rmkit.protocols.remp.events import ACCEPTED
from rmkit.reference_impl.remp.validator import Validator


class ProcessedWhole(Validator):
    def _forward(self, session, to_session, time):
        f = super()._forward(session, to_session, time)
        whole = tuple((mid, None, origin) for mid, status, _root, origin in f.digests if status == ACCEPTED)
        rest = tuple(d for d in f.digests if d[1] != ACCEPTED)
        return Forwarded(f.sender, f.session, f.to_session, f.full + whole, rest, f.time)


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "legal example: processed messages handed over whole"
    variant = ProcessedWhole


def factory(role):
    return Adapter(role)
