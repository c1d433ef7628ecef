"""``rmkit receipt encode | sign | verify``: single receipts of a REMP log, one line each. The
command is REMP's own (the protocol adds it to the command line, :meth:`Remp.add_commands`): a
receipt, its TL encoding and its signature encodings are REMP's.

Input is what ``rmkit check`` reads (JSONL receipts or a Kafka dump, plain or gzip, ``-`` for
stdin). A line that cannot be read or converted is reported on stderr as ``FILE:LINE: field F:
what was expected, what was found`` and the run goes on; the exit code says so at the end.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, Iterator

import orjson

from rmkit.errors import UsageError
from rmkit.logread import iter_line_batches, kafka_value_field, unwrap_kafka

EXIT_OK, EXIT_NOT_VALID, EXIT_INPUT = 0, 1, 2


ACTIONS = {
    "encode": ("print each record's signed bytes as hex",
               "Print, for each receipt (JSONL line, or Kafka record), the bytes its source signs\n"
               "as lowercase hex, one line per receipt: the boxed TL receipt.",
               "exit codes:\n  0  every record encoded\n  2  usage error, or some lines could not be read or encoded\n"
               "     (each reported on stderr with file:line and field)"),
    "sign": ("sign records with a private key",
             "Write each receipt signed with the given key (its source id set to the key's id when\n"
             "it has none), in the profile's signature encoding. Kafka records keep their layout.",
             "exit codes:\n  0  every record signed\n  2  usage error, or some lines could not be read or signed\n"
             "     (each reported on stderr with file:line and field)"),
    "verify": ("verify records' signatures against a set of public keys",
               "Report for each receipt: valid, invalid, unknown-source, unsigned or malformed, with\n"
               "the reason; then the counts. A signature is valid only in the profile's encoding (hex\n"
               "for the spec profile, base64 for ever-node), as rmkit check judges it; one that\n"
               "verifies in another encoding is malformed.",
               "exit codes:\n  0  every record is valid (or unsigned where the profile allows it)\n"
               "  1  some records are not valid\n  2  usage error, unreadable input lines, or no record at all"),
}


def add_command(sub: argparse._SubParsersAction) -> None:
    """``rmkit receipt ACTION``: its parser, each action's options and help."""
    r = sub.add_parser("receipt", help="encode, sign and verify a REMP log's receipts one by one",
                       description="Work on single receipts of a REMP log: their signed bytes, signing, verification.")
    rsub = r.add_subparsers(dest="receipt_action", metavar="ACTION")
    for action, (short, desc, codes) in ACTIONS.items():
        a = rsub.add_parser(action, formatter_class=argparse.RawDescriptionHelpFormatter, help=short, epilog=codes,
                            description=desc)
        a.add_argument("input", nargs="?", default="-", metavar="FILE",
                       help="JSONL receipts or a Kafka dump, plain or .gz (default: - for stdin)")
        # kept for the command lines written when the command was the core's: REMP is its only protocol
        a.add_argument("--protocol", choices=["remp"], default="remp", metavar="NAME", help="remp (the default)")
        a.add_argument("--profile", help="spec profile (default: the protocol's default)")
        a.add_argument("-o", "--out", metavar="FILE", help="write to FILE instead of stdout")
        add_arguments(action, a.add_argument_group("remp options"))
        a.set_defaults(func=command, verdict=True)
    r.set_defaults(func=lambda args: (r.print_help(), EXIT_INPUT)[1])


def command(args: argparse.Namespace) -> int:
    """Run ``rmkit receipt ACTION`` on ``args.input`` (a path or ``-``); return the exit code."""
    import os

    from rmkit.protocol import get_protocol

    if args.input != "-" and not os.path.exists(args.input):
        raise UsageError(f"FILE {args.input!r}: no such file")
    return run(args.receipt_action, get_protocol(args.protocol).check_profile(args.profile), args)


