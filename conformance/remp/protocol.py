"""REMP as an rmkit protocol: wires the spec, the rule set, the log checker, the docs and the
diagram to the core's :class:`rmkit.protocol.Protocol` interface (entry point ``remp``)."""

from __future__ import annotations

import argparse
from typing import Any

from rmkit.errors import UsageError
from rmkit.guard import positive_seconds
from rmkit.protocol import ChecksLogs, DrivesImplementations, FixtureFile, MakesKeys, Protocol, Simulates
from rmkit.rules import RuleSet
from rmkit.specload import load_protocol_spec
from rmkit.verdict import Nouns


HELP = {
    "examples": "rmkit check receipts.jsonl.gz\n"
                "rmkit check --profile ever-node --format json --out report.json dump.jsonl\n"
                "rmkit explain REMP-REPLAY-002\n"
                "rmkit spec diagram --protocol remp -o remp.svg\n"
                "rmkit receipt verify --validators validators.yaml receipts.jsonl",
    "check": "receipt logs: JSONL of receipt objects as the nodes log them, or a Kafka dump of them; "
             "order within one message is the log order.",
    "simulate": "the reference shard simulator (validators, full node, network, session switches) writes its "
                "receipt log; or a multi-file log with planted violations and a manifest.",
    "keys gen": "the validator-set file (for `rmkit check --validators` and `rmkit receipt verify`) and one "
                "private key file per node (for `rmkit receipt sign --key` and `rmkit simulate --keys`), as in:\n"
                "rmkit keys gen --validators 7 --sessions 10 --seed 1 --out keys\n"
                "rmkit simulate --keys keys --messages 500 -o signed.jsonl\n"
                "rmkit check --validators keys/validators.yaml signed.jsonl",
    "conform": "the implementation runs as a process speaking JSON Lines on stdin/stdout (--impl-cmd) or as a "
               "Python object (--impl module:factory); the adapter protocol is in spec/remp/adapter.md.",
    "impl-cmd": "its adapter process; ROLE in CMD is replaced by the role.",
    "scenario file": "JSON Lines (.jsonl): a header, then one event per line.",
}


