"""LEGAL: a validator that never tells the catchain what its collator did: no accept or reject
record is broadcast. 000 allows it: "Reject/accept messages may be removed or limited without any
great damage to the protocol if they create too much extra traffic" (REMP-FREE-011). The others
then neither order its accepted messages first nor count its rejects towards 2/3, which the
protocol survives."""

from rmkit.conformance.remp.examples._base import VariantAdapter


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "legal example: no accept/reject records"

    def outputs(self, outs):
        # the choice: the collator's verdicts stay local
        return [o for o in outs if not (o["type"] == "CatchainBroadcast" and o["record"]["kind"] in ("accept", "reject"))]


def factory(role):
    return Adapter(role)
