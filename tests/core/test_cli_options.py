"""Options a protocol registers belong to that protocol: given with another ``--protocol`` they
would be ignored (a run that ignores what it was asked can pass when it should not), so they are a
usage error (exit 2) naming the option and the protocol(s) it belongs to. Which protocol an option
belongs to comes from the protocols' own registration hooks, never from a list in the core."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rmkit import cli
from rmkit.cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]
RMB_LOG = str(REPO / "fixtures" / "rmb" / "logs" / "spec" / "twin-1.jsonl")
RMB_DIRECTORY = str(REPO / "fixtures" / "rmb" / "logs" / "spec" / "directory.json")
CORDA_LOG = str(REPO / "fixtures" / "corda" / "rules" / "spec" / "CORDA-ACK-001.jsonl")
REMP_LOG = str(REPO / "fixtures" / "remp" / "logs" / "sim-spec-clean.jsonl")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _help(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("argv, named", [
    (["check", "--protocol", "rmb", "--settled", "--lifetime", "5", "--validators", "/nonexistent", RMB_LOG],
     [("--settled", "corda"), ("--lifetime", "remp"), ("--validators", "remp")]),
    (["check", "--protocol", "corda", "--directory", "/nonexistent", CORDA_LOG], [("--directory", "rmb")]),
    (["check", "--protocol", "corda", "--lifetime", "5", CORDA_LOG], [("--lifetime", "remp")]),
    (["check", "--settled", REMP_LOG], [("--settled", "corda")]),  # the default protocol (remp)
    (["audit", "--protocol", "corda", "--directory", "/nonexistent", CORDA_LOG], [("--directory", "rmb")]),
    (["simulate", "--protocol", "corda", "--messages", "5", "-o", "-"], [("--messages", "remp")]),
    (["conform", "--protocol", "remp", "--rmb-workdir", "/nonexistent", "--impl-cmd", "false"], [("--rmb-workdir", "rmb")]),
])
def test_an_option_of_another_protocol_is_a_usage_error_naming_it_and_its_protocol(capsys, argv, named):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""  # nothing was run
    chosen = argv[argv.index("--protocol") + 1] if "--protocol" in argv else "remp"
    for option, protocols in named:
        assert option in err and protocols in err, err
    assert f"protocol {chosen}" in err


@pytest.mark.parametrize("argv", [
    ["check", "--protocol", "rmb", "--horizon", "5", "--directory", RMB_DIRECTORY, RMB_LOG],
    ["check", "--protocol", "remp", "--lifetime", "60", "--horizon", "400", REMP_LOG],  # (simulated with lifetime 60)
])
def test_options_the_chosen_protocol_registered_are_accepted(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 0, err


def test_an_unknown_protocol_is_reported_as_such_not_as_foreign_options(capsys):
    code, _, err = run(capsys, "check", "--protocol", "nosuch", "--settled", RMB_LOG)
    assert code == 2 and "unknown protocol 'nosuch'" in err


def test_help_after_protocol_lists_only_that_protocols_options(capsys):
    rmb = _help(capsys, "check", "--protocol", "rmb")
    assert "rmb options" in rmb and "--directory" in rmb and "--horizon" in rmb
    assert "remp options" not in rmb and "corda options" not in rmb and "--settled" not in rmb
    assert "remp options" not in _help(capsys, "simulate", "--protocol", "rmb")
    every = _help(capsys, "check")
    assert all(f"{name} options" in every for name in ("corda", "remp", "rmb"))


def test_a_parser_used_twice_forgets_the_protocol_chosen_before(capsys):
    parser = build_parser()
    parser.parse_args(["check", "--protocol", "rmb", RMB_LOG])
    with pytest.raises(SystemExit):
        parser.parse_args(["check", "--help"])
    assert "corda options" in capsys.readouterr().out


# -- the mechanism, with protocols that exist only here ---------------------------------------------
def _options(register: dict) -> tuple[argparse.ArgumentParser, cli.ProtocolOptions]:
    parser = argparse.ArgumentParser()
    options = cli.ProtocolOptions(parser)
    options.add_protocol_argument(default="alpha")
    for name, hook in register.items():
        options.add(name, hook)
    return parser, options


def test_ownership_comes_from_what_each_protocol_registered():
    parser, options = _options({
        "alpha": lambda g: g.add_argument("--wide", type=int, metavar="N", help="alpha's reading"),
        "beta": lambda g: (g.add_argument("--wide", type=int, metavar="N", help="beta's reading"),
                           g.add_argument("--flag", action="store_true")),
        "gamma": lambda g: None,  # a protocol without options of its own
    })
    assert options.foreign(parser.parse_args(["--wide", "3"])) == []
    assert options.foreign(parser.parse_args(["--protocol", "beta", "--wide", "3", "--flag"])) == []
    assert options.foreign(parser.parse_args(["--flag"])) == [("--flag", ["beta"])]
    assert options.foreign(parser.parse_args(["--protocol", "gamma", "--wide", "1"])) == [("--wide", ["alpha", "beta"])]
    assert options.foreign(parser.parse_args(["--protocol", "delta", "--wide", "1"])) == []  # unknown: said elsewhere


def test_an_option_two_protocols_register_differently_is_refused_when_the_parser_is_built():
    with pytest.raises(ValueError, match="--wide"):
        _options({"alpha": lambda g: g.add_argument("--wide", type=int),
                  "beta": lambda g: g.add_argument("--wide", type=float)})


def test_a_protocol_cannot_take_over_a_core_option():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    options = cli.ProtocolOptions(parser)
    with pytest.raises(argparse.ArgumentError):
        options.add("alpha", lambda g: g.add_argument("--out"))


def test_the_core_names_no_protocol():
    """The command line is the core: which options belong where comes from the plug-ins alone."""
    source = (REPO / "rmkit" / "cli.py").read_text(encoding="utf-8")
    for option in ("--settled", "--directory", "--lifetime", "--horizon", "--rmb-workdir", "--messages"):
        assert f'"{option}"' not in source
