"""``rmkit simulate`` for REMP: the shard simulator's options and how its log is written.

Two forms. ``-o FILE`` writes one log file (``-`` for stdout), as it always did. ``-o DIR`` writes
a multi-file log with a manifest (:mod:`.bulk_sim`, in parallel processes): DIR is chosen when the
path is an existing directory or ends with ``/``, or when any of ``--files``, ``--violations``,
``--jobs``, ``--gzip`` is given.
"""

from __future__ import annotations

import argparse
import os
import sys

from rmkit.errors import UsageError
from rmkit.guard import finite_float, positive_seconds

EPILOG = """\
one file or a directory:
  -o FILE writes one log (.gz compresses; - for stdout). -o DIR writes a multi-file log: DIR is
  used when it is an existing directory or ends with '/', or when --files, --violations, --jobs or
  --gzip is given. DIR gets part-00000.jsonl, part-00001.jsonl, ... (one simulated period of the
  same shard each; about one file per million receipts unless --files) and manifest.json. The
  same --seed gives the same files whatever --jobs is; a one-file log equals the -o FILE log.

manifest.json (format rmkit-simulate-manifest/1):
  parameters (seed, messages, validators, profile, lifetime_s, kafka, keys, violations_rate),
  "check" (settings to check with), "files" ([{file, part, seed, messages, start_ms, lines,
  receipts, bytes, sha256}]), "rules" ({planted: [...], not_planted: {rule: why}}),
  "violations" ([{rule, message_id, file, lines, plant, aimed, injector}]: one entry per rule a
  planted change breaks; lines are 1-based lines of the receipts it added or changed),
  "natural" (same shape: what the clean simulation breaks without a plant: REMP-LIVE-001 of a
  message the lossy network kept from every validator, possible with few --validators, and
  ever-node's non-strict REMP-LIVE-001 of a message every collator rejects) and "missed" (rules
  a file had no fitting message for).
  A correct check of all files in order finds exactly the (rule, message_id) pairs of
  "violations" and "natural"; REMP-INPUT-001 has message_id null and is matched by (file, line).

examples:
  rmkit simulate --messages 2000 -o sim.jsonl
  rmkit simulate --messages 500000 --violations 0.001 --jobs 2 -o big/
  rmkit check --lifetime 250 big/part-*.jsonl
"""


DEFAULT_VALIDATORS = 7


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.description = EPILOG
    group.add_argument("--messages", type=int, default=1000, help="number of external messages (default 1000)")
    group.add_argument("--receipts", type=int, help="stop after this many receipts instead (one file only)")
    group.add_argument("--validators", type=int, metavar="V",
                       help=f"validators per master session (default {DEFAULT_VALIDATORS}; with --keys, the key set's)")
    group.add_argument("--kafka", action="store_true", help="write a Kafka dump (topic, partition, offset, timestamp, key, value)")
    group.add_argument("--lifetime", type=positive_seconds, metavar="S", help="mc_catchain_lifetime in seconds (default: the spec's)")
    group.add_argument("--keys", metavar="DIR", help="sign every receipt with the keys of DIR (written by `rmkit keys gen`): "
                                                     "its sessions' validators and its full node run the shard")
    group.add_argument("--files", type=int, metavar="K", help="multi-file log: number of files (default: one per ~1M receipts)")
    group.add_argument("--violations", type=finite_float, metavar="RATE",
                       help="multi-file log: plant violations in this fraction of messages (e.g. 0.001), "
                            "rotating over the rules that have an injector; listed in manifest.json, whose "
                            "rules.not_planted names the rules left out and why")
    group.add_argument("--jobs", type=int, metavar="J", help="multi-file log: parallel processes (default: one per core)")
    group.add_argument("--gzip", action="store_true", help="multi-file log: write part-NNNNN.jsonl.gz")


LONGEST_LIFETIME_S = 3600  # above, the simulator spends its time ticking through empty sessions (spec: 250)
_DIRECTORY_ONLY = ("--files", "--violations", "--jobs", "--gzip")


def _directory_options(args: argparse.Namespace) -> list:
    given = (args.files is not None, args.violations is not None, args.jobs is not None, args.gzip)
    return [flag for flag, on in zip(_DIRECTORY_ONLY, given) if on]


def wants_directory(args: argparse.Namespace) -> bool:
    """The documented rule telling ``-o DIR`` from ``-o FILE``."""
    out = args.out
    if out == "-":
        return False
    return os.path.isdir(out) or out.endswith(("/", os.sep)) or bool(_directory_options(args))


