"""A full node that sends each message to one validator fewer than floor(N/3)+1, so no honest
validator may get it (REMP-FANOUT-002)."""

from rmkit.conformance.examples._base import VariantAdapter
from rmkit.reference_impl.remp.fullnode import FullNode, FullNodeConfig


class Adapter(VariantAdapter):
    faulty_role = "fullnode"
    name = "example: fan-out below a third plus one"

    def build(self, p):
        fanout = max(1, p["fanout"] - 1)  # the bug
        return FullNode(p["own_id"], FullNodeConfig(profile=p.get("profile", "spec"), fanout=fanout,
                                                    retry_interval_ms=p.get("retry_interval_ms", 2000),
                                                    forget_grace_ms=p.get("forget_grace_ms", 60_000),
                                                    lifetime_ms=p.get("lifetime_ms")))


def factory(role):
    return Adapter(role)
