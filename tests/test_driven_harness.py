"""The harness of REMP driven conformance (`rmkit conform`, `rmkit replay`, the pytest plugin): what
it reports of an implementation that misbehaves, and under which exit code.

The contract: exit 2 (no verdict) only when nothing got past the hello; a crash, a timeout or
malformed output after it is the implementation's failure (exit 1), never the kit's.
"""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest

from rmkit.cli import main
from rmkit.conformance.remp.driven.catalogue import catalogue
from rmkit.reference_impl.remp.adapter import ReferenceAdapter

PY = sys.executable
REFERENCE = "rmkit.reference_impl.remp.adapter:factory"
HERE = "test_driven_harness"  # this module, importable by name (pytest puts tests/ on the path)


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def _scenario(tmp_path, index: int = 0) -> str:
    from rmkit.conformance.remp.driven.scenario import write_scenario

    return str(write_scenario(tmp_path / "sc.jsonl", catalogue("spec", ["validator"])[index]))


def _script(tmp_path, body: str) -> str:
    script = tmp_path / "adapter.py"
    script.write_text("import sys, json, os, time\n" + body)
    return f"{PY} {script}"


def _replay(capsys, tmp_path, *impl, timeout: float = 10):
    return run(capsys, "replay", _scenario(tmp_path), *impl, "--timeout", str(timeout))


# -- replay: nothing past the hello is no verdict -------------------------------------------------
class _HelloRaises(ReferenceAdapter):
    def hello(self, params):
        raise RuntimeError("cannot configure")


class _HelloNone(ReferenceAdapter):
    def hello(self, params):
        super().hello(params)
        return None


class _HelloList(ReferenceAdapter):
    def hello(self, params):
        super().hello(params)
        return [1]


@pytest.mark.parametrize("impl", [
    ["--impl-cmd", "true"],  # exits at once
    ["--impl-cmd", f"{PY} -c 'import time; time.sleep(60)'"],  # hangs at the hello
    ["--impl-cmd", f"{PY} -c 'import sys; print(\"garbage\", flush=True); sys.stdin.read()'"],  # garbage at the hello
    ["--impl", f"{HERE}:_HelloRaises"],
])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_replay_of_an_implementation_that_never_gets_past_the_hello_is_no_verdict(capsys, tmp_path, impl, fmt):
    code, out, err = _replay(capsys, tmp_path, *impl, "--format", fmt, timeout=1)  # a slow start fails at the hello too
    assert code == 2, (out, err)
    assert "could not be driven" in err and "no verdict" in err and "Traceback" not in err
    if fmt == "json":
        assert orjson.loads(out)["failure"]["step"] == 0


class _CrashesAtStep2(ReferenceAdapter):
    n = 0

    def step(self, event):
        self.n += 1
        if self.n == 2:
            raise RuntimeError("lost its state")
        return super().step(event)


@pytest.mark.parametrize("impl", [
    ["--impl", f"{HERE}:_CrashesAtStep2"],
    ["--impl-cmd", f"{PY} -c 'from rmkit.reference_impl.remp.adapter import ReferenceAdapter, serve\n"
                   "class A(ReferenceAdapter):\n"
                   "    n = 0\n"
                   "    def step(self, e):\n"
                   "        self.n += 1\n"
                   "        if self.n == 2:\n"
                   "            import os; os._exit(7)\n"
                   "        return super().step(e)\n"
                   "serve(A(\"validator\"))'"],
])
def test_replay_of_an_implementation_that_fails_after_the_hello_is_a_failure(capsys, tmp_path, impl):
    code, out, err = _replay(capsys, tmp_path, *impl)
    assert code == 1, (out, err)
    assert "at step 2" in out and "could not be driven" not in err


# -- the in-process hello must answer ready, as the process's does ---------------------------------
@pytest.mark.parametrize("impl", ["_HelloNone", "_HelloList"])
def test_an_in_process_hello_that_does_not_answer_ready_is_the_hellos_failure(capsys, tmp_path, impl):
    code, out, err = _replay(capsys, tmp_path, "--impl", f"{HERE}:{impl}")
    assert code == 2 and "wrong-answer at step 0" in out and '{"type": "ready"}' in out, (out, err)
    code, out, err = run(capsys, "conform", "--role", "validator", "--impl", f"{HERE}:{impl}", "--catalogue-only",
                         "--regressions", str(tmp_path / "regs"))
    assert code == 2 and "could not be driven as validator" in err, (out, err)


def test_the_reference_in_process_passes_its_hello(capsys, tmp_path):
    code, out, err = _replay(capsys, tmp_path, "--impl", REFERENCE)
    assert code == 0, (out, err)


