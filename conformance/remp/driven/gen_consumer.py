"""Generated scenarios for the consumer role (the SDK side): the receipts of one message, as the
log holds them, from the full node and several validators, in any order, with the outcome asked
after each and past the horizon.

Weighted toward the outcome rules' edges: 2/3 and all of the queued validators rejecting or
timing out, a Finalized next to rejects, the full node's reject, duplicates and out-of-order
receipts, validators with timestamp 0, unknown kinds, and queries at and past the horizon (lost).
"""

from __future__ import annotations

from rmkit.conformance.remp.driven.draws import precondition, rule, st

from rmkit.conformance.remp.driven.machine import DrivenMachine
from rmkit.conformance.remp.driven.names import FULLNODE_ID, block, msg_id
from rmkit.protocols.remp.model import FULLNODE, VALIDATOR, model_for
from rmkit.protocols.remp.events import BlockRef, Receipt
from rmkit.reference_impl.remp.wire import renderer

MESSAGE = "m1"


class ConsumerWorld(DrivenMachine):
    def __init__(self):
        super().__init__()
        m = model_for(self.profile)
        self.vals = list(self.params["validators"])
        self.horizon = self.params["horizon_ms"]
        self.render = renderer(self.profile)
        self.v_kinds = sorted(k for k, ki in m.kinds.items() if VALIDATOR in ki.issuers and ki.in_table)
        self.f_kinds = sorted(k for k, ki in m.kinds.items() if FULLNODE in ki.issuers and ki.in_table)
        self.rejects = sorted(k for k in self.v_kinds if m.kinds[k].final and m.kinds[k].category in ("rejected", "timeout"))
        self.queue_kinds = sorted(k for k in self.v_kinds if m.kinds[k].bit & m.queued_mask)
        self.start = 1_000_000
        self.time = self.start
        self.sent: list = []

    def _receipt(self, kind: str, source: str, role: str, n: int = 1, at=None) -> None:
        self.time += 50
        r = Receipt(kind, msg_id(MESSAGE), source, self.time, block=BlockRef(**block(n)),
                    mc_block=BlockRef(**block(n, master=True)), error="rejected" if "Reject" in kind else None,
                    sent_to=len(self.vals) // 3 + 1, total_validators=len(self.vals))
        obj = self.render(r, role)
        self.sent.append(obj)
        self.send({"type": "ConsumeReceipt", "receipt": obj, "at": at})

    @rule(k=st.integers(0, 1000), v=st.integers(0, 100), n=st.sampled_from([1, 1, 2]))
    def validator_receipt(self, k, v, n):
        self._receipt(self.v_kinds[k % len(self.v_kinds)], self.vals[v % len(self.vals)], VALIDATOR, n)

    @rule(k=st.integers(0, 1000), n=st.sampled_from([1, 1, 2]))
    def fullnode_receipt(self, k, n):
        self._receipt(self.f_kinds[k % len(self.f_kinds)], FULLNODE_ID, FULLNODE, n)

    @rule(share=st.sampled_from(["two-thirds", "all", "all-but-one"]), k=st.integers(0, 100))
    def validators_reject(self, share, k):
        """Queued validators reject or time out: 2/3 of them, all, or all but one."""
        count = {"two-thirds": -(-2 * len(self.vals) // 3), "all": len(self.vals), "all-but-one": len(self.vals) - 1}[share]
        for v in self.vals[:count]:
            self._receipt(self.queue_kinds[k % len(self.queue_kinds)], v, VALIDATOR)
            self._receipt(self.rejects[k % len(self.rejects)], v, VALIDATOR)

    @precondition(lambda self: self.sent)
    @rule(i=st.integers(0, 1000), at=st.sampled_from([None, None, 5]))
    def duplicate(self, i, at):
        """A receipt delivered again (Kafka redelivers), optionally with a Kafka timestamp."""
        obj = self.sent[i % len(self.sent)]
        self.send({"type": "ConsumeReceipt", "receipt": obj, "at": None if at is None else self.time + at})

    @rule(kind=st.sampled_from(["Finalised", "AcceptedByQueueX"]))
    def unknown_kind(self, kind):
        self.time += 50
        self.send({"type": "ConsumeReceipt", "receipt": {"kind": kind, "message_id": msg_id(MESSAGE), "timestamp": self.time,
                                                          "source_id": self.vals[0], "signature": ""}, "at": None})

    @rule(offset=st.sampled_from([-1, 0, 1, 10_000, -10_000_000]))
    def query(self, offset):
        """The outcome now: before, at and after the horizon (lost when nothing final came)."""
        first = self.sent[0]["timestamp"] if self.sent and self.sent[0]["timestamp"] else self.start
        self.send({"type": "Query", "now": first + self.horizon + offset})
