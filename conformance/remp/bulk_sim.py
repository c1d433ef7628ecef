"""Bulk simulated REMP logs: many files, made in parallel, with planted violations and a manifest.

Why: audits of large logs (the streaming checker, a Spark job) need realistic inputs of millions
of receipts whose every violation is known in advance. ``rmkit simulate --out DIR`` writes them.

The log is one shard observed over consecutive periods, one period per file ("part"): part k is a
run of the seeded shard simulator (:mod:`rmkit.reference_impl.remp.simulator`) with

- the same nodes in every part (validator pool and full node derived from the seed S), so roles
  and keys hold across files;
- its own messages and blocks: part 0 uses seed S (so a one-part log is the single-file form's
  log byte for byte), part k > 0 a seed derived from S and k; message ids are hashes of
  (seed, "message", index), hence unique across parts;
- its own time window: part k starts at ``start + k * stride``, with a stride longer than a
  part's duration plus the checker's horizon, so every message of a part is judged before the
  next part's receipts arrive. The stride is checked after each part is made.

Parts depend on S and their index only, never on ``--jobs``: the same S gives the same files.
Files are ``part-00000.jsonl`` (``.gz`` with ``--gzip``: gzip with mtime 0, reproducible); with
``--kafka`` each file is one Kafka partition (partition = part index, offsets from 0).

Manifest (``manifest.json``, format ``rmkit-simulate-manifest/1``)::

    {"format": "rmkit-simulate-manifest/1", "protocol": "remp", "profile": "spec",
     "seed": 1, "messages": 100000, "validators": 7, "lifetime_s": 250, "kafka": false,
     "keys": false, "violations_rate": 0.001, "files_count": 3,
     "check": {"profile": "spec", "lifetime_s": 250, "validators_file": null},
     "files": [{"file": "part-00000.jsonl", "part": 0, "seed": 1, "messages": 33334,
                "lines": 701234, "receipts": 701233, "bytes": 351234567, "sha256": "..."}],
     "rules": {"planted": ["REMP-INPUT-001", ...], "not_planted": {"REMP-SEQ-001": "off in ..."},
               "background": []},
     "violations": [{"rule": "REMP-REPLAY-001", "message_id": "ab12...", "file": "part-00000.jsonl",
                     "lines": [5123, 5124], "plant": 7, "aimed": true, "injector": "accepted_again"}],
     "natural": [{"rule": "REMP-LIVE-001", "message_id": "...", "file": "...", "lines": [...]}],
     "missed": [{"rule": "REMP-FN-001", "file": "part-00002.jsonl", "why": "..."}]}

- ``violations``: one entry per (rule, message) a check must find because of a plant, from the
  plan alone (the checker is never consulted); a plant whose injector declares that it always
  breaks a second rule has one entry per rule, sharing ``plant`` (``aimed`` is false for the
  companion). ``lines``: 1-based lines of the file holding the receipts the plant
  added or changed (for a plant that only removed receipts: the message's remaining lines).
- ``natural``: what the clean simulation breaks without a plant, from the simulator's plan and
  run (:func:`~.planting.lost_by_design`), never from a check: REMP-LIVE-001 of a message the
  lossy network kept from every validator (it has SentToValidators alone; possible with few
  validators per session, about 1% of messages with one), and under ever-node the non-strict
  REMP-LIVE-001 of a message every collator rejects but a validator that stopped never answers
  (the node sends no Timeout). Listed when the checker judges the message's liveness: always in
  a file another follows; in the last file when the log's clock, as the checker keeps it
  (:class:`~.planting.LogClock`, followed while the file is written), ends a horizon past the
  message's first receipt. A file with nothing to plant is still written as the simulator runs
  (never held in memory): the simulator reports its unreached messages with their lines.
- REMP-INPUT-001 entries have ``message_id`` null (the line cannot be read): they are matched by
  (file, line).

The set of findings a correct audit reports, run over all files in order with the ``check``
settings, is exactly {(rule, message_id)} of ``violations`` and ``natural`` (REMP-INPUT-001: {(rule,
file, line)}), leaving out the rules of ``rules.background``: rules every clean message breaks by
the profile's design, never listed (REMP-SIG-004 under ever-node with keys).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import orjson

MANIFEST_FORMAT = "rmkit-simulate-manifest/1"
RECEIPTS_PER_FILE = 1_000_000  # the default number of files aims at about this many receipts each
START_MS = 1_700_000_000_000
RATE = 50.0  # the simulator's default arrival rate, messages per second


@dataclass(frozen=True)
class BulkConfig:
    """Everything that determines the files (``jobs`` does not)."""

    seed: int
    messages: int
    validators: int = 7
    profile: str = "spec"
    lifetime_s: Optional[float] = None
    files: Optional[int] = None
    violations: float = 0.0
    kafka: bool = False
    gzip: bool = False
    keys: Optional[str] = None  # key folder (rmkit keys gen)

    def effective_lifetime(self) -> float:
        from rmkit.protocols.remp.model import model_for

        return self.lifetime_s if self.lifetime_s is not None else model_for(self.profile).default_lifetime_s


def receipts_per_message(validators: int) -> float:
    """About how many receipts one message makes (measured: ~21 with 7 validators)."""
    return 3.0 * validators


def default_files(messages: int, validators: int) -> int:
    return max(1, math.ceil(messages * receipts_per_message(validators) / RECEIPTS_PER_FILE))


def part_seed(seed: int, part: int) -> int:
    """Part 0 keeps the seed (a one-part log equals the single-file form's); others derive one."""
    if part == 0:
        return seed
    return int.from_bytes(hashlib.blake2b(f"rmkit simulate part {seed} {part}".encode(), digest_size=7).digest(), "big")


def split(messages: int, parts: int) -> list[int]:
    q, r = divmod(messages, parts)
    return [q + (1 if k < r else 0) for k in range(parts)]


def stride_ms(cfg: BulkConfig, per_part: int) -> int:
    """Time between part starts: a generous bound on a part's duration (Poisson arrivals, then the
    simulator's tail of 2.2 lifetimes) plus the checker's horizon and a minute."""
    from rmkit.protocols.remp.model import model_for

    life = cfg.effective_lifetime()
    m = model_for(cfg.profile)
    arrivals_s = per_part / RATE * 1.25 + 60
    horizon_s = m.default_horizon_s(life) + 60
    return int((arrivals_s + 2.5 * life + horizon_s + 60) * 1000)


def file_name(part: int, cfg: BulkConfig) -> str:
    return f"part-{part:05d}.jsonl" + (".gz" if cfg.gzip else "")


def _rotation(cfg: BulkConfig, counts: list[int], rules: list[str]) -> list[list[str]]:
    """The rules each part plants: one rotation over ``rules`` through all parts."""
    out, g = [], 0
    for n in counts:
        want = round(cfg.violations * n) if cfg.violations else 0
        out.append([rules[(g + j) % len(rules)] for j in range(want)] if rules else [])
        g += want
    return out


def plan(cfg: BulkConfig) -> dict:
    """The parts to make: per part its seed, messages, start time and rules to plant."""
    from rmkit.conformance.remp.planting import clocked, plantable_rules

    k = cfg.files or default_files(cfg.messages, cfg.validators)
    if k > cfg.messages:
        raise ValueError(f"--files {k}: expected at most one file per message ({cfg.messages} messages)")
    counts = split(cfg.messages, k)
    rules, skipped = plantable_rules(cfg.profile, cfg.keys is not None, clocked(cfg.profile, cfg.kafka))
    stride = stride_ms(cfg, max(counts))
    wanted = _rotation(cfg, counts, rules)
    parts = [dict(part=p, seed=part_seed(cfg.seed, p), messages=counts[p], start_ms=START_MS + p * stride,
                  next_start_ms=START_MS + (p + 1) * stride if p + 1 < k else None, rules=wanted[p]) for p in range(k)]
    from rmkit.conformance.remp.planting import BACKGROUND

    background = [r for r in BACKGROUND.get(cfg.profile, ()) if cfg.keys is not None]
    return {"parts": parts, "rules": rules, "skipped": skipped, "background": background}


# ---- one part ---------------------------------------------------------------------------------------
def _outsider_key(cfg: BulkConfig, label: str):
    from rmkit.protocols.remp.signing import PrivateKey, derive_seed

    return PrivateKey(derive_seed(str(cfg.seed), "outside the validator set", label), f"stranger-{label}", label)


def _open(path: Path, gz: bool):
    f = open(path, "wb", buffering=1 << 20)
    if gz:
        return f, gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=3, mtime=0)
    return f, f


