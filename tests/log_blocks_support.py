"""The log's clock blocks as ``rmkit audit``'s clock pass makes them (``spark_checks/job.py``,
``_clock_runner``): the checker's ``clock_block`` of each file split's lines, in log order, which
every share's ``check_share(..., clock=)`` then walks."""

from __future__ import annotations

# lines per split: a prime, so that the splits' ends fall anywhere in a share's batches
SPLIT_LINES = 97


def log_blocks(shards, lines: list, split_lines: int = SPLIT_LINES, first_ref: int = 1) -> list[bytes]:
    """``shards.clock_block`` of every ``split_lines`` lines of a log (``lines``: every line, in
    log order; the first's reference ``first_ref``)."""
    return [shards.clock_block(range(first_ref + a, first_ref + min(a + split_lines, len(lines))), lines[a:a + split_lines])
            for a in range(0, len(lines), split_lines)]
