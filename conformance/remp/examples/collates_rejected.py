"""A validator that does not count the catchain's reject records: a message 2/3 of the validators
rejected is still handed to its collator (000: "those rejected by 2/3 of collators should not be
collated further")."""

from rmkit.conformance.remp.examples._base import VariantAdapter


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: collates messages 2/3 rejected"

    config = {"stop_at_two_thirds": False}  # the bug: the stop-at-2/3 rule switched off


def factory(role):
    return Adapter(role)
