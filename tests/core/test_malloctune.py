"""rmkit.malloctune: with the thresholds raised, memory freed and allocated again is not faulted
in afresh (counted as the process's minor page faults), and ``rmkit check`` raises them."""

import subprocess
import sys

import pytest

from rmkit import malloctune

# blocks like the reader's 4 MB chunks, 96 MB of them written and then freed at once, five times
# over: more than glibc's self-adjusting thresholds ever keep (64 MB at most), so that untuned the
# freed top of the heap is returned and faulted in again whatever the heap held before (written
# with b"\x01" * n, since calloc leaves fresh pages untouched); each process counts its own
# minor page faults after a warm-up
CHURN = """
import resource, sys
from rmkit.malloctune import keep_freed_memory
if sys.argv[1] == "on" and not keep_freed_memory():
    sys.exit("keep_freed_memory() refused")
def churn(n):
    for _ in range(n):
        blocks = [b"\\x01" * (4 << 20) for _ in range(24)]
        del blocks
churn(2)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
churn(5)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", CHURN, mode], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the thresholds are glibc's")
def test_freed_memory_is_reused_without_page_faults():
    if not _probe_glibc():
        pytest.skip("the C library is not glibc: keep_freed_memory() changes nothing here")
    off, on = _faults("off"), _faults("on")
    if off < 400:
        pytest.skip(f"this allocator returned little memory to the system even untuned ({off} faults): nothing to compare")
    assert on * 10 < off, f"expected far fewer page faults with the thresholds raised, found {on} against {off} without"


def _probe_glibc() -> bool:
    out = subprocess.run([sys.executable, "-c", "from rmkit.malloctune import keep_freed_memory as k; print(k())"],
                         capture_output=True, text=True, timeout=60)
    return out.stdout.strip() == "True"


@pytest.mark.parametrize("protocol, threshold", [("remp", malloctune.MMAP_THRESHOLD), ("corda", 4 << 20)])
def test_check_raises_the_thresholds_for_its_process(monkeypatch, tmp_path, protocol, threshold):
    """Set by the command line only (a library user keeps its allocator settings), with the
    mapping threshold the protocol's checker asks for where it asks for one (Corda's columns grow
    by reallocation: docs/corda-check-streaming.md)."""
    from rmkit.cli import main

    calls = []
    monkeypatch.setattr(malloctune, "keep_freed_memory", lambda mmap_threshold=malloctune.MMAP_THRESHOLD: calls.append(mmap_threshold) or True)
    log = tmp_path / "empty.jsonl"
    log.write_text("")
    assert main(["check", "--protocol", protocol, str(log)]) == 2  # nothing read: the tool could not do its job
    assert calls == [threshold]
