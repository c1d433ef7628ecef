"""A full node that sends on, at its next resend, a message it rejected at pre-evaluation (001:
RejectedByNode "it's a final decision, message will not be resent again"; REMP-FN-001)."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.protocols.remp.events import SendToValidator
from rmkit.reference_impl.remp.fullnode import FullNode, rotation


class _FullNode(FullNode):
    def _on_tick(self, ev):
        out = super()._on_tick(ev)
        for mid, m in self.msgs.items():
            if self._pos.get(mid) != "rejected":
                continue
            left = [v for v in rotation(mid, self.validators) if v not in m.targets]
            if left:  # the bug: a rejected message is resent like any other
                m.targets[left[0]] = None
                out.append(SendToValidator(left[0], mid, m.uid, ev.time))
        return out


class Adapter(VariantAdapter):
    faulty_role = "fullnode"
    name = "example: sends messages it rejected"
    variant = _FullNode


def factory(role):
    return Adapter(role)
