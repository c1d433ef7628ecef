"""Corda P2P as an rmkit protocol: wires the spec, the rule set, the docs, the diagram and driven
conformance to the core's :class:`rmkit.protocol.Protocol` interface (entry point ``corda``)."""

from __future__ import annotations

import argparse
from typing import Any

from rmkit.guard import positive_seconds
from rmkit.protocol import ChecksLogs, DrivesImplementations, Protocol
from rmkit.rules import RuleSet
from rmkit.specload import load_protocol_spec
from rmkit.verdict import Nouns


HELP = {
    "check": "a node's records (spec/corda/records.yaml: events files and processed-ids exports), judged per "
             "message id.",
    "conform": "the implementation runs as a process speaking JSON Lines on stdin/stdout (--impl-cmd) or as a "
               "Python object (--impl module:factory); the adapter protocol, every number the kit waits by and a "
               "minimal receiver and bridge are in spec/corda/adapter.md. "
               "Each scenario's hello names a new SQLite file the implementation must keep its database in; a crash "
               "is real (the process group is killed with SIGKILL and the command started again, or a new object is "
               "made) and hello names the same file again.",
    "impl-cmd": "its adapter process; ROLE in CMD is replaced by the role.",
    "scenario file": "one JSON object (.json).",
}


class Corda(ChecksLogs, DrivesImplementations, Protocol):
    name = "corda"
    title = "Corda peer-to-peer messaging"
    nouns = Nouns(records="records", subject="message", subjects="messages")

    def help_text(self, topic: str) -> str:
        return HELP.get(topic, "")

    def spec(self) -> dict[str, Any]:
        return load_protocol_spec(self.name)

    def compiled(self, profile: str | None = None):
        from rmkit.protocols.corda.model import corda_spec

        return corda_spec(self.check_profile(profile))

    def rules(self) -> RuleSet:
        return self.compiled().rules

    def validate(self) -> list[str]:
        return [f"profile {p}: {len(self.compiled(p).rules)} rules, answers "
                + ", ".join(f"{a} -> {c}" for a, c in self.compiled(p).consequence.items()) for p in self.profiles()]

    def add_check_arguments(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--settled", action="store_true",
                           help="corda: the records were taken after every sent message had time to arrive (e.g. at the "
                                "end of a torture run), so losses and missing redeliveries are judged "
                                "(CORDA-DEDUP-002, CORDA-REDELIVER-001; otherwise listed as not checked)")
        group.add_argument("--horizon", type=positive_seconds, metavar="S",
                           help="corda: the deployment's bound: a message's successive records (on any node, and its "
                                "processed-ids row) come at most S seconds apart. Each message is then judged and forgotten "
                                "once the log's clock has passed it, so memory follows the open messages; the inputs are "
                                "read in step by time (give each export as its own file, in insertion order). Default: "
                                "spec/corda/records.yaml's horizon (the documents set none: everything kept to the end; "
                                "docs/corda-check-streaming.md)")

    def make_checker(self, profile: str, args: argparse.Namespace):
        """The checker of a node's records (spec/corda/records.yaml: events files and processed-ids exports)."""
        from rmkit.conformance.corda.checker import CordaLogChecker

        return CordaLogChecker(self.check_profile(profile), settled=bool(getattr(args, "settled", False)),
                               max_examples=getattr(args, "max_examples", 1000), jobs=getattr(args, "jobs", None),
                               horizon_s=getattr(args, "horizon", None))

    def sharded_checker(self, profile: str, args: argparse.Namespace):
        """The same checker: it is sharded by message id itself (``rmkit audit`` runs it on Spark)."""
        return self.make_checker(profile, args)

    def rule_fixture_options(self, manifest: dict[str, Any], entry: dict[str, Any]) -> list:
        # the fixtures of rules that judge what never happened are taken after everything settled
        return ["--settled"] if entry["settled"] else []

    def diagram(self, profile: str) -> str:
        from rmkit.conformance.corda.docs import path_diagram

        return path_diagram(profile)

    def add_commands(self, sub: argparse._SubParsersAction) -> None:
        from rmkit.conformance.corda.cli import add_commands

        add_commands(sub)

    def docs(self) -> str:
        from rmkit.conformance.corda.docs import spec_markdown

        return spec_markdown()


PROTOCOL = Corda()
