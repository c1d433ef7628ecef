"""The TLC wrapper on tiny toy specs (not the REMP model): verdicts, parsed traces, errors with
where and what to do, a clean spec folder, the TLA+ value parser, the manifest and ``rmkit tlc``.

TLC starts in about a second, so each toy spec runs once per module (module-scoped fixtures)
and the rarer outputs (Assert in an action, out of memory, bad cfg) are replayed from recorded
TLC 2.15 output through the same interpreter.
"""

import json
import re
import shutil
import textwrap

import pytest

from rmkit.cli import main
from rmkit.errors import SpecError, UsageError
from rmkit.tlc import run_tlc
from rmkit.tlc.interpret import parse_output
from rmkit.tlc.manifest import compare, load_manifest, result_name
from rmkit.tlc.render import render_result
from rmkit.tlc.values import (
    ModelValue, TlaFunction, TlaParseError, TlaRecord, TlaSeq, TlaSet, TlaText, format_value, parse_state, parse_value,
)

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="TLC needs java")

SPECS = {
    # 4 x 3 states, every state has a successor: no deadlock, nothing violated.
    "Counter": ("""
        EXTENDS Naturals
        VARIABLES x, y
        Init == x = 0 /\\ y = 0
        Next == \\/ x' = (x + 1) % 4 /\\ UNCHANGED y
                \\/ y' = (y + 1) % 3 /\\ UNCHANGED x
        Inv == x < 4
        """, "INIT Init\nNEXT Next\nINVARIANT Inv\n"),
    # Every kind of value in one trace: records, functions over model values, sequences, sets, strings.
    "Values": ("""
        EXTENDS Integers, Sequences, TLC
        CONSTANTS A, B
        VARIABLES x, r, s, f, q
        Init == /\\ x = 0
                /\\ r = [a |-> 1, b |-> "say \\"hi\\" |-> <<1>>"]
                /\\ s = {}
                /\\ f = (A :> 1 @@ B :> -2)
                /\\ q = <<>>
        Inc == /\\ x < 5
               /\\ x' = x + 1
               /\\ r' = [r EXCEPT !.a = @ + 1]
               /\\ s' = s \\cup {x}
               /\\ f' = [f EXCEPT ![A] = [k |-> x, t |-> <<x, "s">>]]
               /\\ q' = Append(q, <<x, "s">>)
        Next == Inc
        Small == x < 2
        """, "CONSTANTS A = A\nB = B\nINIT Init\nNEXT Next\nINVARIANT Small\n"),
    "Dead": ("""
        EXTENDS Naturals
        VARIABLES x
        Init == x = 0
        Next == x < 2 /\\ x' = x + 1
        """, "INIT Init\nNEXT Next\n"),
    # x cycles 0 -> 1 -> 2 -> 0 under weak fairness, so <>[](x = 1) fails on a lasso.
    "Live": ("""
        EXTENDS Naturals
        VARIABLES x
        Init == x = 0
        Next == x' = (x + 1) % 3
        Spec == Init /\\ [][Next]_x /\\ WF_x(Next)
        Settles == <>[](x = 1)
        """, "SPECIFICATION Spec\nPROPERTY Settles\n"),
    "Broken": ("""
        EXTENDS Naturals
        VARIABLES x
        Init == x = 0
        Next == x' = (x + 1
        Other == 3
        """, "INIT Init\nNEXT Next\n"),
    "Undefined": ("""
        EXTENDS Naturals
        VARIABLES x
        Init == x = 0
        Next == x' = Frobnicate(x)
        """, "INIT Init\nNEXT Next\n"),
    # Init holds in no state: every property holds vacuously, and nothing is checked.
    "Empty": ("""
        EXTENDS Naturals
        VARIABLES x
        Init == x = 0 /\\ x > 0
        Next == x' = x + 1
        Inv == x < 0
        """, "INIT Init\nNEXT Next\nINVARIANT Inv\n"),
    "Walk": ("""
        EXTENDS Naturals
        VARIABLES x, y
        Init == x = 0 /\\ y = 0
        Next == \\/ x' = x + 1 /\\ UNCHANGED y
                \\/ y' = y + 1 /\\ UNCHANGED x
        Near == x + y < 4
        """, "INIT Init\nNEXT Next\nINVARIANT Near\n"),
}


