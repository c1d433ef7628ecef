"""The plug-in interface: a protocol is spec files + reference machines + a rule set + a TLA+ model.

The core (CLI, log reading, reports) only talks to :class:`Protocol` and its capabilities. Protocols register under the
``rmkit.protocols`` entry-point group, so a new one (or a third party's) plugs in without touching
the core.
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Iterable, Protocol as _TypingProtocol, Sequence

import orjson

from rmkit.errors import UsageError
from rmkit.logread import REF_LINE_BITS, UTF8_BOM  # (REF_LINE_BITS: the references a ShardedChecker gets)
from rmkit.rules import RuleSet
from rmkit.verdict import GENERIC_NOUNS, Nouns, Report

ENTRY_POINT_GROUP = "rmkit.protocols"
AUDIT_ENTRY_POINT_GROUP = "rmkit.audit"  # the Spark job every protocol's `rmkit audit` runs


class LogChecker(_TypingProtocol):
    """What ``rmkit check`` runs. A checker may also carry ``mmap_threshold`` (bytes): the
    smallest block its process's allocator should map on its own (:mod:`rmkit.malloctune`)."""

    def run(self, inputs: list[str]) -> Report: ...


@dataclass(frozen=True)
class RecordKey:
    """Where a log record's key is: the subject whose records a checker judges together (e.g. a
    message id). Each path is a list of JSON object keys, tried in order. A record without a key at
    any path still goes to exactly one share."""

    paths: tuple[tuple[str, ...], ...]
    fold_case: bool = True  # keys that differ only in case land in the same share
    text_values: bool = False  # a step into a string reads it as JSON (a Kafka record's value held as text)

    def of_line(self, line: bytes | str) -> str | None:
        """The key of one raw log line, read as the checkers read lines (orjson: a key given twice
        counts with its last value, numbers of any length; a leading byte order mark dropped, as
        the log reader drops it); None when the line is no JSON object. ``rmkit audit`` partitions
        records by it and ``--jobs`` deals them out by it, so that every record a checker judges
        together is in one share."""
        if line[:3] == UTF8_BOM or line[:1] == "\ufeff":
            line = line[len(UTF8_BOM):] if isinstance(line, bytes) else line[1:]
        try:
            return self.of_object(orjson.loads(line))
        except orjson.JSONDecodeError:
            return None

    @property
    def field(self) -> str | None:
        """The name every path ends in (e.g. ``message_id``), or None when they end in different
        names: where a record can be keyed without parsing it (see ``spark_checks.inputs``)."""
        names = {path[-1] for path in self.paths}
        return names.pop() if len(names) == 1 else None

    def of_object(self, obj: Any) -> str | None:
        """The key of one parsed record: the first path that gives a value that is not null (a
        value that is not a string as its JSON text); None when no path gives one. A checker that
        groups parsed records uses this, so its groups and its shares agree by construction."""
        if type(obj) is not dict:
            return None
        for path in self.paths:
            value: Any = obj
            for step in path:
                if self.text_values and type(value) is str:
                    try:
                        value = orjson.loads(value)
                    except orjson.JSONDecodeError:
                        value = None
                value = value.get(step) if type(value) is dict else None
                if value is None:
                    break
            if value is not None:
                key = value if type(value) is str else orjson.dumps(value).decode()
                return key.lower() if self.fold_case else key
        return None


@dataclass(frozen=True)
class FixtureFile:
    """A file of a protocol's rule fixtures (its path under :meth:`ChecksLogs.rule_fixture_root`),
    given as the value of an option of ``rmkit check``."""

    path: str


