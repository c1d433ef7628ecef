"""A validator that does not count the catchain's reject records: a message 2/3 of the validators
rejected is still handed to its collator (000: "those rejected by 2/3 of collators should not be
collated further")."""

from rmkit.conformance.examples._base import VariantAdapter
from rmkit.reference_impl.remp.validator import ValidatorConfig, Validator


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: collates messages 2/3 rejected"

    def build(self, p):
        # the bug: the stop-at-2/3 rule switched off
        return Validator(p["own_id"], ValidatorConfig(profile=p.get("profile", "spec"), lifetime_ms=p.get("lifetime_ms"),
                                                      paced=False, stop_at_two_thirds=False))


def factory(role):
    return Adapter(role)
