"""A full node that stamps the receipts it issues itself (SentToValidators, RejectedByFullnode,
Finalized) with timestamp 0 (000: "timestamp - unix time in milliseconds"; REMP-TIME-001). The
validators' receipts it relays keep theirs."""

from rmkit.conformance.remp.examples._base import VariantAdapter


class Adapter(VariantAdapter):
    faulty_role = "fullnode"
    name = "example: full-node receipts stamped 0"

    def outputs(self, outs):
        # the bug: no clock read for its own receipts
        return [dict(o, receipt=dict(o["receipt"], time=0)) if o["type"] == "Publish" and o["role"] == "fullnode" else o
                for o in outs]


def factory(role):
    return Adapter(role)