def write_spec(folder, name):
    body, cfg = SPECS[name]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.tla").write_text(f"---- MODULE {name} ----\n{textwrap.dedent(body).strip()}\n====\n")
    (folder / f"{name}.cfg").write_text(cfg)
    return folder


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("specs")
    for name in SPECS:
        write_spec(folder, name)
    return folder


@pytest.fixture(scope="module")
def runs(specs):
    """Each toy spec checked once; the folder's listing before and after."""
    before = sorted(p.name for p in specs.rglob("*"))
    out = {
        "pass": run_tlc(specs, "Counter"),  # one worker: with several, TLC's reported depth may vary
        "values": run_tlc(specs, "Values"),
        "deadlock": run_tlc(specs, "Dead"),
        "no-deadlock-check": run_tlc(specs, "Dead", deadlock_check=False),
        "liveness": run_tlc(specs, "Live"),
        "parse": run_tlc(specs, "Broken"),
        "semantic": run_tlc(specs, "Undefined"),
        "simulate": run_tlc(specs, "Walk", simulate_depth=20, seed=7),
        "empty": run_tlc(specs, "Empty"),
        "empty-simulate": run_tlc(specs, "Empty", simulate_depth=5, timeout=30),
        # stopped long before the JVM has started: TLC never computed an initial state
        "simulate-cut": run_tlc(specs, "Counter", simulate_depth=5, timeout=0.05),
        "simulate-continue": run_tlc(specs, "Walk", simulate_depth=8, seed=3, continue_after_violation=True,
                                     max_traces=3, timeout=30),
    }
    out["listing"] = (before, sorted(p.name for p in specs.rglob("*")))
    return out


# -- verdicts from real TLC runs -----------------------------------------------------------------
def test_pass_reports_exact_state_counts(runs):
    r = runs["pass"]
    assert r.verdict == "pass" and r.error is None and not r.counterexamples
    assert (r.distinct_states, r.total_states, r.depth) == (12, 25, 6)
    assert r.complete and r.stopped is None and r.exit_code == 0
    assert r.tlc_version.startswith("TLC2 Version") and r.seconds > 0
    assert r.command[r.command.index("-workers") + 1] == "1"


def test_command_line_uses_only_tlc_2_15_flags(tmp_path):
    from rmkit.tlc.runner import build_command

    cmd = build_command("java", tmp_path / "t.jar", "M", "M.cfg", tmp_path / "meta", workers=4, simulate_depth=9, seed=5,
                        continue_after_violation=True, deadlock_check=False, java_opts=["-Xmx1g"])
    tlc = cmd[cmd.index("tlc2.TLC") + 1:]
    assert tlc == ["-tool", "-workers", "4", "-metadir", str(tmp_path / "meta"), "-config", "M.cfg", "-deadlock",
                   "-simulate", "-depth", "9", "-seed", "5", "-continue", "M"]
    assert "-Xmx1g" in cmd[:cmd.index("tlc2.TLC")] and "-XX:+UseParallelGC" in cmd


def test_invariant_violation_has_a_parsed_trace(runs):
    r = runs["values"]
    assert (r.verdict, r.kind, r.name) == ("violation", "invariant", "Small")
    assert [s.index for s in r.trace] == [1, 2, 3]
    first, _, last = r.trace
    assert first.action == "Initial predicate" and first.module is None
    assert (last.action, last.module, last.line) == ("Inc", "Values", 10)
    assert first.values == {"f": {"A": 1, "B": -2}, "q": [], "r": {"a": 1, "b": 'say "hi" |-> <<1>>'}, "s": [], "x": 0}
    assert isinstance(first.values["f"], TlaFunction) and isinstance(first.values["r"], TlaRecord)
    assert isinstance(first.values["s"], TlaSet) and isinstance(first.values["q"], TlaSeq)
    assert all(isinstance(k, ModelValue) for k in first.values["f"])
    assert last.values["f"] == {"A": {"k": 1, "t": [1, "s"]}, "B": -2}
    assert last.values["q"] == [[0, "s"], [1, "s"]] and last.values["s"] == [0, 1]
    assert last.values["r"]["a"] == 3 and last.values["x"] == 2
    doc = json.loads(r.to_json())
    assert doc["verdict"] == "violation" and doc["counterexamples"][0]["trace"][2]["values"]["f"]["A"]["k"] == 1
    assert "output" not in doc


