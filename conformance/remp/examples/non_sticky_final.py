"""A validator whose final statuses are not final: after rejecting a message (or timing it out) it
still reports it included in a block when the message comes back (REMP-SRC-001, REMP-SEQ-001)."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.protocols.remp.events import Receipt
from rmkit.reference_impl.remp.validator import Validator


class NonStickyValidator(Validator):
    def _emit(self, out, m, kind, time, block=None, mc_block=None, error=None):
        if super()._emit(out, m, kind, time, block, mc_block, error):
            return True
        if kind in self._vt and m.final_pos is not None:  # the bug: a final position does not hold
            m.pos = self._vt[kind][0]
            out.append(Receipt(kind, m.id, self.id, time, block, mc_block, error))
            return True
        return False


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: non-sticky final status"

    variant = NonStickyValidator


def factory(role):
    return Adapter(role)
