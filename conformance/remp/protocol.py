"""REMP as an rmkit protocol: wires the spec, the rule set, the log checker, the docs and the
diagram to the core's :class:`rmkit.protocol.Protocol` interface (entry point ``remp``)."""

from __future__ import annotations

import argparse
from typing import Any

from rmkit.errors import UsageError
from rmkit.protocol import Protocol
from rmkit.rules import RuleSet
from rmkit.specload import load_protocol_spec


class Remp(Protocol):
    name = "remp"
    title = "Everscale Reliable External Messaging Protocol"

    def spec(self) -> dict[str, Any]:
        return load_protocol_spec(self.name)

    def model(self, profile: str):
        from rmkit.conformance.remp.model import model_for

        return model_for(self.check_profile(profile))

    def rules(self) -> RuleSet:
        return self.model(self.default_profile()).rules

    def profiles(self) -> dict[str, str]:
        profs = self.spec()["protocol"]["profiles"]
        ordered = sorted(profs, key=lambda p: not profs[p].get("default", False))
        return {p: " ".join(profs[p]["description"].split()) for p in ordered}

    def validate(self) -> list[str]:
        """Compile every profile (cross-reference checks); return what was checked."""
        return [f"profile {p}: {len(self.model(p).kinds)} kinds, {len(self.model(p).rules)} rules" for p in self.profiles()]

    def add_check_arguments(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--lifetime", type=float, metavar="S",
                           help="mc_catchain_lifetime in seconds (default: the spec's 250)")
        group.add_argument("--horizon", type=float, metavar="S",
                           help="judge a message lost when it has no final outcome S seconds after its first receipt "
                                "(default: the profile's expiry bound + 60 s); messages nearer the log's end are not judged")
        group.add_argument("--validators", metavar="FILE",
                           help="JSON or YAML {validators: [source ids], full_nodes: [source ids]}: the sources' roles "
                                "(default: inferred from the kinds each source issues)")

    def make_checker(self, profile: str, args: argparse.Namespace):
        from rmkit.conformance.remp.checker import RempLogChecker
        from rmkit.conformance.remp.sources import load_roles

        roles = load_roles(args.validators) if getattr(args, "validators", None) else None
        lifetime = getattr(args, "lifetime", None)
        horizon = getattr(args, "horizon", None)
        for name, value in (("--lifetime", lifetime), ("--horizon", horizon)):
            if value is not None and value <= 0:
                raise UsageError(f"{name}: expected a number of seconds > 0, found {value}")
        return RempLogChecker(self.check_profile(profile), lifetime_s=lifetime, horizon_s=horizon,
                              roles=roles, max_examples=getattr(args, "max_examples", 1000),
                              jobs=getattr(args, "jobs", None))

    def add_simulate_arguments(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--messages", type=int, default=1000, help="number of external messages (default 1000)")
        group.add_argument("--receipts", type=int, help="stop after this many receipts instead")
        group.add_argument("--kafka", action="store_true", help="write a Kafka dump (topic, partition, offset, timestamp, key, value)")
        group.add_argument("--lifetime", type=float, metavar="S", help="mc_catchain_lifetime in seconds (default: the spec's)")

    def simulate(self, profile: str, args: argparse.Namespace) -> int:
        import itertools

        from rmkit.reference_impl.remp import simulate, simulate_timed, write_jsonl, write_kafka_dump

        if args.messages < 1 or (args.receipts is not None and args.receipts < 1):
            raise UsageError("--messages and --receipts: expected numbers >= 1")
        if args.lifetime is not None and args.lifetime <= 0:
            raise UsageError(f"--lifetime: expected a number of seconds > 0, found {args.lifetime}")
        # with --receipts, simulate messages until that many receipts were written
        messages = args.messages if args.receipts is None else max(args.messages, args.receipts)
        opts = dict(seed=args.seed, profile=profile, messages=messages, lifetime_s=args.lifetime)
        if args.kafka:
            stream = simulate_timed(**opts)
            return write_kafka_dump(args.out, itertools.islice(stream, args.receipts) if args.receipts else stream)
        stream = simulate(**opts)
        return write_jsonl(args.out, itertools.islice(stream, args.receipts) if args.receipts else stream)

    def explain(self, rule_id: str) -> dict[str, Any]:
        from rmkit.conformance.remp.explain import explain_rule

        return explain_rule(rule_id)

    def diagram(self, profile: str) -> str:
        from rmkit.conformance.remp.docs import status_diagram

        return status_diagram(self.model(profile))

    def docs(self) -> str:
        from rmkit.conformance.remp.docs import spec_markdown

        return spec_markdown()


PROTOCOL = Remp()
