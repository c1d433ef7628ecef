"""The modules run with ``python -m`` keep the exit-code contract: a bad argument is a usage error
(exit 2, one line naming it, no traceback), ``--help`` explains the module and exits 0; never the
exit 1 that reads as "violations found"."""

from __future__ import annotations

import subprocess
import sys

import pytest

AGREEMENT = "rmkit.conformance.rmb.agreement"
EXAMPLES = "rmkit.conformance.corda.driven.examples"
ADAPTERS = "rmkit.conformance.corda.driven.adapters"


def _run(module: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], input=stdin, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("module, args, named", [
    (AGREEMENT, ["nosuch"], "nosuch"),
    (EXAMPLES, ["nosuch", "receiver"], "nosuch"),
    (EXAMPLES, [], "NAME"),
    (EXAMPLES, ["ack_before_commit", "nosuchrole"], "nosuchrole"),
    (ADAPTERS, ["nosuchrole"], "nosuchrole"),
    (ADAPTERS, ["receiver", "extra"], "extra"),
])
def test_a_bad_argument_is_a_usage_error_naming_it(module, args, named):
    done = _run(module, *args)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("module, says", [
    (AGREEMENT, ["PROFILE", "spec", "rmb-rs-v1", "rmb-go", "exit codes"]),
    (EXAMPLES, ["NAME", "ack_before_commit", "batching_acks", "ROLE", "exit codes"]),
    (ADAPTERS, ["ROLE", "receiver", "bridge", "exit codes"]),
])
def test_help_explains_the_module_and_exits_0(module, says):
    done = _run(module, "--help")
    assert done.returncode == 0, done.stderr
    for text in says:
        assert text in done.stdout


@pytest.mark.parametrize("module, args", [(ADAPTERS, ["receiver"]), (ADAPTERS, []), (EXAMPLES, ["batching_acks", "receiver"]),
                                          (EXAMPLES, ["ack_before_commit"])])
def test_a_good_line_still_serves_the_adapter_protocol(module, args):
    done = _run(module, *args, stdin='{"type": "hello", "profile": "spec"}\n')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '{"ok": true}'


@pytest.mark.parametrize("args, named", [(["spec", "nosuch"], "'nosuch': expected one of spec, rmb-rs-v1, rmb-go"),
                                         (["spec", "--nosuch"], "--nosuch")])
def test_agreement_refuses_a_bad_line_before_starting_anything(capsys, args, named):
    """(In this process: the module's import alone takes seconds; the wiring is tested above.)"""
    from rmkit.conformance.rmb.agreement import command_line
    from rmkit.guard import run_command_line

    try:
        code = run_command_line(command_line(), args)
    except SystemExit as exc:  # argparse's own usage error
        code = exc.code
    assert code == 2
    assert named in capsys.readouterr().err
