"""A validator whose collator takes the newest messages first (000: "it takes the oldest messages
from the hashmap"; neither reading of the documents allows it: REMP-COLL-001)."""

from rmkit.conformance.remp.examples._base import ChoiceMachine, VariantAdapter
from rmkit.protocols.remp.events import CollationRound
from rmkit.reference_impl.remp.validator import Validator


class NewestFirstValidator(ChoiceMachine, Validator):
    hook = "choose_order"

    def choice(self, event):
        if isinstance(event, CollationRound):
            return list(reversed(self.collation_plan(10_000)))[: event.max_messages]
        return None


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: newest first"
    variant = NewestFirstValidator


def factory(role):
    return Adapter(role)
