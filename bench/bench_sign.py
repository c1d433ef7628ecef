"""Benchmark of receipt signature verification, as ratios against baselines measured in the same run.

Machines here are noisy (2 shared cores), so every figure is a ratio against a baseline measured
moments before, each the best of ``--repeat`` runs. What is printed:

- bare verify: verifications/s of a bare loop of ``nacl.signing.VerifyKey.verify(bytes, sig)`` on
  the same receipts, with the signed bytes, the signatures and the keys prepared beforehand (the
  limit: libsodium's own cost)
- verify path: verifications/s of :class:`rmkit.protocols.remp.signing.Verifier` on the JSON
  receipts (key lookup, signature decoding, TL serialization and the libsodium call)
- ratio: verify path / bare verify, in verifications/s (1.0 would mean no Python overhead at all)
- check: wall time of ``rmkit check`` on a 1,000,000-receipt signed simulator log without and with
  ``--validators`` (one process, and the default jobs), and their ratio: what checking every
  signature costs on top of the other rules

The keys (``rmkit keys gen --seed bench``) and the signed logs are generated once and cached under
``bench/out/`` (gitignored).

Usage: python bench/bench_sign.py [--receipts N] [--sample N] [--repeat K] [--skip-check]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE))

from bench_check import rmkit, timed_check  # noqa: E402 - shared with the checker's benchmark


def key_dir() -> Path:
    d = OUT / "keys-bench-7x32"
    if not (d / "validators.yaml").exists():
        subprocess.run(rmkit() + ["keys", "gen", "--validators", "7", "--sessions", "32", "--seed", "bench", "--out", str(d)],
                       check=True)
    return d


def signed_log(receipts: int, seed: int = 1) -> Path:
    """A cached signed simulator log of exactly ``receipts`` receipts (spec profile)."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"sim-spec-signed-{receipts}-s{seed}.jsonl"
    if not path.exists():
        t = time.perf_counter()
        tmp = path.with_suffix(".partial")
        subprocess.run(rmkit() + ["simulate", "--keys", str(key_dir()), "--receipts", str(receipts), "--messages", str(receipts),
                                  "--seed", str(seed), "-o", str(tmp)], check=True)
        tmp.rename(path)
        print(f"generated {path.name} in {time.perf_counter() - t:.1f} s")
    return path


def read_receipts(path: Path, n: int) -> list[dict]:
    out = []
    with open(path, "rb") as f:
        for line in f:
            out.append(orjson.loads(line))
            if len(out) >= n:
                break
    return out


def bare_verify(items: list) -> float:
    t = time.perf_counter()
    for vk, data, sig in items:
        vk.verify(data, sig)
    return time.perf_counter() - t


def path_verify(verifier, receipts: list[dict]) -> float:
    verify = verifier.verify
    t = time.perf_counter()
    for r in receipts:
        verify(r)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--receipts", type=int, default=1_000_000, help="size of the log for the check figures")
    ap.add_argument("--sample", type=int, default=50_000, help="receipts verified in the verification figures")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-check", action="store_true", help="only the verification figures")
    args = ap.parse_args()

    from nacl.signing import VerifyKey

    from rmkit.protocols.remp.signing import Verifier, signature_bytes
    from rmkit.protocols.remp.keys import load_validator_set
    from rmkit.protocols.remp.tlreceipt import signed_bytes

    log = signed_log(args.receipts)
    valset = load_validator_set(str(key_dir() / "validators.yaml"))
    receipts = read_receipts(log, args.sample)
    vks = {kid: VerifyKey(pk) for kid, pk in valset.keys.items()}
    items = [(vks[r["source_id"]], signed_bytes(r), signature_bytes(r)) for r in receipts]
    print(f"verification: {len(receipts):,} receipts of {log.name}, one core, best of {args.repeat}")
    bare = path = None
    for _ in range(args.repeat):
        b = bare_verify(items)
        v = Verifier(valset)
        p = path_verify(v, receipts)
        assert v.counts["valid"] == len(receipts), v.counts
        bare = b if bare is None else min(bare, b)
        path = p if path is None else min(path, p)
    n = len(receipts)
    print(f"bare VerifyKey.verify (the limit): {n / bare:,.0f} verifications/s")
    print(f"verify path (Verifier.verify):     {n / path:,.0f} verifications/s")
    print(f"RESULT verify ratio = {bare / path:.2f} of the bare loop's rate "
          f"({(path - bare) / n * 1e6:.1f} us of Python per receipt on top of {bare / n * 1e6:.1f} us in libsodium)")
    if args.skip_check:
        return 0

    size_mb = log.stat().st_size / 1e6
    vfile = str(key_dir() / "validators.yaml")
    jobs_list = sorted({1, os.cpu_count() or 1})
    print(f"\ncheck: {log.name}, {size_mb:.0f} MB, {os.cpu_count()} cores, best of {args.repeat}")
    for jobs in jobs_list:
        plain = signed = None
        for _ in range(args.repeat):
            w, _, _, rep, _ = timed_check([str(log), "--jobs", str(jobs)])
            plain = w if plain is None else min(plain, w)
            w2, _, _, rep2, _ = timed_check([str(log), "--jobs", str(jobs), "--validators", vfile])
            signed = w2 if signed is None else min(signed, w2)
        sig = rep2["metrics"]["signatures"]
        print(f"check j{jobs} without --validators: {plain:.1f} s ({rep['receipts'] / plain:,.0f} receipts/s, verdict {rep['verdict']}, "
              f"not checked: {', '.join(rep['not_checked'])})")
        print(f"check j{jobs} with --validators:    {signed:.1f} s ({rep2['receipts'] / signed:,.0f} receipts/s, verdict {rep2['verdict']}, "
              f"signatures {sig['valid']:,} valid, {sig['invalid']:,} invalid)")
        print(f"RESULT check j{jobs} ratio with/without --validators = {signed / plain:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