def make_part(cfg: BulkConfig, part: dict, out_dir: str) -> dict:
    """Simulate, plant and write one part; return its manifest pieces."""
    from rmkit.reference_impl.remp.simulator import SimConfig, Simulation
    from rmkit.reference_impl.remp.wire import hex_id

    life = cfg.effective_lifetime()
    opts = dict(seed=part["seed"], node_seed=cfg.seed, profile=cfg.profile, messages=part["messages"],
                validators=cfg.validators, lifetime_s=cfg.lifetime_s, start_ms=part["start_ms"])
    keyset = signer = None
    outsider_id, fn2_id = hex_id(cfg.seed, "outsider"), hex_id(cfg.seed, "fullnode", 2)
    if cfg.keys:
        from rmkit.protocols.remp.signing import Signer, load_key_set

        keyset = load_key_set(cfg.keys)
        opts["keys"] = keyset
        strangers = [_outsider_key(cfg, "validator"), _outsider_key(cfg, "fullnode")]
        outsider_id, fn2_id = strangers[0].id, strangers[1].id
        signer = Signer(list(keyset.private.values()) + strangers, cfg.profile)
    sim = Simulation(SimConfig(**opts))
    name = file_name(part["part"], cfg)
    path = Path(out_dir) / name
    planting = bool(part["rules"]) or cfg.profile != "spec"
    from rmkit.protocols.remp.model import model_for
    from rmkit.conformance.remp.planting import LogClock, PartContext, judged, lost_by_design, plant_part, unreached

    last = part["next_start_ms"] is None
    horizon_ms = int(model_for(cfg.profile).default_horizon_s(life) * 1000)
    # the checker's clock at the end of the log: whether it judges a lost message of the last part
    clock = LogClock(cfg.kafka) if last else None
    if not planting:  # nothing to plant: stream straight to the file, keeping only what the run reports
        stats = _write(cfg, part["part"], path, ((None, it) for it in sim.timed()), {}, track=False, clock=clock)
        _check_stride(part, stats)
        # the one thing a clean spec log can break: a message the network kept from every
        # validator (sim.unreached: its receipts with their stream index, which is its line - 1)
        nat = [{"rule": "REMP-LIVE-001", "message_id": mid, "file": name, "lines": [i + 1 for i, _ in items]}
               for mid, items in sorted(unreached(sim).items(), key=lambda e: e[1][0][0])
               if _natural_judged(cfg, last, clock, horizon_ms, [it for _, it in items])]
        return {"file": _file_entry(cfg, part, name, stats), "violations": [], "natural": nat, "missed": []}

    stream = list(sim.timed())
    ctx = PartContext(stream=stream, profile=cfg.profile, part=part["part"], seed=cfg.seed, fullnode_id=sim.fullnode_id,
                      validators=list(sim.pool), validators_per_session=cfg.validators if keyset is None else
                      min(len(s.order) for s in keyset.validator_set.sessions),
                      lifetime_s=life, kafka=cfg.kafka, signer=signer, outsider=outsider_id, second_fullnode=fn2_id,
                      validator_set=keyset.validator_set if keyset else None, last_part=part["next_start_ms"] is None)
    by_msg = ctx.by_message()
    # messages left without an outcome by design: those the checker may judge (surely, or too
    # close to call on the log before planting) are kept free of plants; whether it judges them
    # is settled after writing, on the written log's exact clock
    lost = sorted(lost_by_design(sim, stream, cfg.profile, life, judged_to_end=False), key=lambda mid: by_msg[mid][0])
    natural = [("REMP-LIVE-001", mid, by_msg[mid]) for mid in lost if judged(ctx, by_msg[mid]) is not False]
    plants, missed = plant_part(ctx, part["rules"], {mid for _, mid, _ in natural})
    before: dict = {}
    replace: dict = {}
    marks: dict = {}  # id(item) -> plant number within the part
    for n, (p, _) in enumerate(plants):
        for i, items in p.before.items():
            before.setdefault(i, []).extend(items)
            for it in items:
                marks[id(it)] = n
        for i, items in p.replace.items():
            replace[i] = items
            for it in items:
                marks[id(it)] = n
    stats = _write(cfg, part["part"], path, _edited(stream, before, replace), marks, clock=clock)
    _check_stride(part, stats)
    natural = [n for n in natural if _natural_judged(cfg, last, clock, horizon_ms, [stream[i] for i in n[2]])]
    index_line = stats["index_line"]
    violations = []
    for n, (p, expected) in enumerate(plants):
        lines = stats["marked"].get(n) or sorted(index_line[i] for i in ctx.by_message()[p.message_id] if i in index_line)
        for rule in [p.rule] + sorted(expected - {p.rule}):
            violations.append({"rule": rule, "message_id": None if rule == "REMP-INPUT-001" else p.message_id, "file": name,
                               "lines": lines, "plant": n, "aimed": rule == p.rule, "injector": p.injector})
    nat = [{"rule": rule, "message_id": mid, "file": name, "lines": sorted(index_line[i] for i in idxs if i in index_line)}
           for rule, mid, idxs in natural]
    return {"file": _file_entry(cfg, part, name, stats), "violations": violations, "natural": nat,
            "missed": [{"rule": r, "file": name, "why": "no message of this part fits the injector"} for r in missed]}


