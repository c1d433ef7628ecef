"""A validator that never tells the catchain what its collator did: no accept or reject record is
broadcast (000: "A node informs other nodes that the message is rejected or accepted by the
collator"; REMP-VOTE-001), so the others can neither put accepted messages first nor stop at 2/3."""

from rmkit.conformance.examples._base import VariantAdapter


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: no accept/reject records"

    def outputs(self, outs):
        # the bug: the collator's verdicts stay local
        return [o for o in outs if not (o["type"] == "CatchainBroadcast" and o["record"]["kind"] in ("accept", "reject"))]


def factory(role):
    return Adapter(role)
