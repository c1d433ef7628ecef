"""Several events in one request (the process form's ``events``): a generated scenario is judged
exactly as with one event per request — the same events, the same first failing step, the same
rules and the same choice sequence for the shrinkers — with far fewer round trips; an
implementation's failure inside a request is reported at its own step; the codec's memory of
well-formed ids and blocks never lets a malformed one through."""

from __future__ import annotations

import sys
import textwrap

import pytest

from rmkit.protocols.remp import adapterwire as codec
from rmkit.conformance.remp.driven.adapters import InProcessImplementation, ProcessImplementation
from rmkit.conformance.remp.driven.draws import RandomChoices
from rmkit.conformance.remp.driven.generate import WORLDS, play
from rmkit.conformance.remp.driven.machine import Trace, bind
from rmkit.conformance.remp.driven.names import block, default_params, msg_id

PY = sys.executable
STEPS = 40


def _play(role: str, profile: str, impl, seed: int):
    world = bind(WORLDS[role], role, profile, default_params(role, profile), impl, Trace())
    choices = RandomChoices(seed)
    return play(world, choices, STEPS), choices


def _same_runs(role, profile, inproc, proc, seeds):
    """Play ``seeds`` against both forms; they must agree on everything. Returns the steps played."""
    steps = 0
    for seed in seeds:
        (a, ca), (b, cb) = _play(role, profile, inproc, seed), _play(role, profile, proc, seed)
        assert (b.events, b.failure, b.rules, b.kit_error) == (a.events, a.failure, a.rules, a.kit_error), seed
        assert (cb.made, cb.steps) == (ca.made, ca.steps), seed  # what the shrinkers start from
        steps += len(a.events)
    return steps


@pytest.mark.parametrize("name,role,profile,seeds", [
    ("rmkit.reference_impl.remp.adapter", "validator", "spec", range(12)),
    ("rmkit.reference_impl.remp.adapter", "fullnode", "ever-node", range(12)),
    ("rmkit.reference_impl.remp.adapter", "consumer", "spec", range(12)),
    ("rmkit.conformance.remp.examples.forgets_at_switch", "validator", "spec", range(12)),
    ("rmkit.conformance.remp.examples.no_forwarding", "validator", "ever-node", range(6)),
    ("rmkit.conformance.remp.examples.optimised_validator", "validator", "ever-node", range(12)),
    ("rmkit.conformance.remp.examples.ignores_next_set", "fullnode", "spec", range(12)),
    ("rmkit.conformance.remp.examples.early_reject", "consumer", "spec", range(12)),
])
def test_batched_requests_judge_as_one_event_per_request(name, role, profile, seeds):
    inproc = InProcessImplementation(f"{name}:factory", role)
    if name.startswith("rmkit.conformance.remp.examples."):
        cmd = f"{PY} -m rmkit.conformance.remp.examples {name.rsplit('.', 1)[1]} ROLE"
    else:
        cmd = f"{PY} -m {name} ROLE"
    proc = ProcessImplementation(cmd, role, 60)
    try:
        steps = _same_runs(role, profile, inproc, proc, seeds)
    finally:
        proc.close()
    assert proc.batch  # the reference's loop (which the examples use) declares it
    # hello and bye per scenario, and far fewer requests than events
    assert proc.requests < 2 * len(seeds) + steps / 3, (proc.requests, steps)


