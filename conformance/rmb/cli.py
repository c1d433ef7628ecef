"""``rmkit rmb ...``: sign and verify v1 messages, run a reference daemon, start N twins.

Errors are the shared contract's (:func:`rmkit.guard.run_guarded` runs every command): exit 2
with one line for a usage error, unreadable input or an environment problem; with ``--debug``,
the traceback of an internal error.

Exit codes (each command's help has its own): 0 every message signed / every signature valid /
the daemons stopped cleanly; 1 verify: a signature or message is invalid; 2 usage errors,
unreadable or malformed input, a daemon that cannot start or died, an internal error.
"""

from __future__ import annotations

import argparse
import json
import sys

from rmkit.errors import UsageError
from rmkit.reference_impl.rmb.cli import INTERNAL  # the wording of an internal error, the same in every rmb command

RMB_EXIT_CODES = f"""exit codes (each command's --help gives its own):
  0  every message signed / every signature valid / the daemons stopped cleanly
  1  verify: some message is invalid (bad signature, unknown source twin, broken schema)
  2  usage error, unreadable or malformed input (reported as FILE:LINE), a daemon or recorder
     that cannot start or that died,
     {INTERNAL}"""

SIGN_EXIT_CODES = f"""exit codes:
  0  every message signed
  2  usage error, unreadable input, or a message that is not a well-formed RMB v1 message
     (each reported as FILE:LINE with its rule and field; then nothing is signed),
     {INTERNAL}"""

