"""LEGAL in ever-node: a validator that sends its receipts as the running node does, through the
paced, coalescing sender (0 / 1000 / 2000 / 5000 ms, only the last pending receipt per message), so
intermediate receipts are skipped and others come at a later step (remp-as-built section 3)."""

from rmkit.conformance.remp.examples._base import VariantAdapter


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "legal example: paced, coalesced receipts (ever-node)"
    config = {"paced": True}


def factory(role):
    return Adapter(role)
