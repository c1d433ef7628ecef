"""``rmkit simulate`` for REMP: the shard simulator's options and how its log is written."""

from __future__ import annotations

import argparse

from rmkit.errors import UsageError


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--messages", type=int, default=1000, help="number of external messages (default 1000)")
    group.add_argument("--receipts", type=int, help="stop after this many receipts instead")
    group.add_argument("--kafka", action="store_true", help="write a Kafka dump (topic, partition, offset, timestamp, key, value)")
    group.add_argument("--lifetime", type=float, metavar="S", help="mc_catchain_lifetime in seconds (default: the spec's)")
    group.add_argument("--keys", metavar="DIR", help="sign every receipt with the keys of DIR (written by `rmkit keys gen`): "
                                                     "its sessions' validators and its full node run the shard")


def run(profile: str, args: argparse.Namespace) -> int:
    import itertools

    from rmkit.reference_impl.remp import simulate, simulate_timed, write_jsonl, write_kafka_dump

    if args.messages < 1 or (args.receipts is not None and args.receipts < 1):
        raise UsageError("--messages and --receipts: expected numbers >= 1")
    if args.lifetime is not None and args.lifetime <= 0:
        raise UsageError(f"--lifetime: expected a number of seconds > 0, found {args.lifetime}")
    # with --receipts, simulate messages until that many receipts were written
    messages = args.messages if args.receipts is None else max(args.messages, args.receipts)
    opts = dict(seed=args.seed, profile=profile, messages=messages, lifetime_s=args.lifetime)
    if getattr(args, "keys", None):
        from rmkit.conformance.remp.signing import load_key_set

        opts["keys"] = load_key_set(args.keys)
    if args.kafka:
        stream = simulate_timed(**opts)
        return write_kafka_dump(args.out, itertools.islice(stream, args.receipts) if args.receipts else stream)
    stream = simulate(**opts)
    return write_jsonl(args.out, itertools.islice(stream, args.receipts) if args.receipts else stream)
