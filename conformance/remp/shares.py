"""Which share of a ``--jobs`` run each line of a batch belongs to, a whole batch at a time.

:func:`rmkit.conformance.remp.checker.partition_share` is the one rule (the last hex digit of the
raw message id, case-folded; the line number where no id is found). Applied line by line it costs
about a sixth of checking a receipt (1.3 µs a line), so it is applied here to a batch at once: one
compiled regular expression finds each line's id, and the batch takes that answer only when it
can prove it is the rule's own (every line holds the id key exactly once, written
``"message_id":"<id>"``); any other batch (Kafka values held as strings, blank lines, odd
spacing, a second key) is classified line by line by the rule itself. The tests compare both
ways on edge lines.
"""

from __future__ import annotations

import re
from itertools import compress, repeat
from operator import itemgetter

from rmkit.conformance.remp.checker import LINE_MASK, partition_share

_KEY = b'"message_id"'
# the key's first (and, proven below, only) occurrence, its colon, and the id's last character
# before the closing quote; a line without it (no id, an empty id, a non-string value) fails
_ID_END = re.compile(rb'"message_id":"[^"]*([^"])"').search
_last_char = itemgetter(1)
# byte -> its share among n, as partition_share computes it from the id's last character
_FOLD = {}
# share -> a translation of share numbers into 1 (this share) / 0 (another)
_PICK = {}


def _fold_table(n: int) -> bytes:
    table = _FOLD.get(n)
    if table is None:
        table = _FOLD[n] = bytes((c | 0x20) % n for c in range(256))
    return table


def _pick_table(k: int) -> bytes:
    table = _PICK.get(k)
    if table is None:
        table = _PICK[k] = bytes(int(c == k) for c in range(256))
    return table


def fast_shares(lines: list, n: int) -> bytes | None:
    """Each line's share as partition_share gives it, computed for the batch at once, or None when
    this batch cannot be proven to follow the fast reading. The proof: every line matches
    ``"message_id":"<id>"`` and the batch holds the key exactly as many times as it has lines, so
    each line holds it once: that occurrence is the last key, followed by its colon, the value's
    opening quote right after it and the closing quote the first one after that, which is where
    partition_share reads the id's last character."""
    if not lines or type(lines[0]) is not bytes or n > 256:
        return None
    found = list(map(_ID_END, lines))
    if None in found or b"\n".join(lines).count(_KEY) != len(lines):
        return None
    return b"".join(map(_last_char, found)).translate(_fold_table(n))


def line_shares(refs, lines: list, n: int) -> list | bytes:
    """The share of each line of a batch (refs: the lines' references, whose line number decides
    for a line without a readable id), by :func:`partition_share`."""
    shares = fast_shares(lines, n)
    if shares is not None:
        return shares
    out = []
    for ref, line, share in zip(refs, lines, map(partition_share, lines, repeat(n))):
        out.append((ref & LINE_MASK) % n if share is None else share)
    return out


def share_picks(refs, lines: list, n: int) -> list[bytes]:
    """For each of ``n`` shares, one byte per line of the batch: 1 where the line is that share's,
    0 elsewhere (the selector of :func:`itertools.compress`). A few bytes per line: what a
    ``--jobs`` reader sends a share besides its lines, from which the share numbers them."""
    shares = line_shares(refs, lines, n)
    if type(shares) is bytes:
        return [shares.translate(_pick_table(k)) for k in range(n)]
    return [bytes(s == k for s in shares) for k in range(n)]  # (shares beyond 255 fit no byte)


def own_lines(refs, lines: list, k: int, n: int) -> tuple[list, list]:
    """The (refs, lines) of a batch that belong to share ``k`` of ``n``."""
    pick = share_picks(refs, lines, n)[k]
    return list(compress(refs, pick)), list(compress(lines, pick))


def split_lines(refs, lines: list, n: int) -> list[tuple[list, list]]:
    """A batch's (refs, lines) for each of ``n`` shares, in share order, in log order within each."""
    return [(list(compress(refs, pick)), list(compress(lines, pick))) for pick in share_picks(refs, lines, n)]
