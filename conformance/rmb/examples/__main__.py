"""``python -m rmkit.conformance.rmb.examples NAME serve ARGS``: a variant daemon, with the options
of ``rmkit rmb serve``."""

from __future__ import annotations

import argparse
import sys

from rmkit.conformance.rmb.examples.variants import VARIANTS


def main(argv: list[str] | None = None) -> int:
    from rmkit.errors import RmkitError
    from rmkit.reference_impl.rmb import cli as daemon_cli

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in VARIANTS:
        print(f"usage: python -m rmkit.conformance.rmb.examples NAME serve ...; NAME one of {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    cls = VARIANTS[argv.pop(0)]
    p = argparse.ArgumentParser(prog="rmb-variant")
    daemon_cli.add_commands(p.add_subparsers(dest="rmb_command", required=True))
    args = p.parse_args(argv)
    if args.rmb_command != "serve":
        print("only `serve` runs a variant", file=sys.stderr)
        return 2
    try:
        return daemon_cli.cmd_serve(args, daemon_class=cls)
    except RmkitError as exc:
        print(f"rmb-variant: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
