"""A validator that hands nothing over at the end of its session: pending messages and the ids of
processed ones are not forwarded to the next validator set (000: "Forward messages are generated at
the session's end")."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.protocols.remp.events import Forwarded
from rmkit.reference_impl.remp.validator import Validator


class NoForwardValidator(Validator):
    def _forward(self, session, to_session, time):
        return Forwarded(self.id, session, to_session, (), (), time)  # the bug: an empty hand-over


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: no forwarding at session end"

    variant = NoForwardValidator


def factory(role):
    return Adapter(role)
