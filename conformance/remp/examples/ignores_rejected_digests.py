"""A validator that ignores the "rejected" digests of a hand-over: a message the previous session
finally rejected is collated again when a copy arrives (REMP-COLL-002: a message forwarded as
finally rejected is not collated further)."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.protocols.remp.events import REJECTED
from rmkit.reference_impl.remp.validator import Validator


class _Validator(Validator):
    def _on_digests(self, ev):
        kept = tuple(d for d in ev.digests if d[1] != REJECTED)  # the bug: only "accepted" digests are read
        return super()._on_digests(type(ev)(ev.sender, ev.session, kept, ev.time))


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: ignores rejected hand-over digests"
    variant = _Validator


def factory(role):
    return Adapter(role)