class ShardedChecker(_TypingProtocol):
    """A protocol's log checker run in shares, by a distributed job (``rmkit audit``) or by
    processes (``rmkit check --jobs``): every share gets all records of its keys, in log order, and
    the shares' partial results merge into one report. Must be picklable (it travels to workers).

    A checker whose decisions follow the log's clock (a subject closed, a record late, once the
    clock passed a point) also defines ``clock_block(refs, lines) -> bytes``, the clock events of
    a batch of the log's lines (every line, in log order) by its own reading, and takes them as
    ``check_share(inputs, batches, clock=...)``: every block of the log in log order, which the
    share's clock takes between its own records, so that it is the log's clock at every record
    (``rmkit audit`` reads them in a pass of its own: docs/audit.md; a share walks them with
    :func:`rmkit.clockwalk.with_clock`)."""

    key: RecordKey

    def check_share(self, inputs: list[str], batches: Iterable[tuple[Sequence[int], Sequence[bytes | str]]]) -> Any:
        """Check one share: ``batches`` yields (refs, raw lines) in log order (see REF_LINE_BITS);
        returns the share's picklable partial result."""

    def merge(self, inputs: list[str], shares: list[Any]) -> Report:
        """One report from every share's partial result (at least one)."""


class Protocol:
    """Base class; a protocol package exposes one instance as its entry point.

    The required part is what every command that names a protocol needs: its name and title, its
    spec, rules and profiles (``rmkit spec``, ``rmkit explain``) and the words its reports use.
    The rest are capabilities (:data:`CAPABILITIES`), each a mixin class below that a protocol
    adds to its bases; the core asks :func:`capable` before it calls one, and a command a protocol
    lacks the capability for is a usage error naming what is missing. Every method the core calls
    on a protocol is declared here or on a capability (``tests/core/test_protocol_interface.py``)."""

    name: str = ""
    title: str = ""
    # the protocol a command uses when none is given: the one that declares it (see default_protocol)
    default: bool = False
    # what the protocol's records and subjects are called in its reports
    nouns: Nouns = GENERIC_NOUNS

    def spec(self) -> dict[str, Any]:
        raise NotImplementedError

    def rules(self) -> RuleSet:
        raise NotImplementedError

    def validate(self) -> list[str]:
        """Load and cross-check every spec file (``rmkit spec validate``); return what was checked,
        one line each. A broken spec raises (exit 2)."""
        raise NotImplementedError

    def profiles(self) -> dict[str, str]:
        """Profile name -> one-line description, default first (from the spec's protocol.yaml)."""
        profs = self.spec()["protocol"]["profiles"]
        ordered = sorted(profs, key=lambda p: not profs[p].get("default", False))
        return {p: " ".join(profs[p]["description"].split()) for p in ordered}

    def default_profile(self) -> str:
        return next(iter(self.profiles()))

    def check_profile(self, profile: str | None) -> str:
        profile = profile or self.default_profile()
        if profile not in self.profiles():
            raise UsageError(f"protocol {self.name} has no profile {profile!r}; expected one of: {', '.join(self.profiles())}")
        return profile

    def requirements(self) -> dict[str, dict[str, Any]]:
        """Requirements only driven conformance judges (what a machine must do that no log shows):
        id -> ``{title, statement, source: {doc, quote}, roles}``. Driven reports cite these ids
        beside the rules' ids, so ``rmkit explain`` must know them too. None by default."""
        return {}

    def diagram(self, profile: str) -> str:
        """Graphviz DOT source of the status machine."""
        raise NotImplementedError

    def docs(self) -> str:
        """Markdown tables generated from the spec (spec/<protocol>/README.md)."""
        raise NotImplementedError

    def help_text(self, topic: str) -> str:
        """What the help of the command line says of this protocol on ``topic`` (:data:`HELP_TOPICS`);
        empty: nothing. The core shows it after the protocol's name, so it reads on its own."""
        return ""

    def add_commands(self, sub: argparse._SubParsersAction) -> None:
        """Top-level commands of the protocol's own, added to ``sub``: those whose words and work are
        the protocol's alone (its records' encodings, its daemons), named after the protocol or
        after what they work on."""


