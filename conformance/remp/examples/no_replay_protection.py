"""A validator that forgets to ask the message cache when it validates a shard block: a block
holding a message already accepted in another block is accepted too (replay; REMP-REPLAY-001)."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.reference_impl.remp.validator import Validator


class NoReplayValidator(Validator):
    def _on_accepted(self, ev):
        for mid in ev.msg_ids:  # the bug: the earlier acceptance is not looked at
            m = self.msgs.get(mid)
            if m is not None:
                m.acc = None
            self.acc_only.pop(mid, None)
        return super()._on_accepted(ev)


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "example: no replay protection"

    variant = NoReplayValidator


def factory(role):
    return Adapter(role)
