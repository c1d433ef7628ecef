"""``rmkit corda up`` (brokers, bridges and nodes on loopback, a short run, stopped cleanly) and
``rmkit corda torture`` (the crash-point harness, :mod:`.torture`). The nodes and bridges are the
reference's unless ``--node-cmd`` and ``--bridge-cmd`` name others (the contract: spec/corda/node.md)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rmkit.errors import UsageError
from rmkit.guard import check_writable_dir, check_writable_file, positive_seconds, write_output

TORTURE_EXIT_CODES = """exit codes:
  0  nothing lost, nothing duplicated, every acknowledgement after its commit
  1  a message was lost or duplicated, or acknowledged before its commit (the report gives the
     crash schedule that ran while it was on its way; the same --seed replays the schedule)
  2  the harness could not do its job (no broker, a process that cannot start, usage error)"""
# the most crash cycles of a run (hours of them): the schedule is planned, and kept for the
# report, before the run starts
MAX_CYCLES = 100_000
UP_EXIT_CODES = """exit codes:
  0  every message of every flow committed once at its receiver, everything stopped cleanly
  1  a message's effect was committed twice at its receiver (a duplicate)
  2  no verdict: the cluster could not start (no broker, a process that cannot start), a broker or
     a process died during the run or did not stop cleanly, --duration ran out before every message
     was committed (and no duplicate showed), the run was interrupted (Ctrl-C, SIGTERM), usage error.
     A message that never arrives is not judged here (rmkit corda torture judges losses): the run
     waits for it until --duration or Ctrl-C."""


NODE_CMD_HELP = ("the command that starts one node (run once per node, and again after each kill), with placeholders "
                 "replaced as whole words (NODE, BROKER_PORT, INBOUND, FLOWS, DB, RECORDS, ARM, ...) and set as "
                 "RMKIT_CORDA_* environment variables: the contract is spec/corda/node.md (default: the reference node)")
BRIDGE_CMD_HELP = ("the command that starts one bridge (one per ordered pair of nodes), placeholders as for --node-cmd "
                   "(BRIDGE, LOCAL_PORT, OUTBOUND, REMOTE_PORT, INBOUND, ...; spec/corda/node.md; default: the reference bridge)")


def _add_process_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--node-cmd", metavar="CMD", help=NODE_CMD_HELP)
    p.add_argument("--bridge-cmd", metavar="CMD", help=BRIDGE_CMD_HELP)


def add_commands(sub: argparse._SubParsersAction) -> None:
    from rmkit.reference_impl.corda.variants import VARIANTS

    p = sub.add_parser("corda", help="Corda P2P on a real broker and database: start a cluster, run the crash-point harness")
    csub = p.add_subparsers(dest="corda_command", metavar="CORDA_COMMAND")
    up = csub.add_parser("up", help="start brokers, bridges and nodes on loopback, run the flows, stop",
                         formatter_class=argparse.RawDescriptionHelpFormatter, epilog=UP_EXIT_CODES,
                         description="One ActiveMQ Classic broker per node (free ports, temporary folders), a bridge per\n"
                                     "ordered pair of nodes, one node process per node (SQLite; the reference node, or\n"
                                     "--node-cmd: the contract is spec/corda/node.md). Every flow sends --messages messages\n"
                                     "to a peer; the run ends when all are committed (or after --duration seconds: no\n"
                                     "verdict then), then everything is stopped by PID.")
    up.add_argument("--nodes", default="A,B",
                    help="comma-separated node names (letters A-Z, a-z and digits: the seeds of the N- ids; default A,B)")
    up.add_argument("--flows", type=int, default=2, help="sending flows per node (default 2)")
    up.add_argument("--messages", type=int, default=50, help="messages per flow (default 50)")
    up.add_argument("--profile", default="corda-os", help="spec profile of the nodes (default corda-os)")
    up.add_argument("--duration", type=positive_seconds,
                    help="stop after this many seconds (> 0) even if not every message arrived (exit 2 then, "
                         "unless a duplicate showed)")
    up.add_argument("--dir", help="keep the run's folder here (default: a temporary folder, removed when the run passes)")
    _add_process_options(up)
    up.set_defaults(func=cmd_up)
    t = csub.add_parser("torture", help="kill -9 nodes, bridges and brokers at crash points and random times; audit",
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=TORTURE_EXIT_CODES,
                        description="Start brokers, bridges and nodes on loopback; run --cycles crash cycles planned from\n"
                                    "--seed (kill -9 of a node, a bridge or a broker at a crash point of the spec or at a\n"
                                    "random time, then a restart); drain; check from the databases that every message was\n"
                                    "committed exactly once at its receiver and from the records that every acknowledgement\n"
                                    "followed its commit. The nodes are the reference's, one of its faulty variants\n"
                                    "(--variant), or yours (--node-cmd): what a node must do, write and answer, and what\n"
                                    "the harness does at each crash point, is spec/corda/node.md.")
    t.add_argument("--seed", type=int, default=1, help="seed of the crash schedule (default 1)")
    t.add_argument("--cycles", type=int, default=200, help=f"crash cycles (default 200, at most {MAX_CYCLES})")
    t.add_argument("--flows", type=int, default=2, help="sending flows per node (default 2)")
    t.add_argument("--profile", default="corda-os", help="spec profile of the nodes (default corda-os)")
    t.add_argument("--variant", choices=VARIANTS,
                   help="the reference node (reference, the default) or a faulty variant the harness must catch: "
                        "a shorthand for the --node-cmd that runs it")
    _add_process_options(t)
    t.add_argument("--no-node-points", action="store_true",
                   help="the nodes do not read ARM (spec/corda/node.md): their crash-point cycles become kills at random times")
    t.add_argument("--no-bridge-points", action="store_true",
                   help="the bridges do not read ARM: their crash-point cycles become kills at random times")
    t.add_argument("--keep-going", action="store_true", help="run every cycle even after a violation shows")
    t.add_argument("--dir", help="the run's folder (databases, records, logs; default: a temporary folder, "
                                 "kept, and named, when the run fails or is interrupted)")
    t.add_argument("--format", choices=("text", "json"), default="text")
    t.add_argument("--out", help="also write the JSON report here")
    t.add_argument("--quiet", action="store_true", help="no line per cycle on stderr")
    t.set_defaults(func=cmd_torture, verdict=True)
    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), 2)[1])


def _need_broker() -> None:
    from rmkit.reference_impl.corda.activemq import available

    why = available()
    if why:
        raise UsageError(f"cannot start a broker: {why}")
    try:
        import stomp  # noqa: F401
    except ImportError:
        raise UsageError("the Corda node needs stomp.py: pip install 'rmkit[corda]'") from None


def _folder(arg: str | None, prefix: str) -> tuple[Path, bool]:
    if arg:
        Path(arg).mkdir(parents=True, exist_ok=True)
        if any(Path(arg).iterdir()):
            raise UsageError(f"--dir {arg}: expected an empty or new folder")
        return Path(arg), False
    return Path(tempfile.mkdtemp(prefix=prefix)), True


def _nodes(text: str) -> list[str]:
    from rmkit.reference_impl.corda.node import fits_flow_ids, n_format

    nodes = [n for n in text.split(",") if n]
    bad = [n for n in nodes if not fits_flow_ids(n)]
    if bad:
        raise UsageError(f"--nodes {text!r}: {bad[0]!r} cannot name a node: its flows' names ({bad[0]}f0, ...) are the "
                         f"seeds of their N- ids, which the spec's pattern {n_format().pattern.pattern} "
                         "(spec/corda/messages.yaml dedup_ids N) does not allow")
    if len(nodes) < 2 or len(set(nodes)) != len(nodes):
        raise UsageError(f"--nodes {text!r}: expected two or more distinct names")
    return nodes


def cmd_up(args) -> int:
    from rmkit.reference_impl.corda.cluster import Cluster
    from rmkit.reference_impl.corda.node import Policy
    from rmkit.interrupts import signals_interrupt

    nodes = _nodes(args.nodes)
    if args.flows < 1 or args.messages < 1:
        raise UsageError("--flows and --messages: expected numbers >= 1")
    check_writable_dir(args.dir, "--dir")
    _need_broker()
    policy = Policy.of_profile(args.profile)
    _commands(args)
    folder, temporary = _folder(args.dir, "rmkit-corda-up-")
    code = 2
    try:
        with signals_interrupt():   # SIGINT and SIGTERM: every process stopped, exit 2
            cluster = Cluster(folder, nodes, policy, flows=args.flows, messages=args.messages, profile=args.profile,
                              node_cmd=args.node_cmd, bridge_cmd=args.bridge_cmd)
            code = run_up(cluster, args.duration)
    finally:
        if temporary and code == 0:
            shutil.rmtree(folder, ignore_errors=True)
        elif temporary:
            print(f"the run's folder is kept: {folder}", file=sys.stderr)
    return code


def run_up(cluster, duration: float | None, poll: float = 0.5) -> int:
    """Start the cluster, wait until every message of every flow is committed at its receiver
    (or ``duration`` seconds, or a broker or process dies), stop everything by PID, say what
    happened; the exit code. Whatever ends the run (an exception, SIGINT or SIGTERM raised as an
    interruption) stops the cluster before it goes on."""
    from rmkit.reference_impl.corda.cluster import ComponentFailed, export_tables

    nodes = cluster.nodes
    t0 = time.monotonic()
    got: dict = {n: [] for n in nodes}
    done, total, died, ran_out, expected = 0, 0, [], False, {}
    try:
        try:
            cluster.start()
        except ComponentFailed as e:
            print(f"rmkit corda up: {e}", file=sys.stderr)
            return 2
        started = time.monotonic()
        print(f"{len(nodes)} brokers, {len(cluster.bridge_names())} bridges, {len(nodes)} nodes up in "
              f"{started - t0:.1f} s (folder {cluster.folder})", flush=True)
        expected = cluster.expected()
        total = sum(len(v) for v in expected.values())
        while True:
            time.sleep(poll)
            died = cluster.dead()
            got = {n: cluster.effects(n) for n in nodes}
            done = sum(len(set(got[n]) & expected[n]) for n in nodes)
            print(f"  {time.monotonic() - started:6.1f} s  committed {done}/{total}", flush=True)
            if died or done == total:
                break
            if duration is not None and time.monotonic() - started > duration:
                ran_out = True
                break
    except KeyboardInterrupt:
        print("interrupted: stopping every process; no verdict", file=sys.stderr, flush=True)
        raise
    finally:
        not_clean = cluster.stop()
    export_tables(cluster)
    dup = sum(len(got[n]) - len(set(got[n])) for n in nodes)
    once = _committed_once(got, expected) if total else 0
    span = _records_span(cluster, nodes)
    rate = f"{done / span:.1f} messages/s end to end from the first send to the last commit" if span else "no rate"
    print(f"{once} of {total} messages committed exactly once ({rate}: broker, bridge, broker, SQLite); "
          f"duplicates: {dup}; stopped")
    if died:
        print(f"rmkit corda up: during the run: {'; '.join(died)}; everything else stopped: no verdict", file=sys.stderr)
        return 2
    if not_clean:
        print(f"rmkit corda up: not stopped cleanly: {'; '.join(not_clean)}: no verdict", file=sys.stderr)
        return 2
    if dup:
        return 1
    if ran_out:
        print(f"rmkit corda up: --duration {duration:g} s ran out with {total - done} of {total} messages not committed: "
              "no verdict", file=sys.stderr)
        return 2
    return 0


def _committed_once(got: dict, expected: dict) -> int:
    """How many expected messages each receiver committed exactly once (a message committed twice
    is a duplicate, not one more message delivered as promised)."""
    from collections import Counter

    return sum(sum(1 for did, c in Counter(got[n]).items() if c == 1 and did in expected[n]) for n in got)


def _records_span(cluster, nodes) -> float:
    """Seconds from the first send to the last commit, from the nodes' records."""
    from rmkit.reference_impl.corda.records import read_events

    sent, committed = [], []
    for n in nodes:
        for e in read_events(cluster.events(n)) if cluster.events(n).exists() else []:
            (sent if e["event"] == "sent" else committed if e["event"] == "committed" else []).append(e["t"])
    return (max(committed) - min(sent)) / 1000 if sent and committed else 0.0