def _natural_judged(cfg: BulkConfig, last: bool, clock, horizon_ms: int, items: list) -> bool:
    """Will the checker judge the liveness of a message whose receipts (``(kafka_time_ms,
    receipt)``, unplanted) are ``items``? Only where its clock moves with validator receipts (a
    Kafka dump, or a profile whose validators stamp receipts); then always in a part another
    follows (the stride puts the next part's receipts a horizon later), and in the last part when
    the written log's clock (``clock``) ends a horizon past its first timed receipt."""
    from rmkit.conformance.remp.planting import checker_time, clocked, judged_at

    if not clocked(cfg.profile, cfg.kafka):
        return False
    if not last:
        return True
    first = next((t for t in (checker_time(kts, r, cfg.kafka) for kts, r in items) if t is not None), None)
    return judged_at(first, clock.end(horizon_ms), horizon_ms)


def _edited(stream: list, before: dict, replace: dict):
    """The stream with the plants' edits, as ``(stream index or None, item)``: a replaced item
    keeps its index (its message's lines are found through it), an inserted one has None."""
    for i, item in enumerate(stream):
        for it in before.get(i, ()):
            yield None, it
        for it in replace.get(i, (item,)):
            yield i, it
    for it in before.get(len(stream), ()):
        yield None, it