def add_arguments(action: str, group: argparse._ArgumentGroup) -> None:
    if action == "sign":
        group.add_argument("--key", required=True, metavar="KEYFILE",
                           help="private key file (spec/remp/keys.md; `rmkit keys gen` writes them)")
        group.add_argument("--replace-source", action="store_true",
                           help="sign receipts that name another source_id too, replacing it by the key's id "
                                "(default: such a receipt is an error)")
    elif action == "verify":
        group.add_argument("--validators", required=True, metavar="FILE",
                           help="validator-set file with public keys (spec/remp/keys.md)")
        group.add_argument("--problems-only", action="store_true", help="print only the receipts that are not valid")
        group.add_argument("--format", choices=("text", "jsonl"), default="text",
                           help="one text line per receipt, or one JSON object per receipt and a summary object")


class _Reader:
    """Yields ``(lineno, record, receipt, kafka_time)`` for each receipt of one input and reports
    the lines that are not receipts."""

    def __init__(self, path: str, err: IO[str]):
        self.path = path
        self.shown = "<stdin>" if path == "-" else path
        self.err = err
        self.problems = 0

    def problem(self, lineno: int, message: str, field: str | None = None) -> None:
        self.problems += 1
        if field and message.startswith(f"{field}: "):
            message = message[len(field) + 2:]
        self.err.write(f"rmkit: {self.shown}:{lineno}: {('field ' + field + ': ') if field else ''}{message}\n")

    def __iter__(self) -> Iterator[tuple[int, dict, dict, int | None]]:
        from rmkit.protocols.remp.tlreceipt import recover_master_file_hash

        loads, JSONDecodeError = orjson.loads, orjson.JSONDecodeError
        lineno = 0
        for batch in iter_line_batches(self.path, on_error=self.problem):
            for line in batch:
                lineno += 1
                if not line.strip():
                    continue
                try:
                    rec = loads(line)
                except JSONDecodeError as exc:
                    self.problem(lineno, f"not JSON: {exc}")
                    continue
                if type(rec) is not dict:
                    self.problem(lineno, f"expected a JSON object, found {type(rec).__name__}")
                    continue
                receipt, kts, text = rec, None, line
                if kafka_value_field(rec) is not None:  # a Kafka record or kcat -J envelope
                    receipt, kts, text, err, fld = unwrap_kafka(rec)
                    if err:
                        self.problem(lineno, err, fld)
                        continue
                    if receipt is None:  # a Kafka tombstone: no receipt
                        continue
                receipt = recover_master_file_hash(receipt, text if text is not None else line)
                yield lineno, rec, receipt, kts


def _field_of(exc: Exception) -> str | None:
    for attr in ("field", "path"):
        v = getattr(exc, attr, None)
        if isinstance(v, str) and v:
            return v
    return None


