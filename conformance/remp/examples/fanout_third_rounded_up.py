"""A full node that sends each message to ceil(N/3) validators instead of floor(N/3)+1. The two
agree for most set sizes (4, 5, 7, 8, ...) and differ where N is a multiple of 3 (3, 6, 9, ...):
there a third of the set may be faulty and hold every copy (REMP-FANOUT-002; 000: "It is possible
to limit their set by N/3+1 random validators (since we suppose that at most N/3 validators are
invalid)"). Only a run that draws such a set size finds it."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.reference_impl.remp.fullnode import FullNode


class CeilThirdFullNode(FullNode):
    def _fanout_for(self, n: int) -> int:
        return max(1, -(-n // 3))  # the bug: a third rounded up, without the one more


class Adapter(VariantAdapter):
    faulty_role = "fullnode"
    name = "example: fan-out of ceil(N/3)"
    variant = CeilThirdFullNode


def factory(role):
    return Adapter(role)
