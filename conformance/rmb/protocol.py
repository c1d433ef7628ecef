"""RMB v1 as an rmkit protocol (entry point ``rmb``): the spec, the rule set, the docs, and the
``rmkit rmb`` commands (sign, verify, serve, up), and the log checker (``rmkit check/audit --protocol rmb``)."""

from __future__ import annotations

import argparse
from typing import Any

from rmkit.errors import UsageError
from rmkit.guard import positive_seconds
from rmkit.protocol import ChecksLogs, DrivesImplementations, FixtureFile, Protocol
from rmkit.rules import RuleSet
from rmkit.verdict import Nouns


HELP = {
    "check": "message logs: a daemon's own log, or a recorder's between daemons (several files are one log); "
             "records are judged per request (its uid).",
    "conform": "--impl-cmd starts the daemon under test, which is driven at its wire (its Redis and HTTP); "
               "--jobs N runs N daemons side by side. The contract (placeholders, twins, windows, --jobs) is in "
               "spec/rmb/daemon.md.",
    "impl-cmd": "the daemon under test; no ROLE, but the placeholders {python} {redis} {twin} {key_file} {seed} "
                "{key_type} {directory} {listen} {host} {port} {profile} {workdir} are replaced (their meanings: "
                "--rmb-workdir in `rmkit conform --help`).",
    "scenario file": "one JSON object (rmb-PROFILE-DIGEST.json).",
}


class Rmb(ChecksLogs, DrivesImplementations, Protocol):
    name = "rmb"
    title = "ThreeFold Reliable Message Bus v1"
    nouns = Nouns(records="records", subject="request", subjects="requests")

    def help_text(self, topic: str) -> str:
        return HELP.get(topic, "")

    def spec(self) -> dict[str, Any]:
        from rmkit.protocols.rmb.model import rmb_spec

        return rmb_spec().raw

    def rules(self) -> RuleSet:
        from rmkit.protocols.rmb.model import rmb_spec

        return rmb_spec().rules

    def profiles(self) -> dict[str, str]:
        profs = self.spec()["protocol"]["profiles"]
        ordered = sorted(profs, key=lambda p: not profs[p].get("default", False))
        return {p: " ".join(profs[p]["description"].split()) for p in ordered}

    def validate(self) -> list[str]:
        from rmkit.protocols.rmb.model import rmb_spec

        s = rmb_spec()
        behaviour = s.raw["behaviour"]
        return [f"{len(s.rules)} rules, {len(s.fields)} message fields, {len(behaviour['settings'])} behaviour settings "
                f"and {len(behaviour['ambiguities'])} ambiguities for profiles {', '.join(s.profiles)}; "
                f"the challenge covers every signed field"]

    def add_check_arguments(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--directory", metavar="FILE",
                           help="the twin directory (JSON or YAML, spec/schema/rmb-directory.schema.json): with it every "
                                "posted message's signature is verified (RMB-SIG-002..004, RMB-REMOTE-003, RMB-REPLY-007, "
                                "RMB-DIR-001; otherwise reported as not checked)")
        group.add_argument("--horizon", type=positive_seconds, metavar="S",
                           help="judge a follow-up the log should show (a POST, an error on ret) only when the log goes "
                                "on S seconds after its cause (default: spec/rmb/logcheck.yaml's horizon_s)")

    def make_checker(self, profile: str, args: argparse.Namespace):
        from rmkit.conformance.rmb.checker import make_checker

        return make_checker(self.check_profile(profile), args)

    def sharded_checker(self, profile: str, args: argparse.Namespace):
        from rmkit.conformance.rmb.checker import sharded_checker

        return sharded_checker(self.check_profile(profile), args)

    def add_conform_arguments(self, group: argparse._ArgumentGroup) -> None:
        from rmkit.conformance.rmb.driven.cli import add_arguments

        add_arguments(group)

    def rule_fixture_options(self, manifest: dict[str, Any], entry: dict[str, Any]) -> list:
        # the signature rules' fixtures are checked against the fixtures' twin directory
        return ["--directory", FixtureFile(manifest["directory"])] if entry["directory"] else []

    def diagram(self, profile: str) -> str:
        from rmkit.conformance.rmb.docs import flow_diagram

        return flow_diagram(self.check_profile(profile))

    def docs(self) -> str:
        from rmkit.conformance.rmb.docs import spec_markdown

        return spec_markdown()

    def add_commands(self, sub: argparse._SubParsersAction) -> None:
        from rmkit.conformance.rmb.cli import add_commands

        add_commands(sub)


PROTOCOL = Rmb()