def _write(cfg: BulkConfig, part: int, path: Path, items, marks: dict, track: bool = True, clock=None) -> dict:
    """Write ``(stream index or None, (kafka_time_ms, receipt | raw bytes))`` items; count lines
    and receipts, hash the bytes, note the line of each stream index (``track``) and of each
    marked item (``marks``: id(item) -> plant number); ``clock`` (a :class:`~.planting.LogClock`)
    follows every receipt written."""
    dumps, nl = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    kafka = cfg.kafka
    sha = hashlib.sha256()
    marked: dict = {}
    index_line: dict = {}
    lines = receipts = 0
    last_t = None
    buf: list = []
    raw, f = _open(path, cfg.gzip)
    complete = False

    def flush():
        chunk = b"".join(buf)
        if not cfg.gzip:
            sha.update(chunk)
        f.write(chunk)
        buf.clear()

    try:
        for idx, item in items:
            kts, r = item
            lines += 1
            if type(r) is bytes:
                buf.append(r + b"\n")
            else:
                if kafka:
                    buf.append(dumps({"topic": "remp-receipts", "partition": part, "offset": receipts, "timestamp": kts,
                                      "key": r.get("message_id"), "value": r}, option=nl))
                else:
                    buf.append(dumps(r, option=nl))
                receipts += 1
                last_t = kts
                if clock is not None:
                    clock.add(kts, r)
            if track and idx is not None:
                index_line[idx] = lines
            if marks:
                n = marks.get(id(item))
                if n is not None:
                    marked.setdefault(n, []).append(lines)
            if len(buf) >= 4096:
                flush()
        if buf:
            flush()
        complete = True
    finally:
        if f is not raw:
            f.close()
        raw.close()
        if not complete:  # a part cut short (a key set too small) must not look whole
            path.unlink(missing_ok=True)
    if cfg.gzip:
        with open(path, "rb") as g:
            for chunk in iter(lambda: g.read(1 << 20), b""):
                sha.update(chunk)
    return {"lines": lines, "receipts": receipts, "sha256": sha.hexdigest(), "bytes": path.stat().st_size,
            "marked": marked, "index_line": index_line, "last_t": last_t}


