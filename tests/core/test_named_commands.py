"""Every ``rmkit ...`` command the kit names to a reader exists: in the rules' advice (what to do
about a violation), in the documentation and in the messages of the code. An advice that sent an
operator to `rmkit spec show remp kinds`, a command that never existed, is what this catches.

A command is found in backticks (Markdown, messages) or anywhere in an advice string; each one's
subcommand path is looked up in the real parser and its ``--help`` run."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from rmkit.cli import build_parser, main
from rmkit.protocol import get_protocol, protocol_names

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs", "spec", "tla", "spark_checks", "conformance", "reference_impl", "protocols", "interop"]
CODE = ["rmkit", "protocols", "conformance", "spark_checks", "reference_impl"]
IN_BACKTICKS = re.compile(r"`(rmkit [^`\n]+)`")
ANYWHERE = re.compile(r"\brmkit (?:[a-z][a-z-]*)(?: [a-z][a-z|-]*)*")


def _files(roots, suffix):
    for root in roots:
        path = REPO / root
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from (p for p in path.rglob(f"*{suffix}") if "node_modules" not in p.parts)


def named_commands() -> dict[str, str]:
    """command text -> where it was found."""
    found = {}
    for name in protocol_names():
        for rule in get_protocol(name).rules():
            for m in ANYWHERE.finditer(rule.advice or ""):
                found.setdefault(m.group(0), f"advice of {rule.id}")
    for path in [*_files(DOCS, ".md"), *_files(CODE, ".py"), *_files(["spec"], ".yaml")]:
        for m in IN_BACKTICKS.finditer(path.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(m.group(1), str(path.relative_to(REPO)))
    return found


def _subparsers(parser: argparse.ArgumentParser) -> dict:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def command_path(text: str) -> list[str] | str:
    """The subcommands ``text`` names (``rmkit spec docs --protocol remp`` -> [spec, docs]), or why
    it names none that exists."""
    words = text.split()[1:]
    parser, path = build_parser(), []
    for word in words:
        choices = _subparsers(parser)
        if not path and word.startswith("-"):  # an option of rmkit itself (--debug)
            continue
        if not choices or word.startswith("-") or word.upper() == word:  # an option, or a placeholder
            break
        alternatives = re.split(r"[|/]", word)  # `rmkit rmb sign|verify`, `rmkit check/audit`
        unknown = [w for w in alternatives if w not in choices]
        if unknown:
            return f"no command `rmkit {' '.join(path + [unknown[0]])}` (there are: {', '.join(choices)})"
        path.append(alternatives[0])
        parser = choices[alternatives[0]]
    return path  # [] is rmkit itself


COMMANDS = named_commands()


def test_the_kit_names_commands_at_all():
    assert len(COMMANDS) > 30 and any(w.startswith("advice") for w in COMMANDS.values())


@pytest.mark.parametrize("text", sorted(COMMANDS))
def test_every_named_command_exists(text):
    path = command_path(text)
    assert isinstance(path, list), f"{COMMANDS[text]}: `{text}`: {path}"


@pytest.mark.parametrize("path", sorted({" ".join(p) or "(rmkit)" for p in map(command_path, COMMANDS) if isinstance(p, list)}))
def test_every_named_command_answers_help(path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*path.replace("(rmkit)", "").split(), "--help"])
    assert exit_.value.code == 0, capsys.readouterr().err
    assert "usage: rmkit" in capsys.readouterr().out


def _all_parsers(parser, path=()):
    yield path, parser
    for name, sub in _subparsers(parser).items():
        yield from _all_parsers(sub, (*path, name))


def test_every_protocol_option_says_its_choices_from_the_registry():
    """`--protocol` had no description or list of choices in `conform --help` and `audit --help`.
    A command only some protocols have (``simulate``) lists those; every command lists one at least."""
    seen = 0
    for path, parser in _all_parsers(build_parser()):
        if path and path[0] in _protocols_own_commands():
            continue  # a protocol's own command: its options are its own business
        for action in parser._actions:
            if "--protocol" in action.option_strings:
                seen += 1
                listed = action.help.split("one of ", 1)[1].split(" (default", 1)[0].split(", ") if action.help else []
                assert listed and set(listed) <= set(protocol_names()), (path, action.help)
                capability = CAPABILITY_OF.get(path[0])
                assert listed == protocol_names(capability), (path, action.help)
    assert seen >= 10


def _protocols_own_commands() -> set[str]:
    """The top-level commands protocols add of their own (``Protocol.add_commands``)."""
    import argparse

    from rmkit.protocol import get_protocol, protocol_names

    sub = argparse.ArgumentParser().add_subparsers()
    for name in protocol_names():
        get_protocol(name).add_commands(sub)
    return set(sub.choices)


# the capability a command needs of a protocol (rmkit.protocol.CAPABILITIES); the others need none
CAPABILITY_OF = {"check": "check", "audit": "check", "simulate": "simulate", "keys": "keys",
                 "conform": "conform", "replay": "conform"}