# What ``Protocol.help_text`` is asked about: topic -> where the core shows the answer.
HELP_TOPICS = {
    "examples": "the examples in `rmkit --help` (the default protocol's; one command a line)",
    "check": "`rmkit check --help`: the protocol's logs (what a record is, the formats read)",
    "simulate": "`rmkit simulate --help`: what the simulator runs and writes",
    "keys gen": "`rmkit keys gen --help`: what a key set holds, with examples (one command a line)",
    "conform": "`rmkit conform --help`: how the implementation is run and driven",
    "impl-cmd": "the --impl-cmd option of `rmkit conform` and `rmkit replay`: what the command starts",
    "scenario file": "`rmkit conform` and `rmkit replay`: the format of a saved scenario file",
}


class ChecksLogs:
    """Capability: check logs (``rmkit check``, with ``--jobs``) and audit them on Spark
    (``rmkit audit``)."""

    def add_check_arguments(self, group: argparse._ArgumentGroup) -> None:
        """Protocol-specific options of ``rmkit check`` (shown in ``rmkit check --help``)."""

    def make_checker(self, profile: str, args: argparse.Namespace) -> LogChecker:
        raise NotImplementedError

    def rule_fixture_root(self) -> Any:
        """Where the rules' own fixtures are (an importable resource directory): a
        ``manifest.json`` whose ``fixtures`` list ``{file, profile, why}``, one log
        ``<profile>/<RULE-ID>.jsonl`` per rule and profile, in which the checker finds the rule
        broken; ``rmkit explain`` shows the first one's violation (:mod:`rmkit.explain`)."""
        from importlib import resources

        return resources.files("rmkit.fixtures") / self.name / "rules"

    def rule_fixture_options(self, manifest: dict[str, Any], entry: dict[str, Any]) -> list[str | FixtureFile]:
        """The options of ``rmkit check`` one rule fixture (``entry`` of ``manifest``) is checked
        with, a file of the fixtures given as a :class:`FixtureFile`. None by default."""
        return []

    def add_audit_arguments(self, group: argparse._ArgumentGroup) -> None:
        """Protocol-specific options of ``rmkit audit``: by default those of ``rmkit check``
        (the audit runs the same checker)."""
        self.add_check_arguments(group)

    def sharded_checker(self, profile: str, args: argparse.Namespace) -> ShardedChecker:
        """The log checker as a :class:`ShardedChecker`, which ``rmkit audit`` runs on Spark."""
        raise NotImplementedError

    # whether operator_figures gives latencies to chart (``latency_ms``): ``rmkit audit --out`` then
    # needs matplotlib, which it checks before the job runs
    operator_charts: bool = False

    def operator_figures(self, report: Report) -> dict[str, Any] | None:
        """The figures the people who run the network ask for, from the merged report of
        ``rmkit audit`` (``--out``: operator.json, operator.md); None when the protocol has none,
        and the operator's report then gives the verdict and the counts per rule only. A
        ``latency_ms`` entry (name -> from, to, count, promise_ms, log10_bins) is charted."""
        return None

    def operator_markdown(self, figures: dict[str, Any]) -> str:
        """The sections of operator.md that show :meth:`operator_figures` (Markdown)."""
        return ""

    def audit(self, profile: str, args: argparse.Namespace) -> int:
        """Run ``rmkit audit``: the protocol's own checker over ``args.paths``, sharded by record
        key on Spark (one job for every protocol); return the exit code. The job sits above the
        core (``spark_checks/``), so the core finds it as it finds the protocols: by entry point."""
        found = [ep for ep in entry_points(group=AUDIT_ENTRY_POINT_GROUP) if ep.name == "run"]
        if not found:
            raise UsageError(f"rmkit audit: no audit job is installed (entry point {AUDIT_ENTRY_POINT_GROUP}: run)")
        return found[0].load()(self, profile, args)


class Simulates:
    """Capability: write a simulated log (``rmkit simulate``)."""

    def add_simulate_arguments(self, group: argparse._ArgumentGroup) -> None:
        """Protocol-specific options of ``rmkit simulate``."""

    def simulate(self, profile: str, args: argparse.Namespace) -> int:
        """Write a simulated log to ``args.out``; return the number of records written."""
        raise NotImplementedError


