"""A full node that waits three retry intervals before sending to one more validator while too few
answered (remp-as-built section 3: every 2 s; REMP-CLIENT-001)."""

from rmkit.conformance.remp.examples._base import VariantAdapter


class Adapter(VariantAdapter):
    faulty_role = "fullnode"
    name = "example: resends too slowly"

    def params(self, p):
        return dict(p, retry_interval_ms=3 * p["retry_interval_ms"])  # the bug


def factory(role):
    return Adapter(role)
