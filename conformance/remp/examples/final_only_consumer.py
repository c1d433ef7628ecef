"""A consumer that tells the user final conclusions only (finalized, rejected, lost) and 'pending'
before them: REMP-CLIENT-002 fixes when those may be concluded; which intermediate conclusion a
client reports is its own (001: "one may trade efficiency for reliability in the software,
choosing not to trace further processing results")."""

from rmkit.conformance.remp.examples._base import VariantAdapter


class Adapter(VariantAdapter):
    faulty_role = "consumer"
    name = "example: final outcomes only"

    def outputs(self, outs):
        return [dict(o, name="pending") if o["type"] == "Outcome" and not o["final"] and not o["lost"] else o for o in outs]


def factory(role):
    return Adapter(role)