class Remp(ChecksLogs, Simulates, MakesKeys, DrivesImplementations, Protocol):
    name = "remp"
    title = "Everscale Reliable External Messaging Protocol"
    default = True  # the protocol the kit was first written for: commands without --protocol check it
    nouns = Nouns(records="receipts", subject="message", subjects="messages")

    def help_text(self, topic: str) -> str:
        return HELP.get(topic, "")

    def spec(self) -> dict[str, Any]:
        return load_protocol_spec(self.name)

    def model(self, profile: str):
        from rmkit.protocols.remp.model import model_for

        return model_for(self.check_profile(profile))

    def rules(self) -> RuleSet:
        return self.model(self.default_profile()).rules

    def validate(self) -> list[str]:
        """Compile every profile (cross-reference checks) and the TL wire format (every
        constructor id against its line, every kind mapped); return what was checked."""
        from rmkit.protocols.remp.tlreceipt import tl_schema

        checked = [f"profile {p}: {len(self.model(p).kinds)} kinds, {len(self.model(p).rules)} rules" for p in self.profiles()]
        return checked + [f"wire format: {len(tl_schema().by_name)} TL constructors, ids match their lines"]

    def add_check_arguments(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--lifetime", type=positive_seconds, metavar="S",
                           help="mc_catchain_lifetime in seconds (default: the spec's 250)")
        group.add_argument("--horizon", type=positive_seconds, metavar="S",
                           help="judge a message lost when it has no final outcome S seconds after its first receipt "
                                "(default: the profile's expiry bound + 60 s); messages nearer the log's end are not judged")
        group.add_argument("--validators", metavar="FILE",
                           help="validator-set file (JSON or YAML, spec/remp/keys.md): per session the validators' "
                                "public keys and the full nodes' keys; signatures are then verified (REMP-SIG-002..004, "
                                "otherwise reported as not checked) and roles come from it. A roles-only file "
                                "{validators: [source ids], full_nodes: [source ids]} gives roles only "
                                "(default: roles inferred from the kinds each source issues)")

    def sharded_checker(self, profile: str, args: argparse.Namespace):
        from rmkit.conformance.remp.sharded import RempShards

        return RempShards(self.make_checker(profile, args)._kwargs)

    operator_charts = True  # the latencies against the documents' promises

    def operator_figures(self, report):
        from rmkit.conformance.remp.operator import figures

        return figures(report)

    def operator_markdown(self, figures: dict[str, Any]) -> str:
        from rmkit.conformance.remp.operator import markdown

        return markdown(figures)

    def make_checker(self, profile: str, args: argparse.Namespace):
        from rmkit.conformance.remp.checker import RempLogChecker
        from rmkit.protocols.remp.keys import load_validator_set

        valset = load_validator_set(args.validators) if getattr(args, "validators", None) else None
        lifetime = getattr(args, "lifetime", None)
        horizon = getattr(args, "horizon", None)
        for name, value in (("--lifetime", lifetime), ("--horizon", horizon)):
            if value is not None and value <= 0:
                raise UsageError(f"{name}: expected a number of seconds > 0, found {value}")
        return RempLogChecker(self.check_profile(profile), lifetime_s=lifetime, horizon_s=horizon,
                              validator_set=valset, max_examples=getattr(args, "max_examples", 1000),
                              jobs=getattr(args, "jobs", None))

    def add_simulate_arguments(self, group: argparse._ArgumentGroup) -> None:
        from rmkit.conformance.remp import simulate_cli

        simulate_cli.add_arguments(group)

    def simulate(self, profile: str, args: argparse.Namespace) -> int:
        from rmkit.conformance.remp import simulate_cli

        return simulate_cli.run(profile, args)

    def add_keys_arguments(self, action: str, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--validators", type=int, required=True, metavar="N", help="validators per session")
        group.add_argument("--sessions", type=int, default=10, metavar="S",
                           help="master catchain sessions (default 10; a simulation needs one per ~lifetime of simulated time)")
        group.add_argument("--rotate", type=int, metavar="R", help="validators replaced per session (default max(1, N/3))")
        group.add_argument("--full-nodes", type=int, default=1, metavar="F", help="full nodes (default 1)")

    def keys(self, action: str, args: argparse.Namespace) -> int:
        import sys

        from rmkit.protocols.remp.signing import generate_key_set

        for flag, value, low, high in (("--validators", args.validators, 1, 1000), ("--sessions", args.sessions, 1, 10_000),
                                       ("--full-nodes", args.full_nodes, 0, 1000), ("--rotate", args.rotate, 0, args.validators)):
            # a test key set: the bounds keep a typo from deriving keys for hours
            if value is not None and not low <= value <= high:
                raise UsageError(f"{flag}: expected a number from {low} to {high}, found {value}")
        path = generate_key_set(args.out, args.validators, args.sessions, args.seed, args.rotate, args.full_nodes)
        print(f"wrote {path} ({args.sessions} sessions of {args.validators} validators, {args.full_nodes} full node(s)) "
              f"and their private keys in {path.parent / 'keys'}" + ("" if args.seed is not None else " (random keys)"),
              file=sys.stderr)
        return 0

    def add_commands(self, sub: argparse._SubParsersAction) -> None:
        """``rmkit receipt encode | sign | verify``: single receipts (REMP's own command)."""
        from rmkit.conformance.remp import receipt_cli

        receipt_cli.add_command(sub)

    def rule_fixture_options(self, manifest: dict[str, Any], entry: dict[str, Any]) -> list:
        # a signature rule's fixture is checked against the fixtures' keys
        return ["--validators", FixtureFile(entry["validators"])] if entry.get("validators") else []

    def requirements(self) -> dict[str, dict[str, Any]]:
        from rmkit.conformance.remp.driven.catalogue import requirements

        return requirements()

    def diagram(self, profile: str) -> str:
        from rmkit.conformance.remp.docs import status_diagram

        return status_diagram(self.model(profile))

    def docs(self) -> str:
        from rmkit.conformance.remp.docs import spec_markdown

        return spec_markdown()


PROTOCOL = Remp()