def test_text_rendering_shows_only_what_changed(runs):
    text = render_result(runs["values"])
    assert "VIOLATION (invariant Small)" in text
    assert "state 1  <Initial predicate>" in text and "state 3  <Inc>  Values.tla:10" in text
    assert '/\\ r = [a |-> 1, b |-> "say \\"hi\\" |-> <<1>>"]' in text  # first state in full
    assert "/\\ r.a = 3" in text and "/\\ f[A] = [k |-> 1, t |-> <<1, \"s\">>]" in text  # then only the changes
    assert text.count("/\\ r = ") == 1


def test_deadlock_is_a_violation_unless_checking_is_off(runs):
    r = runs["deadlock"]
    assert (r.verdict, r.kind, r.name) == ("violation", "deadlock", None)
    assert [s.values["x"] for s in r.trace] == [0, 1, 2]
    off = runs["no-deadlock-check"]
    assert off.verdict == "pass" and off.distinct_states == 3 and "-deadlock" in off.command


def test_liveness_violation_is_a_lasso(runs):
    r = runs["liveness"]
    assert (r.verdict, r.kind, r.name) == ("violation", "property", "Settles")
    ce = r.counterexamples[0]
    assert [s.values["x"] for s in ce.states] == [0, 1, 2]
    assert ce.lasso == 1 and not ce.stutters
    loop = ce.trace[-1]
    assert (loop.marker, loop.back_to, loop.action, loop.module) == ("back-to", 1, "Next", "Live")
    assert result_name(r) == "liveness failure"
    assert "back to state 1" in render_result(r)


def test_parse_error_names_module_and_line(runs):
    r = runs["parse"]
    assert r.verdict == "error" and r.error.kind == "parse"
    assert (r.error.module, r.error.line, r.error.column) == ("Broken", 6, 1)
    assert "Encountered" in r.error.message and r.error.advice
    assert "Broken.tla:6:1" in render_result(r)


def test_semantic_error_names_the_undefined_operator(runs):
    r = runs["semantic"]
    assert r.verdict == "error" and r.error.kind == "semantic"
    assert (r.error.module, r.error.line) == ("Undefined", 5)
    assert "Frobnicate" in r.error.message


def test_no_files_are_left_in_the_spec_folder(runs):
    before, after = runs["listing"]
    assert before == after and "states" not in after


def test_simulation_finds_the_violation_with_a_trace(runs):
    r = runs["simulate"]
    assert r.mode == "simulate" and r.seed == 7
    assert (r.verdict, r.kind, r.name) == ("violation", "invariant", "Near")
    xs = [(s.values["x"], s.values["y"]) for s in r.trace]
    assert xs[0] == (0, 0) and sum(xs[-1]) == 4 and len(xs) == 5


def test_simulation_with_continue_keeps_several_traces(runs):
    r = runs["simulate-continue"]
    assert r.verdict == "violation" and len(r.counterexamples) == 3 and r.stopped == "max-traces"
    assert all(sum(t[-1].values.values()) == 4 for t in r.traces)


def test_a_model_with_no_initial_state_is_an_error_not_a_pass(runs):
    for name in ("empty", "empty-simulate"):
        r = runs[name]
        assert r.verdict == "error" and not r.counterexamples, name
        assert "initial state" in r.error.message, (name, r.error.message)
    assert runs["empty"].error.advice.startswith("check Init")


def test_a_simulation_stopped_before_its_first_state_checked_nothing(runs):
    r = runs["simulate-cut"]
    assert r.stopped == "timeout" and r.verdict == "error" and r.error.kind == "timeout"
    assert "nothing was checked" in r.error.message