VERIFY_EXIT_CODES = f"""exit codes:
  0  every signature valid
  1  some message is invalid (bad signature, unknown source twin, broken schema)
  2  usage error, unreadable input (reported as FILE:LINE),
     {INTERNAL}"""


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rmb", help="RMB v1: sign and verify messages, run reference daemons",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=RMB_EXIT_CODES,
                       description="RMB v1 tools. Messages are JSON (one object, an array, or JSON Lines; '-' reads stdin).\n"
                                   "The signature is spec/rmb/signature.yaml: MD5 of the challenge, raw digest signed,\n"
                                   "sig = hex(prefix 'e' ed25519 | 's' sr25519 + 64-byte signature).")
    rsub = p.add_subparsers(dest="rmb_command", metavar="RMB_COMMAND")
    s = rsub.add_parser("sign", help="sign well-formed v1 messages; prints the signed JSON (one per line)", epilog=SIGN_EXIT_CODES,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    key = s.add_mutually_exclusive_group(required=True)
    key.add_argument("--seed", metavar="HEX", help="the 32-byte seed, 64 hex digits (0x optional)")
    key.add_argument("--mnemonic", metavar="WORDS", help="a BIP39 mnemonic (or 0x + 64 hex digits), derived as @polkadot/keyring does")
    s.add_argument("--key-type", choices=("ed25519", "sr25519"), required=True)
    s.add_argument("input", metavar="MESSAGE.json", help="message(s) to sign, '-' for stdin")
    s.set_defaults(func=cmd_sign)
    v = rsub.add_parser("verify", help="verify the signatures of messages", epilog=VERIFY_EXIT_CODES,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    who = v.add_mutually_exclusive_group(required=True)
    who.add_argument("--public-key", metavar="HEX", help="the signer's 32-byte public key (needs --key-type)")
    who.add_argument("--directory", metavar="FILE", help="twin directory (spec/schema/rmb-directory.schema.json): the key of each message's src")
    v.add_argument("--key-type", choices=("ed25519", "sr25519"),
                   help="the key type of --public-key (with --directory a usage error: the directory gives each twin's)")
    v.add_argument("--format", choices=("text", "jsonl"), default="text")
    v.add_argument("input", metavar="MESSAGE.json", help="message(s) to verify, '-' for stdin")
    v.set_defaults(func=cmd_verify, verdict=True)
    from rmkit.reference_impl.rmb import cli as daemon_cli

    daemon_cli.add_commands(rsub)
    p.set_defaults(func=lambda args: _group_help(p))


def _group_help(p: argparse.ArgumentParser) -> int:
    p.print_help(sys.stderr)
    return 2


def _reason(field: str | None, what: str) -> str:
    """How sign and verify word one way a message is not a well-formed v1 message."""
    return f"field {field or '(top)'}: {what}"


def cmd_sign(args) -> int:
    from rmkit.conformance.rmb.messages_io import read_messages
    from rmkit.protocols.rmb.model import message_problems
    from rmkit.protocols.rmb.signing import keypair, seed_from_hex, seed_from_mnemonic

    seed = seed_from_hex(args.seed) if args.seed else seed_from_mnemonic(args.mnemonic)
    kp = keypair(seed, args.key_type)
    read = read_messages(args.input)
    shown = "<stdin>" if args.input == "-" else args.input
    problems = list(read.problems)
    for line, msg in read.messages:
        # the message as verify will see it: sig is what signing sets, whatever the input had
        problems += [f"{shown}:{line}: {rule}: {_reason(field, what)}"
                     for rule, field, what in message_problems({k: v for k, v in msg.items() if k != "sig"})]
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"nothing signed: {len(problems)} problem(s) in {shown} (a message must be a well-formed RMB v1 message "
              f"before it is signed)", file=sys.stderr)
        return 2
    for _, msg in read.messages:
        sys.stdout.write(json.dumps(kp.sign(msg), ensure_ascii=False) + "\n")
    print(f"signed {len(read.messages)} message(s) with {args.key_type} key {kp.public.hex()}", file=sys.stderr)
    return 0


def cmd_verify(args) -> int:
    from rmkit.protocols.rmb.keys import Directory
    from rmkit.conformance.rmb.messages_io import read_messages
    from rmkit.protocols.rmb.model import message_problems
    from rmkit.protocols.rmb.signing import public_key_from_hex, public_key_problem, signature_verdict

    if args.public_key and not args.key_type:
        raise UsageError("--public-key needs --key-type ed25519|sr25519")
    if args.directory and args.key_type:
        raise UsageError(f"--key-type {args.key_type}: only with --public-key; with --directory each twin's key type is the directory's")
    directory = Directory.load(args.directory) if args.directory else None
    fixed = public_key_from_hex(args.public_key) if args.public_key else None
    if fixed is not None and public_key_problem(fixed, args.key_type):
        raise UsageError(f"--public-key: {public_key_problem(fixed, args.key_type)}")
    read = read_messages(args.input)
    shown = "<stdin>" if args.input == "-" else args.input
    counts = {"valid": 0, "invalid": 0}
    for line, msg in read.messages:
        rule, reason, used = None, "", None
        problems = message_problems(msg)
        if problems:
            rule, field, what = problems[0]
            reason = _reason(field, what)
        elif directory is not None:
            twin = directory.get(msg["src"])
            if twin is None:
                rule, reason = "RMB-REMOTE-003", f"unknown source twin {msg['src']} (not in {args.directory})"
            else:  # as `rmkit check --directory` judges a signature (a twin's key that is no key: this line's finding)
                rule, reason, used = signature_verdict(msg, twin.public_key, twin.key_type, f"twin {twin.id}'s")
        else:
            rule, reason, used = signature_verdict(msg, fixed, args.key_type, "the given")
        status = "valid" if rule is None else "invalid"
        counts[status] += 1
        if args.format == "jsonl":
            print(json.dumps({"line": line, "uid": msg.get("uid"), "status": status, "rule": rule, "reason": reason or None,
                              "key_type": used}, ensure_ascii=False))
        else:
            print(f"{shown}:{line}: {status}" + (f" ({used}) uid={msg.get('uid')!r}" if rule is None else f": {rule}: {reason}"))
    for problem in read.problems:
        print(problem, file=sys.stderr)
    print(f"{counts['valid']} valid, {counts['invalid']} invalid, {len(read.problems)} unreadable", file=sys.stderr)
    if read.problems:
        return 2
    return 1 if counts["invalid"] else 0