def _commands(args) -> None:
    """``--node-cmd`` and ``--bridge-cmd`` checked before anything starts (a usage error otherwise);
    ``--variant`` expands to the ``--node-cmd`` that runs the reference node so."""
    from rmkit.protocols.corda.nodespec import split
    from rmkit.reference_impl.corda.variants import node_cmd

    variant = getattr(args, "variant", None)
    if variant and args.node_cmd:
        raise UsageError("--variant and --node-cmd: expected one of them (--variant names a --node-cmd of the reference)")
    if variant:
        args.node_cmd = node_cmd(variant)
    for option, value in (("--node-cmd", args.node_cmd), ("--bridge-cmd", args.bridge_cmd)):
        if value is not None:
            split(value, option)


def cmd_torture(args) -> int:
    from rmkit.protocols.corda.model import corda_spec
    from rmkit.conformance.corda.torture import Torture
    from rmkit.interrupts import signals_interrupt

    if args.cycles < 1 or args.flows < 1:
        raise UsageError("--cycles and --flows: expected numbers >= 1")
    if args.cycles > MAX_CYCLES:
        raise UsageError(f"--cycles {args.cycles}: expected at most {MAX_CYCLES} (hours of crash cycles; "
                         "the schedule is planned before the run starts)")
    check_writable_file(args.out, "--out")   # written once, at the end: an interrupted run leaves none
    check_writable_dir(args.dir, "--dir")
    corda_spec(args.profile)   # an unknown profile is a usage error before any folder is made
    variant = args.variant or (None if args.node_cmd else "reference")
    _commands(args)
    _need_broker()
    folder, temporary = _folder(args.dir, "rmkit-corda-torture-")
    log = (lambda line: None) if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        with signals_interrupt():   # SIGINT and SIGTERM: every process stopped, exit 2
            run = Torture(folder, args.seed, args.cycles, flows=args.flows, profile=args.profile, variant=variant,
                          node_cmd=args.node_cmd, bridge_cmd=args.bridge_cmd, keep_going=args.keep_going, log=log,
                          unarmed=tuple(k for k, off in (("node", args.no_node_points), ("bridge", args.no_bridge_points)) if off))
            result = run.run()
    except BaseException:   # interrupted or broken: no report names the temporary folder, so say it here
        if temporary:
            print(f"the run's folder is kept: {folder}", file=sys.stderr)
        raise
    report = result.to_json()
    report["folder"] = str(folder)
    report["records"] = str(run.cluster.records())
    if args.out:
        write_output(args.out, json.dumps(report, indent=1), "--out")
    if args.format == "json":
        print(json.dumps(report, indent=1))
    else:
        print(text_report(run, result, folder if not (temporary and result.exit_code == 0) else None))
    if temporary and result.exit_code == 0:
        shutil.rmtree(folder, ignore_errors=True)
    return result.exit_code


