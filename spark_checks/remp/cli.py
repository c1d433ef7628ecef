"""``rmkit audit --protocol remp``: options and entry point (filled in below)."""

from __future__ import annotations

import argparse


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--lifetime", type=float, metavar="S", help="mc_catchain_lifetime in seconds (default: the spec's 250)")
    group.add_argument("--horizon", type=float, metavar="S", help="liveness horizon in seconds")


def run(profile: str, args: argparse.Namespace) -> int:
    raise SystemExit(2)
