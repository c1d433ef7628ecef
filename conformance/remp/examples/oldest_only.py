"""A validator whose collation takes the oldest messages of its queue, a message another
validator's collator has in a pending candidate included (000: "When the collator generates a new
block, it takes the oldest messages from the hashmap"; the documents say nothing of holding such a
message back)."""

from rmkit.conformance.remp.examples._base import ChoiceMachine, VariantAdapter
from rmkit.protocols.remp.events import CollationRound
from rmkit.reference_impl.remp.validator import Validator


class _Validator(ChoiceMachine, Validator):
    hook = "choose_order"

    def choice(self, event):
        if isinstance(event, CollationRound):
            return self.collation_plan(event.max_messages, hold_back=False) if self.member else None
        return None


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: oldest first, none held back"
    variant = _Validator


def factory(role):
    return Adapter(role)