def replay_command(result) -> str:
    """The command line that runs the same schedule against the same processes."""
    import shlex

    from rmkit.reference_impl.corda.variants import bridge_cmd

    words = ["rmkit", "corda", "torture", "--seed", str(result.seed), "--cycles", str(result.cycles_planned)]
    words += ["--variant", result.variant] if result.variant else ["--node-cmd", result.node_cmd]
    if result.bridge_cmd != bridge_cmd():
        words += ["--bridge-cmd", result.bridge_cmd]
    words += ["--profile", result.profile]
    words += [f"--no-{kind}-points" for kind in result.unarmed]
    return shlex.join(words)


def text_report(run, result, folder: Path | None) -> str:
    lines = [replay_command(result)]
    per_min = result.cycles_run / (result.cycles_s / 60) if result.cycles_s else 0
    reached = sum(1 for c in result.schedule[:result.cycles_run] if c.reached)
    points = sum(1 for c in result.schedule[:result.cycles_run] if c.point)
    lines.append(f"  {result.cycles_run} crash cycles in {result.elapsed_s:.1f} s (start-up {result.startup_s:.1f} s, cycles "
                 f"{result.cycles_s:.1f} s: {per_min:.0f} per minute, drain and audit after); "
                 f"{reached} of {points} crash points reached, {result.cycles_run - points} kills at random times")
    if points and not reached and not result.error:
        lines.append("  no armed process ever paused at its crash point: does it read ARM (spec/corda/node.md)? "
                     "--no-node-points / --no-bridge-points plan kills at random times instead")
    if result.broker_restarts_s:
        rs = sorted(result.broker_restarts_s)
        lines.append(f"  broker restarts: {len(rs)}, median {rs[len(rs) // 2]:.2f} s, max {rs[-1]:.2f} s")
    c = result.counts
    if c:
        lines.append(f"  messages expected {c['expected']}, effects committed {c['committed']}, acknowledgements {c['acks']}"
                     f" (commit records lost to kills: {c['commit_records_lost_to_kills']})")
    if result.error:
        lines.append(f"HARNESS FAILURE: {result.error}")
    elif not result.violations:
        lines.append("PASS: nothing lost, nothing duplicated, every acknowledgement after its commit")
    else:
        kinds = {}
        for v in result.violations:
            kinds[v.kind] = kinds.get(v.kind, 0) + 1
        lines.append("FAIL: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
        for v in result.violations[:10]:
            lines.append(f"  {v.kind}: {v.id} at node {v.node}: {v.detail}")
            for cyc in run.culprits(v, result)[-6:]:
                lines.append(f"      {cyc.describe()}")
        if len(result.violations) > 10:
            lines.append(f"  ... {len(result.violations) - 10} more (--format json lists all)")
        lines.append(f"  replay the schedule: {replay_command(result)}")
    if folder:
        lines.append(f"  records, databases and logs: {folder}")
        lines.append(f"  check the records: rmkit check --protocol corda --profile {result.profile} --settled "
                     f"{folder / 'records'}/*.jsonl")
    return "\n".join(lines)