def _open_out(args) -> IO[str]:
    if not getattr(args, "out", None) or args.out == "-":
        return sys.stdout
    try:
        return open(args.out, "w", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--out {args.out}: cannot write ({exc.strerror})") from None


def run(action: str, profile: str, args: argparse.Namespace) -> int:
    out = _open_out(args)
    try:
        return {"encode": encode, "sign": sign, "verify": verify}[action](profile, args, out, sys.stderr)
    finally:
        if out is not sys.stdout:
            out.close()


def encode(profile: str, args, out: IO[str], err: IO[str]) -> int:
    from rmkit.protocols.remp.tlreceipt import signed_bytes

    reader = _Reader(args.input, err)
    n = 0
    for lineno, _, receipt, _ in reader:
        try:
            data = signed_bytes(receipt)
        except ValueError as exc:  # ReceiptConversionError, or the TL codec's TlError
            reader.problem(lineno, str(exc), _field_of(exc))
            continue
        out.write(data.hex() + "\n")
        n += 1
    err.write(f"encoded {n:,} receipt(s)" + (f"; {reader.problems:,} line(s) could not be read or encoded\n" if reader.problems else "\n"))
    return EXIT_INPUT if reader.problems or n == 0 else EXIT_OK


def sign(profile: str, args, out: IO[str], err: IO[str]) -> int:
    from rmkit.protocols.remp.signing import SigningError, load_private_key, sign_receipt

    key = load_private_key(args.key)
    reader = _Reader(args.input, err)
    n = 0
    dumps = orjson.dumps
    for lineno, rec, receipt, _ in reader:
        try:
            signed = sign_receipt(receipt, key.seed, profile, replace_source=args.replace_source)
        except SigningError as exc:
            reader.problem(lineno, str(exc), exc.field)
            continue
        field = kafka_value_field(rec)
        if field is not None:  # a Kafka record or kcat -J envelope: keep its layout (value as an object or a string)
            rec = dict(rec)
            rec[field] = dumps(signed).decode() if isinstance(rec[field], str) else signed
            signed = rec
        out.write(dumps(signed).decode() + "\n")
        n += 1
    err.write(f"signed {n:,} receipt(s) as {key.id}" + (f"; {reader.problems:,} line(s) could not be read or signed\n" if reader.problems else "\n"))
    return EXIT_INPUT if reader.problems or n == 0 else EXIT_OK


def verify(profile: str, args, out: IO[str], err: IO[str]) -> int:
    from rmkit.protocols.remp.model import model_for
    from rmkit.protocols.remp.signing import MALFORMED, STATUSES, UNSIGNED, VALID, Verifier
    from rmkit.protocols.remp.keys import load_validator_set

    valset = load_validator_set(args.validators)
    if not valset.has_keys:
        raise UsageError(f"--validators {args.validators}: lists source ids only; verifying needs the public keys "
                         "(the keyed form of spec/remp/keys.md)")
    verifier = Verifier(valset)
    model = model_for(profile)
    unsigned_ok = model.unsigned_roles
    kinds = model.kinds
    encoding_ok = model.signature_check  # the profile's signature format, as rmkit check's REMP-SIG-001 reads it
    reader = _Reader(args.input, err)
    counts = dict.fromkeys(STATUSES, 0)
    allowed_unsigned = 0
    jsonl = args.format == "jsonl"
    for lineno, _, receipt, kts in reader:
        ts = receipt.get("timestamp")
        at = ts if type(ts) is int and ts > 0 else kts
        status, reason = verifier.verify(receipt, at)
        if status == VALID and not encoding_ok(receipt["signature"]):
            # the bytes verify, but not as the profile writes them: rmkit check would flag REMP-SIG-001
            status, reason = MALFORMED, (f"signature: expected {model.signature_expected} (the {profile} profile's "
                                         f"encoding); the signature verifies in another encoding")
        counts[status] += 1
        if status == UNSIGNED:
            src = receipt.get("source_id")
            role = valset.roles.get(src.lower()) if isinstance(src, str) else None
            ki = kinds.get(receipt.get("kind")) if isinstance(receipt.get("kind"), str) else None
            if (role in unsigned_ok) if role else (ki is not None and ki.issuers & unsigned_ok):
                allowed_unsigned += 1
                reason += f" (allowed for a {role or 'validator'} in the {profile} profile)"
        if status == VALID and args.problems_only:
            continue
        kind = receipt.get("kind")
        mid = receipt.get("message_id")
        if jsonl:
            out.write(orjson.dumps({"file": reader.shown, "line": lineno, "status": status, "reason": reason,
                                    "kind": kind, "message_id": mid, "source_id": receipt.get("source_id")}).decode() + "\n")
        else:
            what = f"{kind if isinstance(kind, str) else '?'} {str(mid)[:16] if mid is not None else '-'}"
            out.write(f"{reader.shown}:{lineno}: {status}: {what}" + (f": {reason}" if reason else "") + "\n")
    total = sum(counts.values())
    bad = total - counts[VALID] - allowed_unsigned
    if jsonl:
        out.write(orjson.dumps({"summary": {"receipts": total, **counts, "unsigned_allowed": allowed_unsigned,
                                            "unreadable": reader.problems}}).decode() + "\n")
    else:
        parts = ", ".join(f"{counts[s]:,} {s}" for s in STATUSES)
        out.write(f"{total:,} receipt(s): {parts}" + (f" ({allowed_unsigned:,} unsigned as the {profile} profile allows)" if allowed_unsigned else "")
                  + (f"; {reader.problems:,} unreadable line(s)" if reader.problems else "") + "\n")
    if reader.problems or total == 0:
        return EXIT_INPUT
    return EXIT_NOT_VALID if bad else EXIT_OK
