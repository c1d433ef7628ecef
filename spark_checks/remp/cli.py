"""``rmkit audit --protocol remp``: the REMP options and the run (exit codes: AUDIT_EXIT_CODES)."""

from __future__ import annotations

import argparse
import sys

from rmkit.errors import InputError, UsageError
from rmkit.guard import positive_seconds

EXIT_PASS, EXIT_VIOLATIONS, EXIT_USAGE = 0, 1, 2


def add_arguments(group) -> None:
    group.add_argument("--lifetime", type=positive_seconds, metavar="S",
                       help="mc_catchain_lifetime in seconds (default: the spec's 250), as for `rmkit check`")
    group.add_argument("--horizon", type=positive_seconds, metavar="S",
                       help="judge a message lost when it has no final outcome S seconds after its first receipt "
                            "(default: the profile's expiry bound + 60 s); messages nearer the log's end are not judged")
    group.add_argument("--max-examples", type=int, default=1000, metavar="N",
                       help="violations per rule shown in the summary (default 1000; 0: all). The violation table "
                            "in --out always holds every one")
    group.add_argument("--partitions", type=int, metavar="N",
                       help="shuffle partitions of the per-message step (default: one per 64 MB of input, at least "
                            "the session's setting: 4 in local mode, the cluster's otherwise)")


def run(profile: str, args: argparse.Namespace) -> int:
    for name in ("lifetime", "horizon"):
        value = getattr(args, name, None)
        if value is not None and value <= 0:
            raise UsageError(f"--{name}: expected a number of seconds > 0, found {value}")
    if getattr(args, "max_examples", 1000) < 0:
        raise UsageError(f"--max-examples: expected a number >= 0, found {args.max_examples}")
    from rmkit.spark_checks.session import get_session

    master = None if getattr(args, "submitted", False) else (getattr(args, "master", None) or "local[*]")
    try:
        from rmkit.spark_checks.remp.inputs import expand_paths

        expand_paths(list(args.paths))  # no input: a usage error before Spark starts
    except InputError as exc:
        print(f"rmkit audit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    spark = get_session(master, shuffle_partitions=getattr(args, "partitions", None))
    from rmkit.spark_checks.remp.job import audit
    from rmkit.spark_checks.remp.report import write_outputs

    try:
        res = audit(spark, list(args.paths), profile, lifetime_s=args.lifetime, horizon_s=args.horizon,
                    max_examples=getattr(args, "max_examples", 1000), partitions=getattr(args, "partitions", None))
    except Exception as exc:
        raise spark_input_error(exc) from None
    rep = res.report
    if getattr(args, "out", None):
        write_outputs(res, args.out, profile)
    from rmkit.protocol import get_protocol
    from rmkit.render import RENDERERS

    text = RENDERERS[getattr(args, "format", "text")](rep, rules=get_protocol("remp").rules(), color=False, title="rmkit audit")
    sys.stdout.write(text)
    if getattr(args, "out", None):
        print(f"{rep.verdict}: tables and operator's report written to {args.out}", file=sys.stderr)
    if rep.receipts == 0 and not rep.unreadable:
        print("rmkit audit: no receipts were read from the inputs", file=sys.stderr)
        return EXIT_USAGE
    if rep.unreadable:  # as rmkit check: what could not be read was not checked
        return EXIT_USAGE
    if rep.verdict == "fail" or (getattr(args, "strict", False) and rep.verdict == "non-strict"):
        return EXIT_VIOLATIONS
    return EXIT_PASS


def spark_input_error(exc: Exception) -> Exception:
    """A failure inside the Spark job that comes from the input (a corrupt or truncated gzip, a file
    removed meanwhile) as an :class:`InputError` (exit 2, as ``rmkit check``), with the JVM's
    first line instead of a Py4J traceback; any other exception unchanged."""
    text = str(exc)
    if type(exc).__module__.split(".")[0] not in ("py4j", "pyspark"):
        return exc
    markers = ("EOFException", "ZipException", "Unexpected end of input stream", "Not in GZIP format",
               "FileNotFoundException", "corrupt", "CorruptedInput", "incorrect header check")
    if not any(m in text for m in markers):
        return exc
    cause = next((ln.strip() for ln in text.splitlines() if any(m in ln for m in markers)), text.splitlines()[0])
    return InputError(f"Spark could not read the inputs: {cause[:300]}")
