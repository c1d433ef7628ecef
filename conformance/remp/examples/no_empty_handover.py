"""LEGAL: a validator that sends no hand-over at the session's end when it has nothing to forward."""

from rmkit.conformance.remp.examples._base import VariantAdapter


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "legal example: no empty hand-over"

    def outputs(self, outs):
        return [o for o in outs if not (o["type"] == "Forwarded" and not o["full"] and not o["digests"])]


def factory(role):
    return Adapter(role)
