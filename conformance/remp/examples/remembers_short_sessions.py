"""LEGAL: a validator that applies 001's short-session exception: "when master sessions are shorter
than specified in config, then the message is remembered longer, until total session lifetime
exceeds twice of mc_catchain_lifetime". After short sessions it copies a message received in
session N on in the hand-over past N+2 and reports no Timeout for it then (REMP-FREE-013); it does
not collate it again (the judge does not yet follow a collation of such a message)."""

from rmkit.conformance.remp.examples._base import VariantAdapter
from rmkit.protocols.remp.events import Forwarded
from rmkit.reference_impl.remp.validator import Validator


class RememberLonger(Validator):
    def _on_switch(self, ev):
        if not hasattr(self, "_starts"):
            self._starts = {}
        self._starts.setdefault(ev.seqno, ev.start_time)
        return super()._on_switch(ev)

    def _longer(self, session) -> bool:
        starts = getattr(self, "_starts", {})
        first, now = starts.get(session), starts.get(self.session)
        return first is not None and now is not None and now - first < 2 * self.lifetime_ms

    def _forward(self, session, to_session, time):
        f = super()._forward(session, to_session, time)
        have = {x[0] for x in f.full} | {x[0] for x in f.digests}
        kept = tuple((m.id, m.uid, m.session) for m in self.msgs.values()
                     if m.body and not m.done and not m.expired and m.acc is None and not m.own_rej and not m.stopped
                     and m.id not in have and not self._live(m.session) and self._longer(m.session))
        return Forwarded(f.sender, f.session, f.to_session, f.full + kept, f.digests, f.time) if kept else f

    def _expire(self, out, m, time):
        if not m.done and m.cand is None and m.acc is None and self._longer(m.session):
            self._forget(m)  # remembered longer by the exception: no Timeout at N+2
            return
        super()._expire(out, m, time)


class Adapter(VariantAdapter):
    faulty_role = "validator"
    name = "legal example: 001's short-session exception"
    variant = RememberLonger


def factory(role):
    return Adapter(role)