class MakesKeys:
    """Capability: write test key sets (``rmkit keys``)."""

    def add_keys_arguments(self, action: str, group: argparse._ArgumentGroup) -> None:
        """Protocol-specific options of ``rmkit keys ACTION`` (``gen``)."""

    def keys(self, action: str, args: argparse.Namespace) -> int:
        """Run ``rmkit keys ACTION`` (``gen``: write a test key set to ``args.out``); return the exit code."""
        raise NotImplementedError


class DrivesImplementations:
    """Capability: driven conformance (``rmkit conform``, ``rmkit replay``).

    Every protocol folder has the same shape, so the commands are found in the package that holds
    the protocol's adapter (the module its class is defined in): ``driven/cli.py`` with
    ``conform(profile, args)`` and ``replay(args)``, and ``pytest_support.py`` with ``Support``
    (``tests/core/test_protocol_layout.py``). A protocol laid out otherwise overrides these."""

    def add_conform_arguments(self, group: argparse._ArgumentGroup) -> None:
        """Protocol-specific options of ``rmkit conform`` and ``rmkit replay``."""

    def conform(self, profile: str, args: argparse.Namespace) -> int:
        """Run ``rmkit conform``: drive an implementation through scenarios; return the exit code."""
        return self._own_module("driven.cli").conform(profile, args)

    def replay(self, args: argparse.Namespace) -> int:
        """Run ``rmkit replay FILE``: rerun one saved scenario against an implementation."""
        return self._own_module("driven.cli").replay(args)

    def pytest_support(self) -> Any:
        """The protocol's side of the pytest plugin (a
        :class:`rmkit.conformance.pytest_support.PytestSupport`), or None when its implementations
        cannot be driven from pytest (its package has no ``pytest_support`` module)."""
        import importlib.util

        package = self._own_package()
        if not package or importlib.util.find_spec(f"{package}.pytest_support") is None:
            return None
        return self._own_module("pytest_support").Support()

    def _own_package(self) -> str:
        return type(self).__module__.rpartition(".")[0]

    def _own_module(self, name: str) -> Any:
        import importlib

        return importlib.import_module(f"{self._own_package()}.{name}")


# capability -> (its mixin, what a protocol without it lacks, as a usage error says it)
CAPABILITIES: dict[str, tuple[type, str]] = {
    "check": (ChecksLogs, "log checker"),
    "simulate": (Simulates, "simulator"),
    "keys": (MakesKeys, "keys"),
    "conform": (DrivesImplementations, "driven conformance suite"),
}


def capable(proto: Protocol, capability: str) -> bool:
    """Whether ``proto`` has ``capability`` (a key of :data:`CAPABILITIES`)."""
    return isinstance(proto, CAPABILITIES[capability][0])


def require(proto: Protocol, capability: str) -> Any:
    """``proto``, or a usage error when it lacks ``capability``."""
    if not capable(proto, capability):
        raise UsageError(f"protocol {proto.name} has no {CAPABILITIES[capability][1]}")
    return proto


@functools.lru_cache(maxsize=None)
def registry() -> dict[str, Protocol]:
    found: dict[str, Protocol] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found[ep.name] = ep.load()
    return found


def get_protocol(name: str) -> Protocol:
    protos = registry()
    if name not in protos:
        known = ", ".join(sorted(protos)) or "none (is rmkit installed? `pip install .`)"
        raise UsageError(f"unknown protocol {name!r}; installed protocols: {known}")
    return protos[name]


def protocol_names(capability: str | None = None) -> list[str]:
    """The installed protocols' names, sorted; with ``capability``, those that have it."""
    return sorted(name for name, proto in registry().items() if capability is None or capable(proto, capability))


def default_protocol(capability: str | None = None) -> str | None:
    """The protocol a command uses when none is given: of the installed ones (with ``capability``),
    the first that declares itself the default, else the only one; None when none is."""
    names = protocol_names(capability)
    declared = [name for name in names if registry()[name].default]
    return declared[0] if declared else names[0] if len(names) == 1 else None
