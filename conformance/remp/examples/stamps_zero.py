"""A validator that stamps its receipts with timestamp 0 instead of the time it made them (000:
"timestamp - unix time in milliseconds"; REMP-TIME-001). Legal in ever-node, where validator
receipts may carry 0 (remp-as-built section 3): faulty in the documents' profile."""

from rmkit.conformance.remp.examples._base import VariantAdapter


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: receipts stamped 0"

    def outputs(self, outs):
        # the bug: no clock read
        return [dict(o, receipt=dict(o["receipt"], time=0)) if o["type"] == "Receipt" else o for o in outs]


def factory(role):
    return Adapter(role)
