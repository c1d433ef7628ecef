"""A full node that sends each message to one validator fewer than floor(N/3)+1, so no honest
validator may get it (REMP-FANOUT-002)."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.protocols.remp.model import model_for


class Adapter(VariantAdapter):
    faulty_role = "fullnode"
    name = "example: fan-out below a third plus one"

    def params(self, p):
        n = len(p["validators"])
        return dict(p, fanout=max(1, model_for(p.get("profile", "spec")).threshold("fanout_min", n) - 1))  # the bug


def factory(role):
    return Adapter(role)