# -- the in-process size limit holds for any answer -------------------------------------------------
class _OneHugeReceipt(ReferenceAdapter):
    """One output, its receipt's error text 5 MiB long: an answer over the size limit."""

    def step(self, event):
        out = super().step(event)
        for o in out:
            if o["type"] == "Receipt":
                o["receipt"]["error"] = "x" * (5 << 20)
        return out


def test_an_in_process_answer_of_few_outputs_over_the_size_limit_is_oversized(capsys, tmp_path):
    code, out, err = _replay(capsys, tmp_path, "--impl", f"{HERE}:_OneHugeReceipt")
    assert code == 1 and "oversized at step 2" in out, (out, err)  # its first receipt


# -- an out-of-range integer is the implementation's malformed output, not the kit's error ---------
def _rewriting(change):
    class Rewrites(ReferenceAdapter):
        def step(self, event):
            out = super().step(event)
            for o in out:
                change(o)
            return out
    return Rewrites


def _receipt_time(o):
    if o["type"] == "Receipt":
        o["receipt"]["time"] = 10 ** 30


def _sent_to(o):
    if o["type"] == "Receipt":
        o["receipt"]["sent_to"] = -(2 ** 70)


def _shard(o):
    if o["type"] == "Receipt" and o["receipt"].get("block"):
        o["receipt"]["block"]["shard"] = 2 ** 64


def _object(o):
    if o["type"] == "Receipt":
        o["receipt"]["extra"] = object()  # not a field: no decoding looks at it, yet it is no JSON


_BigTime, _BigSentTo, _BigShard, _NotJson = (_rewriting(f) for f in (_receipt_time, _sent_to, _shard, _object))


@pytest.mark.parametrize("impl, says", [
    ("_BigTime", "receipt.time: expected an integer of at most 64 bits"),
    ("_BigSentTo", "receipt.sent_to: expected an integer of at most 64 bits"),
    ("_NotJson", "not JSON"),
])
def test_an_in_process_value_json_cannot_carry_is_malformed(capsys, tmp_path, impl, says):
    code, out, err = _replay(capsys, tmp_path, "--impl", f"{HERE}:{impl}")
    assert code == 1 and "malformed at step" in out and says in out, (out, err)
    assert "internal error" not in err


def test_a_block_with_an_out_of_range_shard_is_malformed(capsys, tmp_path):
    # CAT-VAL-003 reports blocks in its receipts
    from rmkit.conformance.remp.driven.scenario import write_scenario

    sc = next(s for s in catalogue("spec", ["validator"]) if s.id == "CAT-VAL-003")
    path = write_scenario(tmp_path / "blk.jsonl", sc)
    code, out, err = run(capsys, "replay", str(path), "--impl", f"{HERE}:_BigShard")
    assert code == 1 and "block.shard: expected an integer of at most 64 bits" in out, (out, err)


def test_the_codec_takes_the_64_bit_range_and_nothing_beyond():
    from rmkit.conformance.remp.driven.codec import WireError, from_json

    def tick(t):
        return from_json({"type": "Tick", "time": t}, part="events")

    for ok in (0, -(2 ** 63), 2 ** 64 - 1):
        assert tick(ok).time == ok
    for bad in (2 ** 64, -(2 ** 63) - 1, 10 ** 30):
        with pytest.raises(WireError, match=r"Tick\.time: expected an integer of at most 64 bits"):
            tick(bad)


# -- a process that exits at once: what it printed is quoted -----------------------------------------
def test_a_process_that_printed_and_exited_before_the_hello_is_quoted():
    """The hello cannot be written (the process is gone): the report still shows what it printed."""
    from rmkit.conformance.remp.driven.adapters import ImplementationFailure, ProcessImplementation, hello_message

    impl = ProcessImplementation("sh -c 'echo usage: adapter ROLE'", "validator", 2.0)
    impl._spawn()
    impl.proc.wait()
    with pytest.raises(ImplementationFailure) as failure:
        impl._send(hello_message("validator", "spec", {}), 0)
    assert failure.value.kind == "crash" and b"usage: adapter validator" in failure.value.received
    assert "closed its input" in str(failure.value) and "usage: adapter validator" in str(failure.value)


def test_a_process_that_prints_and_exits_is_reported_with_what_it_printed(capsys, tmp_path):
    code, out, err = _replay(capsys, tmp_path, "--impl-cmd", "sh -c 'echo usage: adapter ROLE'")
    assert code == 2 and "at step 0" in out and "usage: adapter validator" in out, (out, err)