# -- errors before TLC starts --------------------------------------------------------------------
def test_java_missing_says_how_to_install_it(specs, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    r = run_tlc(specs, "Counter")
    assert r.verdict == "error" and r.error.kind == "java-missing"
    assert "apt-get install openjdk-17-jre-headless" in r.error.advice
    monkeypatch.undo()
    r = run_tlc(specs, "Counter", java=tmp_path / "no-java")
    assert r.error.kind == "java-missing" and "no-java" in r.error.message


def test_jar_override_that_does_not_exist_is_a_clear_error(specs, tmp_path, monkeypatch):
    monkeypatch.setenv("RMKIT_TLA2TOOLS", str(tmp_path / "tla2tools.jar"))
    r = run_tlc(specs, "Counter")
    assert r.verdict == "error" and r.error.kind == "jar-missing"
    assert "RMKIT_TLA2TOOLS" in r.error.message and "tla2tools.jar" in r.error.message
    assert "RMKIT_TLA2TOOLS" in render_result(r)


def test_missing_module_or_cfg(specs):
    r = run_tlc(specs, "Nope")
    assert r.error.kind == "spec-missing" and "Nope.tla" in r.error.message
    r = run_tlc(specs, "Counter", "Other.cfg")
    assert r.error.kind == "spec-missing" and "Other.cfg" in r.error.message
    with pytest.raises(ValueError, match="simulation"):
        run_tlc(specs, "Counter", seed=3)


# -- recorded TLC 2.15 output --------------------------------------------------------------------
def tool(code, severity, *lines):
    return [f"@!@!@STARTMSG {code}:{severity} @!@!@", *lines, f"@!@!@ENDMSG {code} @!@!@"]


def test_assert_in_an_action_is_an_assertion_violation():
    out = "\n".join(tool(2262, 0, "TLC2 Version 2.15") + [
        "@!@!@STARTMSG 1000:1 @!@!@", "TLC threw an unexpected exception.", "The exception was a tlc2.tool.EvalException",
        ": @!@!@STARTMSG 2132:0 @!@!@", "The first argument of Assert evaluated to FALSE; the second argument was:",
        '"x hit two"', "@!@!@ENDMSG 2132 @!@!@", "@!@!@ENDMSG 1000 @!@!@"]
        + tool(2103, 1, "The error occurred when TLC was evaluating the nested", "expressions at the following positions:",
               "0. Line 5, column 9 to line 5, column 58 in Asrt"))
    r = parse_output(out, exit_code=75)
    assert (r.verdict, r.kind) == ("violation", "assertion")
    ce = r.counterexamples[0]
    assert '"x hit two"' in ce.message and (ce.module, ce.line) == ("Asrt", 5) and ce.trace == []


def test_invariant_violated_by_the_initial_state_carries_the_state():
    out = "\n".join(tool(2107, 1, "Invariant Inv is violated by the initial state:", "/\\ a = [a |-> 1]",
                         "/\\ k = << >>", ""))
    r = parse_output(out, cfg_text="INVARIANT Inv", exit_code=12)
    assert (r.verdict, r.kind, r.name) == ("violation", "invariant", "Inv")
    assert r.trace[0].values == {"a": {"a": 1}, "k": []}


def test_stuttering_counterexample_and_property_named_from_cfg():
    out = "\n".join(tool(2116, 1, "Temporal properties were violated.") + tool(2264, 1, "The following behavior ...")
                    + tool(2217, 4, "1: <Initial predicate>", "x = 0", "") + tool(2218, 4, "2: Stuttering"))
    r = parse_output(out, cfg_text="SPECIFICATION Spec\nPROPERTY Eventually\n", exit_code=13)
    assert (r.kind, r.name) == ("property", "Eventually") and r.counterexamples[0].stutters
    assert r.trace[1].marker == "stuttering" and result_name(r) == "liveness failure"


def test_out_of_memory_is_an_error_with_advice():
    out = "\n".join(tool(1000, 1, "Java heap space") + tool(2147, 1, "TLC was unable to fingerprint.",
                    "0) line 4, col 13 to line 4, col 36 of module Oom", "Reason:", "Java heap space"))
    r = parse_output(out, exit_code=75)
    assert r.verdict == "error" and r.error.kind == "out-of-memory" and "-Xmx" in r.error.advice
    assert (r.error.module, r.error.line) == ("Oom", 4)
    r = parse_output('Exception in thread "main" java.lang.OutOfMemoryError: GC overhead limit exceeded', exit_code=1)
    assert r.error.kind == "out-of-memory"


def test_out_of_memory_reported_by_tlc_itself_is_an_error_with_advice():
    for code, where in ((1001, ""), (1002, " while computing the initial states"), (1003, " while checking liveness")):
        out = "\n".join(tool(2262, 0, "TLC2 Version 2.15") + tool(code, 1, "Java ran out of memory.  Running Java "
                                                                      "with a larger memory allocation pool (heap) may fix this."))
        r = parse_output(out, exit_code=255)
        assert (r.verdict, r.error.kind) == ("error", "out-of-memory") and "-Xmx" in r.error.advice
        assert r.error.message == f"TLC ran out of memory{where} (TLC message {code})"


def test_cfg_keyword_unknown_to_tlc_2_15_gets_a_hint_when_read_as_an_invariant(specs, tmp_path):
    """After INVARIANT, TLC 2.15 reads CHECK_DEADLOCK as one more invariant's name and says it is
    not defined: the hint must come with that error too."""
    folder = write_spec(tmp_path, "Counter")
    (folder / "Counter.cfg").write_text("INIT Init\nNEXT Next\nINVARIANT Inv\nCHECK_DEADLOCK FALSE\n")
    r = run_tlc(folder, "Counter")
    assert r.verdict == "error" and r.error.kind == "config" and "CHECK_DEADLOCK" in r.error.message
    assert r.error.advice and "-deadlock" in r.error.advice


def test_cfg_keyword_unknown_to_tlc_2_15_gets_a_hint():
    out = "\n".join(["@!@!@STARTMSG 1000:1 @!@!@", "The exception was a tlc2.tool.ConfigFileException",
                     ": @!@!@STARTMSG 5006:0 @!@!@", "TLC found an error in the configuration file at line 3",
                     "It was expecting a keyword, but did not find it.", "@!@!@ENDMSG 5006 @!@!@", "@!@!@ENDMSG 1000 @!@!@"])
    r = parse_output(out, config="M.cfg", cfg_text="INIT Init\nNEXT Next\nCHECK_DEADLOCK FALSE\n", exit_code=255)
    assert r.error.kind == "config" and r.error.line == 3 and "-deadlock" in r.error.advice


def test_continue_exit_code_0_still_reports_the_violations():
    out = "\n".join(tool(2110, 1, "Invariant Inv2 is violated.") + tool(2217, 4, "1: <Initial predicate>", "x = 0")
                    + tool(2110, 1, "Invariant Inv is violated.") + tool(2217, 4, "1: <Initial predicate>", "x = 1")
                    + tool(2193, 0, "Model checking completed. No error has been found.")
                    + tool(2199, 0, "26 states generated, 16 distinct states found, 0 states left on queue."))
    r = parse_output(out, exit_code=0)
    assert r.verdict == "violation" and [c.name for c in r.counterexamples] == ["Inv2", "Inv"]
    assert (r.total_states, r.distinct_states) == (26, 16)


def test_progress_reports_reach_the_callback():
    from rmkit.tlc.cfgfile import CfgNames
    from rmkit.tlc.interpret import Interpreter
    from rmkit.tlc.messages import MessageReader

    seen = []
    interp = Interpreter(module="M", config="M.cfg", cfg_names=CfgNames(), mode="model-check", progress=seen.append)
    reader = MessageReader()
    for line in tool(2200, 0, "Progress(15) at 2026-01-01 00:47:38: 3,151,214 states generated (3,112,086 s/min), "
                              "767,489 distinct states found (752,573 ds/min), 350,077 states left on queue."):
        for item in reader.feed(line):
            interp.handle(item)
    (u,) = seen
    assert (u.states_found, u.distinct, u.queue, u.rate_per_min, u.depth) == (3151214, 767489, 350077, 3112086, 15)


# -- the TLA+ value parser -----------------------------------------------------------------------
@pytest.mark.parametrize("text, value", [
    ("-7", -7), ("TRUE", True), ("FALSE", False), ("m1", "m1"), ("{}", []), ("<<>>", []), ("<< >>", []),
    ('"a\\"b |-> c\\\\d"', 'a"b |-> c\\d'), ('"tab\\tnl\\n"', "tab\tnl\n"), ("1..3", [1, 2, 3]),
    ("<<1, -2, <<>>>>", [1, -2, []]), ('{"a", "b"}', ["a", "b"]),
    ('[a |-> [b |-> {1}], c |-> "x, y"]', {"a": {"b": [1]}, "c": "x, y"}),
    ("(v1 :> [s |-> \"open\", n |-> -1] @@ v2 :> [s |-> \"done |->\", n |-> 0])",
     {"v1": {"s": "open", "n": -1}, "v2": {"s": "done |->", "n": 0}}),
    ("(0 :> \"z\" @@ 1 :> (A :> <<>>))", {0: "z", 1: {"A": []}}),
    ("(<<1, \"a\">> :> TRUE @@ <<2, \"b\">> :> FALSE)", {'<<1, "a">>': True, '<<2, "b">>': False}),
    ("({1, 2} :> 3)", {"{1, 2}": 3}),
])
def test_parse_value(text, value):
    assert parse_value(text) == value


def test_parsed_values_keep_their_tla_form():
    v = parse_value('[f |-> (m1 :> {<<1, "x">>}), e |-> {}, q |-> <<>>]')
    assert isinstance(v, TlaRecord) and isinstance(v["f"], TlaFunction) and isinstance(v["e"], TlaSet)
    assert isinstance(v["q"], TlaSeq) and isinstance(next(iter(v["f"])), ModelValue)
    assert format_value(v) == '[f |-> (m1 :> {<<1, "x">>}), e |-> {}, q |-> <<>>]'
    key = next(iter(parse_value("(<<1, 2>> :> 0)")))
    assert isinstance(key, TlaText) and key == "<<1, 2>>"
    assert format_value(parse_value('"q\\"uote\\\\"')) == '"q\\"uote\\\\"'


@pytest.mark.parametrize("text", ["[a |-> ]", "<<1, 2", "{1 2}", "(a :> 1 @@ )", "", "1 2"])
def test_parse_value_rejects_broken_text(text):
    with pytest.raises(TlaParseError):
        parse_value(text)


def test_parse_state_multiline_and_unknown_forms():
    state = parse_state('/\\ h = << [n |-> 1],\n   [n |-> 2] >>\n/\\ s = "a /\\\\ b"\n/\\ u = SUBSET {1, 2}\n')
    assert state == {"h": [{"n": 1}, {"n": 2}], "s": "a /\\ b", "u": "SUBSET {1, 2}"}
    assert isinstance(state["u"], TlaText)
    assert parse_state("x = -3\n") == {"x": -3}


# -- manifest and command line -------------------------------------------------------------------
def toy_manifest(root, **figures):
    write_spec(root / "toy", "Counter")
    write_spec(root / "toy", "Dead")
    base = {"workers": 1, "runtime": "00:00:10", "deadlock": True, "slow": False,
            "distinctStates": None, "totalStates": None, "depth": None}
    doc = {"models": [{"name": "toy", "path": "toy", "spec": "Counter.tla", "source": "a test", "configs": [
        {**base, "name": "small", "module": "Counter", "cfg": "Counter.cfg", "result": "success", **figures},
        {**base, "name": "stuck", "module": "Dead", "cfg": "Dead.cfg", "result": "deadlock failure"},
        {**base, "name": "deep", "module": "Counter", "cfg": "Deep.cfg", "result": "success", "slow": True}]}]}
    (root / "manifest.json").write_text(json.dumps(doc))
    return root


def test_manifest_errors_say_where_and_what(tmp_path):
    toy_manifest(tmp_path)
    m = load_manifest(tmp_path)
    assert m.default_model.name == "toy" and m.default_model.default_config.name == "small"
    assert m.default_model.missing_files(m.default_model.config("deep")) == ["Deep.cfg"]
    with pytest.raises(UsageError, match="no config 'huge'; configs: small, stuck, deep"):
        m.default_model.config("huge")
    doc = json.loads((tmp_path / "manifest.json").read_text())
    doc["models"][0]["configs"][1]["workers"] = "auto"
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(SpecError, match=r"models\[0\]\.configs\[1\]\.workers: expected an integer >= 1, found string \"auto\""):
        load_manifest(tmp_path)
    doc["models"][0]["configs"][1]["workers"] = 1
    doc["models"][0]["configs"][0]["distinctstates"] = 3
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(SpecError, match=r"configs\[0\]\.distinctstates: unknown key"):
        load_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text('{"models": [}')
    with pytest.raises(SpecError, match="not valid JSON"):
        load_manifest(tmp_path)


def test_manifest_simulated_config_is_checked(tmp_path):
    toy_manifest(tmp_path)
    doc = json.loads((tmp_path / "manifest.json").read_text())
    doc["models"][0]["configs"][0]["simulate"] = {"depth": 0, "seed": 7, "traces": 5}
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(SpecError, match=r"configs\[0\]\.simulate\.depth: expected an integer >= 1, found 0"):
        load_manifest(tmp_path)
    doc["models"][0]["configs"][0]["simulate"] = {"depth": 9, "seed": 7, "traces": 5}
    doc["models"][0]["configs"][0]["distinctStates"] = 12
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(SpecError, match=r"configs\[0\]\.distinctStates: a simulated config never completes"):
        load_manifest(tmp_path)


def test_cli_runs_a_simulated_config_as_the_manifest_says(tmp_path, monkeypatch, capsys):
    """A config the manifest simulates is simulated (its number of behaviours, depth and seed),
    never searched exhaustively without end, and never stopped by the clock: TLC is given
    ``num=N`` and no timeout, so the run is the same however busy the machine."""
    toy_manifest(tmp_path)
    doc = json.loads((tmp_path / "manifest.json").read_text())
    doc["models"][0]["configs"][0]["simulate"] = {"depth": 9, "seed": 11, "traces": 200}
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    monkeypatch.setenv("RMKIT_TLA_DIR", str(tmp_path))
    assert main(["tlc", "--list"]) == 0
    assert "simulated, not searched: 200 behaviours of depth 9 from seed 11" in capsys.readouterr().out
    code = main(["tlc", "--progress", "none", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["mode"] == "simulate" and doc["seed"] == 11 and doc["verdict"] == "pass"
    assert doc["complete"] is False and doc["stopped"] is None  # (TLC ended it, after its behaviours)
    cmd = doc["command"]
    assert cmd[cmd.index("-simulate") + 1] == "num=200" and cmd[cmd.index("-depth") + 1] == "9"
    assert main(["tlc", "--progress", "none", "--traces", "5", "--config", "stuck"]) == 2
    assert "--traces: applies to a simulation; give --simulate-depth too" in capsys.readouterr().err


def test_shipped_manifest_loads():
    m = load_manifest()
    assert m.models and all(c.workers >= 1 for mod in m.models for c in mod.configs)


def test_compare_with_expected_figures(runs, tmp_path):
    cfg = load_manifest(toy_manifest(tmp_path, distinctStates=12, depth=6)).default_model.default_config
    checks = {e.figure: e.match for e in compare(runs["pass"], cfg)}
    assert checks == {"result": True, "distinctStates": True, "depth": True}
    assert compare(runs["simulate"], cfg) == []


def test_cli_list(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RMKIT_TLA_DIR", str(toy_manifest(tmp_path, distinctStates=12)))
    assert main(["tlc", "--list"]) == 0
    out = capsys.readouterr().out
    assert "toy (default): toy/Counter.tla" in out and "distinct states 12" in out
    assert "missing: Deep.cfg" in out and "slow" in out


def test_cli_reports_a_figure_mismatch_without_failing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RMKIT_TLA_DIR", str(toy_manifest(tmp_path, distinctStates=13, depth=6)))
    code = main(["tlc", "--progress", "none"])
    out, err = capsys.readouterr()
    assert code == 0 and "PASS" in out
    assert re.search(r"expected distinctStates +13: MISMATCH \(found 12\)", out)
    assert re.search(r"expected depth +6: matches", out)
    assert "expected distinctStates 13, found 12" in err
    assert sorted(p.name for p in (tmp_path / "toy").iterdir()) == ["Counter.cfg", "Counter.tla", "Dead.cfg", "Dead.tla"]


def test_cli_violation_exit_1_with_json_and_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RMKIT_TLA_DIR", str(toy_manifest(tmp_path / "tla")))
    out_dir, trace = tmp_path / "out", tmp_path / "cex.json"
    code = main(["tlc", "toy", "--config", "stuck", "--format", "json", "--out", str(out_dir), "--trace-out", str(trace)])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == 1 and (doc["verdict"], doc["kind"], doc["model"], doc["model_config"]) == ("violation", "deadlock", "toy", "stuck")
    assert doc["expected"] == [{"figure": "result", "expected": "deadlock failure", "found": "deadlock failure", "match": True}]
    assert sorted(p.name for p in out_dir.iterdir()) == ["toy-stuck.json", "toy-stuck.tlc.log", "toy-stuck.trace.json"]
    cex = json.loads(trace.read_text())
    assert [s["values"]["x"] for s in cex["counterexamples"][0]["trace"]] == [0, 1, 2]
    assert "wrote" in err


def test_cli_usage_errors_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RMKIT_TLA_DIR", str(toy_manifest(tmp_path)))
    assert main(["tlc", "nosuch"]) == 2
    assert "unknown model 'nosuch'" in capsys.readouterr().err
    assert main(["tlc", "--config", "huge"]) == 2
    assert main(["tlc", "--seed", "3"]) == 2
    assert "--simulate-depth" in capsys.readouterr().err
    assert main(["tlc", "--config", "deep"]) == 2  # its cfg is missing: an error verdict
    assert "Deep.cfg" in capsys.readouterr().out


def test_cli_help_documents_exit_codes_and_env(capsys):
    with pytest.raises(SystemExit) as e:
        main(["tlc", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    for text in ("exit codes:", "RMKIT_TLA2TOOLS", "RMKIT_TLA_DIR", "--simulate-depth", "--list", "--trace-out"):
        assert text in out


def test_summary_lists_what_was_checked_and_names_an_expected_finding(runs):
    """It printed VIOLATION and then exited 0, the reason at the bottom; nor did it say which
    invariants and properties were checked."""
    from rmkit.tlc.cfgfile import read_cfg_names

    r = runs["values"]
    checked = read_cfg_names("INIT Init\nNEXT Next\nINVARIANTS TypeOK Small\nPROPERTY Eventually\n")
    text = render_result(r, checked=checked, finding={"invariant": "Small", "rule": "TOY-001"}, width=200)
    assert re.search(r"verdict\s+EXPECTED FINDING: VIOLATION \(invariant Small\), TOY-001", text), text
    assert re.search(r"invariants\s+TypeOK, Small", text) and re.search(r"properties\s+Eventually", text)
    other = render_result(r, finding={"invariant": "Other", "rule": "TOY-002"}, width=200)
    assert "EXPECTED FINDING" not in other and re.search(r"verdict\s+VIOLATION \(invariant Small\)", other)


def test_a_version_without_a_build_date_does_not_print_the_placeholder():
    from rmkit.tlc.interpret import parse_output

    out = parse_output("@!@!@STARTMSG 2262:0 @!@!@\nTLC2 Version 2.15 of Day Month 20?? (rev: d5b5a7f)\n@!@!@ENDMSG 2262 @!@!@\n")
    assert out.tlc_version == "TLC2 Version 2.15 (build date not recorded) (rev: d5b5a7f)"