def run(profile: str, args: argparse.Namespace) -> int:
    if args.messages < 1 or (args.receipts is not None and args.receipts < 1):
        raise UsageError(f"--messages and --receipts: expected numbers >= 1, found {args.messages} and {args.receipts}")
    if args.lifetime is not None:
        from rmkit.reference_impl.remp.simulator import shortest_lifetime_s

        shortest = shortest_lifetime_s(profile)
        if not shortest <= args.lifetime <= LONGEST_LIFETIME_S:
            # below, its sessions end earlier than the spec lets a Timeout come (REMP-EXPIRY-002)
            raise UsageError(f"--lifetime: the simulator takes {shortest}..{LONGEST_LIFETIME_S} seconds, found "
                             f"{args.lifetime:g} (below {shortest} s its sessions, less the time a switch waits for "
                             f"its last round, would end before the spec's earliest Timeout)")
    if args.out == "-" and _directory_options(args):
        raise UsageError(f"{', '.join(_directory_options(args))}: apply to a multi-file log (-o DIR); -o - writes "
                         f"one log to stdout")
    if getattr(args, "keys", None) and args.validators is not None:
        raise UsageError("--validators: with --keys, each master session runs the validators its key set lists; "
                         "leave --validators out (or write a key set with rmkit keys gen --validators N)")
    if args.validators is None:
        args.validators = DEFAULT_VALIDATORS
    if not 1 <= args.validators <= 1000:
        raise UsageError(f"--validators: expected a number from 1 to 1000, found {args.validators}")
    if wants_directory(args):
        return _run_directory(profile, args)
    return _run_file(profile, args)


def _run_file(profile: str, args: argparse.Namespace) -> int:
    import itertools

    from rmkit.reference_impl.remp import simulate, simulate_timed, write_jsonl, write_kafka_dump

    # with --receipts, simulate messages until that many receipts were written
    messages = args.messages if args.receipts is None else max(args.messages, args.receipts)
    opts = dict(seed=args.seed, profile=profile, messages=messages, lifetime_s=args.lifetime, validators=args.validators)
    if getattr(args, "keys", None):
        from rmkit.protocols.remp.signing import load_key_set

        opts["keys"] = load_key_set(args.keys)
    from rmkit.progress import counted

    stream = simulate_timed(**opts) if args.kafka else simulate(**opts)
    stream = counted(itertools.islice(stream, args.receipts) if args.receipts else stream, "rmkit simulate",
                     "receipts written", total=args.receipts)
    return (write_kafka_dump if args.kafka else write_jsonl)(args.out, stream)


def _run_directory(profile: str, args: argparse.Namespace) -> int:
    from rmkit.conformance.remp.bulk_sim import BulkConfig, generate

    if args.receipts is not None:
        raise UsageError("--receipts: applies to a one-file log (-o FILE); a directory log is sized by --messages")
    if args.files is not None and not 1 <= args.files <= args.messages:
        raise UsageError(f"--files: expected 1 to --messages ({args.messages}), found {args.files}")
    if args.violations is not None and not 0 <= args.violations <= 1:
        raise UsageError(f"--violations: expected a fraction of messages between 0 and 1, found {args.violations}")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs: expected a number >= 1, found {args.jobs}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"-o {args.out}: expected a directory for a multi-file log, found a file")
    keys = os.path.abspath(args.keys) if getattr(args, "keys", None) else None
    if keys is not None:
        from rmkit.protocols.remp.signing import load_key_set

        load_key_set(keys)  # fail here, before any process starts, on a bad key folder
    cfg = BulkConfig(seed=args.seed, messages=args.messages, validators=args.validators, profile=profile,
                     lifetime_s=args.lifetime, files=args.files, violations=args.violations or 0.0,
                     kafka=args.kafka, gzip=args.gzip, keys=keys)

    def progress(entry: dict) -> None:
        print(f"  {entry['file']}: {entry['receipts']:,} receipts", file=sys.stderr)

    manifest = generate(cfg, args.out, jobs=args.jobs, progress=progress)
    planted = len({v["plant"] for v in manifest["violations"]})
    print(f"{len(manifest['files'])} files, {planted} planted violations ({len(manifest['violations'])} expected findings, "
          f"{len(manifest['natural'])} natural), manifest {os.path.join(args.out, 'manifest.json')}",
          file=sys.stderr)
    return sum(f["receipts"] for f in manifest["files"])