def _check_stride(part: dict, stats: dict) -> None:
    nxt = part["next_start_ms"]
    if nxt is not None and stats["last_t"] is not None and stats["last_t"] >= nxt:
        raise RuntimeError(f"part {part['part']}: its last receipt is at {stats['last_t']} ms, expected before the next "
                           f"part's start {nxt} ms (the stride is too short for this simulation)")


def _file_entry(cfg: BulkConfig, part: dict, name: str, stats: dict) -> dict:
    return {"file": name, "part": part["part"], "seed": part["seed"], "messages": part["messages"],
            "start_ms": part["start_ms"], "lines": stats["lines"], "receipts": stats["receipts"],
            "bytes": stats["bytes"], "sha256": stats["sha256"]}


def _make_part_star(args):
    return make_part(*args)


# ---- the whole log ----------------------------------------------------------------------------------
def generate(cfg: BulkConfig, out_dir: str, jobs: Optional[int] = None, progress=None) -> dict:
    """Write every part and ``manifest.json`` into ``out_dir``; return the manifest."""
    if cfg.messages < 1:
        raise ValueError(f"messages: expected a number >= 1, found {cfg.messages}")
    if not 0 <= cfg.violations <= 1:
        raise ValueError(f"violations: expected a fraction of messages between 0 and 1, found {cfg.violations}")
    p = plan(cfg)
    os.makedirs(out_dir, exist_ok=True)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(p["parts"])))
    work = [(cfg, part, out_dir) for part in p["parts"]]
    results = []
    if jobs == 1:
        for w in work:
            results.append(make_part(*w))
            if progress:
                progress(results[-1]["file"])
    else:
        import multiprocessing

        # fork where there is one: workers need nothing from the parent but their arguments, and
        # a fork does not re-import the caller's main module (a script without a __main__ guard)
        methods = multiprocessing.get_all_start_methods()
        with multiprocessing.get_context("fork" if "fork" in methods else "spawn").Pool(jobs) as pool:
            for res in pool.imap(_make_part_star, work):
                results.append(res)
                if progress:
                    progress(res["file"])
    manifest = {
        "format": MANIFEST_FORMAT, "protocol": "remp", "profile": cfg.profile, "seed": cfg.seed,
        "messages": cfg.messages, "validators": cfg.validators, "lifetime_s": cfg.effective_lifetime(),
        "kafka": cfg.kafka, "gzip": cfg.gzip, "keys": cfg.keys is not None, "violations_rate": cfg.violations,
        "files_count": len(results),
        "check": {"profile": cfg.profile, "lifetime_s": cfg.effective_lifetime(),
                  "validators_file": "validators.yaml of the --keys folder" if cfg.keys else None},
        "files": [r["file"] for r in results],
        "rules": {"planted": p["rules"], "not_planted": p["skipped"], "background": p["background"]},
        "violations": [v for r in results for v in r["violations"]],
        "natural": [v for r in results for v in r["natural"]],
        "missed": [v for r in results for v in r["missed"]],
    }
    plant_no = 0
    for r in results:  # number plants through the whole log
        base = plant_no
        for v in r["violations"]:
            v["plant"] += base
            plant_no = max(plant_no, v["plant"] + 1)
    Path(out_dir, "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def expected_findings(manifest: dict) -> set:
    """The findings an audit of the log must report: ``(rule, message_id)``, and for unreadable
    lines ``(rule, file, line)``."""
    out = set()
    for v in manifest["violations"] + manifest["natural"]:
        if v["message_id"] is None:
            out.update((v["rule"], v["file"], line) for line in v["lines"])
        else:
            out.add((v["rule"], v["message_id"]))
    return out
