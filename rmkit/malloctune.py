"""The C allocator told to keep the memory a checking process frees, for that process's life.

A streaming checker frees as much as it allocates: every line read (over 512 bytes, so past
Python's small-object allocator, to the C library's malloc), every 4 MB chunk of the log, every
batch a ``--jobs`` worker receives. glibc returns freed memory at the top of its heap to the
system once more than a threshold is free (128 KB at first, adjusted as it goes), and serves
large blocks with fresh mappings; the next allocation then faults the pages in again and the
kernel zeroes them. On the 1M-receipt bench log that was about 143,000 page faults, and the
kernel's zeroing of those pages (``perf``: ``clear_page_erms``) 7.7% of a one-process check's
samples, against 41,000 faults (the heap's growth to its peak) with the thresholds raised.

Raising them does not raise the peak: the memory kept is memory the process held before and will
hold again. It only stays mapped until the process ends, which is why this is done by the
command line's ``check`` for its own process (and the workers it forks), never on import: a
program that uses rmkit as a library keeps its own allocator settings.
"""

from __future__ import annotations

import sys

# mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# the largest block served from the heap rather than a mapping of its own: glibc's upper bound on
# 64-bit systems, well above the reader's chunks and a worker's batches
MMAP_THRESHOLD = 32 << 20
# free memory at the top of the heap kept before any is returned: above the checker's peak
TRIM_THRESHOLD = 1 << 30


def _libc(name: str, *argtypes: str):
    """The C library's function ``name`` with C arguments of ``argtypes`` (ctypes' type names)
    returning an int, or None where there is none to reach (not Linux, no ctypes, no such symbol)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes  # (a Python built without it still checks logs, only without this)

        function = getattr(ctypes.CDLL(None), name)
    except (ImportError, OSError, AttributeError):  # no ctypes, no C library symbols to reach, or no such one
        return None
    function.argtypes = tuple(getattr(ctypes, t) for t in argtypes)
    function.restype = ctypes.c_int
    return function


def keep_freed_memory(mmap_threshold: int = MMAP_THRESHOLD) -> bool:
    """Raise glibc's trim and mapping thresholds for this process (see the module's docstring).
    ``mmap_threshold``: the smallest block served by a mapping of its own; a checker whose largest
    columns grow by reallocation asks for a lower one (its ``mmap_threshold``, which ``rmkit check``
    passes here): a block in the heap grows by a copy, the old and the new held at once until the
    process hands freed memory back, where a mapping grows in place. True when set; False where
    the C library is not glibc (or refuses), which changes nothing but speed and the peaks."""
    mallopt = _libc("mallopt", "c_int", "c_int")
    if mallopt is None:
        return False
    # both at once: setting one alone turns glibc's dynamic adjustment off and keeps the other low
    return bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def release_freed_memory() -> bool:
    """Hand the memory this process freed back to the system (glibc's ``malloc_trim``: the free pages
    anywhere in its heaps, not only at their top). For a step that frees much and is followed by one
    that allocates elsewhere (a log check's reading, then its judgement across subjects): what the
    first step held is then no longer counted twice at the peak of the second. True when done."""
    trim = _libc("malloc_trim", "c_size_t")
    if trim is None:
        return False
    trim(0)
    return True
