"""LEGAL: seed 000's optimisations: a validator that does not forward at the session's end the
messages it received via the catchain ("do not forward a message if it is received via the
catchain") and collates messages another validator's collator accepted first ("Accepted messages
should be collated first"); it also leaves out the Duplicate receipt and an empty hand-over."""

from rmkit.conformance.remp.examples._base import ChoiceMachine, VariantAdapter
from rmkit.protocols.remp.events import CollationRound, Forwarded
from rmkit.reference_impl.remp.validator import Validator


class OptimisedValidator(ChoiceMachine, Validator):
    hook = "choose_order"

    def choice(self, event):
        if isinstance(event, CollationRound):
            return self.collation_plan(event.max_messages, accepted_first=True)
        return None

    def step(self, event):
        out = super().step(event)
        return [o for o in out if not (isinstance(o, Forwarded) and not o.full and not o.digests)]

    def _forward(self, session, to_session, time):
        f = super()._forward(session, to_session, time)
        cc = {mid for mid, m in self.msgs.items() if m.from_cc}
        return Forwarded(f.sender, f.session, f.to_session, tuple(x for x in f.full if x[0] not in cc),
                         tuple(x for x in f.digests if x[0] not in cc), f.time)


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "legal example: seed 000's optimisations"
    variant = OptimisedValidator
    config = {"report_duplicates": False}


def factory(role):
    return Adapter(role)
