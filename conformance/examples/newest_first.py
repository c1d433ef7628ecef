"""A validator whose collator takes the newest messages first (000: "it takes the oldest messages
from the hashmap"; neither reading of the documents allows it: REMP-COLL-001)."""

from rmkit.conformance.examples._base import VariantAdapter
from rmkit.reference_impl.remp.events import CollationRound
from rmkit.reference_impl.remp.validator import Validator


class NewestFirstValidator(Validator):
    def step(self, event):
        if isinstance(event, CollationRound):
            plan = self.collation_plan(10_000)
            self.choose_order = list(reversed(plan))[: event.max_messages]
        try:
            return super().step(event)
        finally:
            self.choose_order = None


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: newest first"
    variant = NewestFirstValidator


def factory(role):
    return Adapter(role)
