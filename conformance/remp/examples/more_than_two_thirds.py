"""A validator that stops collating a message only once MORE than two thirds of the validators
rejected it (floor(2N/3)+1) instead of two thirds (ceil(2N/3)). The two agree for set sizes that
are not multiples of 3 (4, 5, 7, 8, ...) and differ for 3, 6, 9, ...: there it still collates a
message 2/3 of the validators rejected (REMP-COLL-002; 000: "those rejected by 2/3 of collators
should not be collated further"). Only a run that draws such a set size finds it."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.reference_impl.remp.validator import Validator


class MoreThanTwoThirds(Validator):
    def _reject_stop(self, n: int) -> int:
        return 2 * n // 3 + 1  # the bug: "more than 2/3"


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: stops at more than 2/3 rejects"
    variant = MoreThanTwoThirds


def factory(role):
    return Adapter(role)
