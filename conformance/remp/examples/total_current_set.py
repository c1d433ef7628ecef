"""A full node whose SentToValidators counts the current validator set only in total_validators
while a switch is announced (000: "total_validators": 5; the documents do not say whether the
announced next set, which also gets the message, counts)."""

from rmkit.conformance.remp.examples._base import VariantAdapter


class Adapter(VariantAdapter):
    faulty_role = "fullnode"
    name = "example: total_validators of the current set"

    def outputs(self, outs):
        current = len(self.machine.validators)
        res = []
        for o in outs:
            r = o.get("receipt") if o["type"] == "Publish" else None
            if r and r["kind"] == "SentToValidators" and r["sent_to"] <= current:
                o = dict(o, receipt=dict(r, total_validators=current))
            res.append(o)
        return res


def factory(role):
    return Adapter(role)
