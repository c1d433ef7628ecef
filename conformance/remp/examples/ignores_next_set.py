"""A full node that ignores the announced next validator set: during a switch new messages reach
only the current set (000: send "to each validator in the next shard (in case of session
switching)"; REMP-CLIENT-003)."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.reference_impl.remp.fullnode import FullNode


class DeafFullNode(FullNode):
    def _on_upcoming(self, ev):
        return []  # the bug: the announcement is dropped


class Adapter(VariantAdapter):
    faulty_role = "fullnode"
    name = "example: ignores the announced next set"
    variant = DeafFullNode


def factory(role):
    return Adapter(role)