FAKE = """
    import os, sys
    from rmkit.reference_impl.remp.adapter import ReferenceAdapter, serve

    class Faulty(ReferenceAdapter):
        '''The reference, misbehaving at the K-th event of each scenario.'''

        hellos = 0

        def hello(self, params):
            self.n = 0
            Faulty.hellos += 1
            if os.environ["FAKE_MODE"] == "badhello" and Faulty.hellos == 2:
                return {"type": "not-ready"}
            return super().hello(params)

        def step(self, event):
            self.n += 1
            if self.n == int(os.environ["FAKE_AT"]):
                mode = os.environ["FAKE_MODE"]
                if mode == "crash":
                    sys.stdout.flush()
                    os._exit(3)
                if mode == "error":
                    raise RuntimeError("cannot take it")
                return []  # "wrong": outputs the judge does not allow
            return super().step(event)

    def factory(role):
        return Faulty(role)

    if __name__ == "__main__":
        sys.exit(serve(Faulty(sys.argv[1])))
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    (tmp_path / "batchfake.py").write_text(textwrap.dedent(FAKE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + ":" + ":".join(sys.path))
    return f"{PY} {tmp_path / 'batchfake.py'} ROLE"


@pytest.mark.parametrize("mode,kind", [("wrong", None), ("error", "error"), ("crash", "crash")])
def test_a_failure_inside_a_request_is_reported_at_its_step(fake, monkeypatch, mode, kind):
    monkeypatch.setenv("FAKE_AT", "6")
    monkeypatch.setenv("FAKE_MODE", mode)
    proc = ProcessImplementation(fake, "consumer", 10)
    try:
        b, cb = _play("consumer", "spec", proc, 0)
        assert proc.batch and proc.requests <= 3  # hello, then the six events in one request
        assert len(b.events) == 6 and b.failure is not None
        if kind is None:  # a step not allowed: exactly as in-process
            a, ca = _play("consumer", "spec", InProcessImplementation("batchfake:factory", "consumer"), 0)
            assert (b.events, b.failure, b.rules, cb.made) == (a.events, a.failure, a.rules, ca.made)
            assert b.failure.startswith("step 6:")
        else:
            assert f"{kind} at step 6" in b.failure
            # the next scenario starts afresh: the process is restarted (after a crash, or stopped
            # with the rest of its request unread), so it reads the new setting
            monkeypatch.setenv("FAKE_AT", "1000")
            c, _ = _play("consumer", "spec", proc, 1)
            assert c.failure is None, c.failure
    finally:
        proc.close()


def test_an_implementation_without_batch_gets_one_event_per_request(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(textwrap.dedent("""
        import sys, json
        from rmkit.reference_impl.remp.adapter import ReferenceAdapter
        a = ReferenceAdapter(sys.argv[1])
        for line in sys.stdin:
            msg = json.loads(line)
            t = msg["type"]
            if t == "hello":
                a.hello(dict(msg["params"], profile=msg["profile"])); out = {"type": "ready"}
            elif t == "event":
                out = {"type": "outputs", "seq": msg["seq"], "outputs": a.step(msg["event"])}
            elif t == "bye":
                out = {"type": "bye"}
            else:
                out = {"type": "error", "message": "unknown request " + t}
            print(json.dumps(out), flush=True)
    """))
    proc = ProcessImplementation(f"{PY} {script} ROLE", "consumer", 10)
    try:
        p, _ = _play("consumer", "spec", proc, 0)
    finally:
        proc.close()
    assert p.failure is None and not proc.batch
    assert proc.requests == len(p.events) + 2


def test_codec_memory_of_well_formed_values_lets_no_malformed_one_through():
    good = {"type": "CatchainRecord", "sender": "v2", "msg_id": msg_id("m1"), "session": 0, "kind": "accept",
            "time": 5, "uid": None, "origin_session": None, "block": block(1), "error": None, "status": None}
    first = codec.from_json(good, part="events")
    assert codec.from_json(dict(good), part="events") == first
    b = block(1)
    for bad, where in [(dict(b, wc=True), "block.wc"), (dict(b, seqno=1.0), "block.seqno"),
                       (dict(b, root_hash=[1]), "block.root_hash"), (dict(b, root_hash=b["root_hash"].upper()), "block.root_hash")]:
        with pytest.raises(codec.WireError, match=rf"CatchainRecord\.{where}"):
            codec.from_json(dict(good, block=bad), part="events")
    ignored = {"type": "ShardBlockIgnored", "block": b, "msg_ids": [msg_id("m1")], "time": 5, "superseded": False}
    assert codec.from_json(ignored, part="events").block == first.block
    with pytest.raises(codec.WireError, match=r"ShardBlockIgnored\.block: missing"):
        codec.from_json({k: v for k, v in ignored.items() if k != "block"}, part="events")
    with pytest.raises(codec.WireError, match=r"ShardBlockIgnored\.block: expected"):
        codec.from_json(dict(ignored, block=None), part="events")
    with pytest.raises(codec.WireError, match=r"msg_id: expected an id"):
        codec.from_json(dict(good, msg_id=msg_id("m1").upper()), part="events")


def test_a_hello_answered_wrongly_is_step_0_though_its_answer_is_read_with_the_first_request(fake, monkeypatch):
    """After the first scenario the kit sends the hello without waiting; the second hello's wrong
    answer is still reported as the hello's, with no event in the scenario and no choice kept."""
    monkeypatch.setenv("FAKE_AT", "1000")
    monkeypatch.setenv("FAKE_MODE", "badhello")
    proc = ProcessImplementation(fake, "validator", 10)
    try:
        a, _ = _play("validator", "spec", proc, 0)
        assert a.failure is None and proc.batch
        b, cb = _play("validator", "spec", proc, 1)
    finally:
        proc.close()
    assert b.failure.startswith("wrong-answer at step 0") and b.events == [] and cb.made == []
