"""LEGAL in ever-node: a validator that never sends an intermediate receipt (only the final ones:
rejected, timed out, finalized); the profile lets intermediate receipts be skipped (remp-as-built
section 3)."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.protocols.remp.model import model_for


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "legal example: final receipts only (ever-node)"

    def outputs(self, outs):
        final = {k for k, ki in model_for(self.machine.config.profile).kinds.items() if ki.final}
        return [o for o in outs if o["type"] != "Receipt" or o["receipt"]["kind"] in final]


def factory(role):
    return Adapter(role)
