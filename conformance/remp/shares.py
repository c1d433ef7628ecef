"""Which share of a ``--jobs`` run each line of a batch belongs to, a whole batch at a time.

:func:`rmkit.conformance.remp.checker.partition_share` is the one rule (the last hex digit of the
raw message id, case-folded; the line number where no id is found). Applied line by line it costs
about a sixth of checking a receipt (1.3 µs a line), so it is applied here to a batch at once:
array operations over the batch's text (numpy) find each line's id, and the batch takes that
answer only when it can prove it is the rule's own (every line holds the id key exactly once,
written ``"message_id":"<id>"``); any other batch (Kafka values held as strings, blank lines, odd
spacing, a second key) is classified line by line by the rule itself. The tests compare both
ways on edge lines.
"""

from __future__ import annotations

import os
from itertools import compress, repeat

# Only numpy's elementwise operations are used here, never its BLAS, whose threads (one per core,
# started at import) spin a while after it: a tenth of a CPU second taken from the shares on a
# machine of two cores. Unless the caller chose otherwise, numpy starts with one.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402 - after the setting above

from rmkit.conformance.remp.checker import LINE_MASK, partition_share

_KEY = np.frombuffer(b'"message_id"', np.uint8)  # the id key, quoted
_VALUE_OPENS = (ord(":"), ord('"'))  # what follows it on the fast reading: a colon, the value's quote
_QUOTE = ord('"')
# byte -> its share among n, as partition_share computes it from the id's last character
_FOLD = {}
# share -> a translation of share numbers into 1 (this share) / 0 (another)
_PICK = {}


def _fold_table(n: int) -> np.ndarray:
    table = _FOLD.get(n)
    if table is None:
        table = _FOLD[n] = np.array([(c | 0x20) % n for c in range(256)], np.uint8)
    return table


def _pick_table(k: int) -> bytes:
    table = _PICK.get(k)
    if table is None:
        table = _PICK[k] = bytes(int(c == k) for c in range(256))
    return table


def fast_shares(lines: list, n: int, text: bytes | None = None, terminated: bool = False) -> bytes | None:
    """Each line's share as partition_share gives it, computed for the batch at once, or None when
    this batch cannot be proven to follow the fast reading. ``text``: the batch's lines joined by
    newlines, when the reader has them so (anything may follow them); joined here otherwise.
    ``terminated``: each line ends with its newline (the text: the lines one after the other).

    The proof, with array operations over the text instead of a call per line: each line holds the
    quoted key exactly once (occurrences that overlap counted apart), and right after it a colon and
    a quote; the id's closing quote, the first quote after that, is in the same line and not the
    opening one. That single key is the last key, where partition_share reads the id's last
    character: the one before the closing quote."""
    if not lines or type(lines[0]) is not bytes or n > 256:
        return None
    lengths = np.fromiter(map(len, lines), np.int64, len(lines))
    if terminated:
        lengths -= 1  # (without the newline, which each line has)
    ends = np.cumsum(lengths + 1) - 1  # where each line ends (its newline, or the text's end)
    if text is None:
        text = (b"" if terminated else b"\n").join(lines)
    a = np.frombuffer(text, np.uint8, count=int(ends[-1]))
    quotes = np.flatnonzero(a == _QUOTE)
    key = quotes[quotes <= a.size - _KEY.size]
    for i in range(1, _KEY.size):  # the quotes that open the key: kept while the next bytes match it
        key = key[a[key + i] == _KEY[i]]
    if key.size != len(lines):
        return None
    starts = ends - lengths
    opens = key + _KEY.size  # the colon, then the value's opening quote
    if not (np.all(key >= starts) and np.all(opens + 1 < ends)):  # one key in each line, its ":" and quote in it too
        return None
    if not (np.all(a[opens] == _VALUE_OPENS[0]) and np.all(a[opens + 1] == _VALUE_OPENS[1])):
        return None
    at = np.searchsorted(quotes, opens + 2)  # the first quote after the opening one
    if at[-1] >= quotes.size:
        return None
    closing = quotes[at]
    if not np.all(closing < ends) or not np.all(closing > opens + 2):  # in the line; the id not empty
        return None
    return _fold_table(n)[a[closing - 1]].tobytes()


def line_shares(refs, lines: list, n: int, text: bytes | None = None, terminated: bool = False) -> list | bytes:
    """The share of each line of a batch (refs: the lines' references, whose line number decides
    for a line without a readable id), by :func:`partition_share`; ``text`` and ``terminated`` as
    for :func:`fast_shares`."""
    shares = fast_shares(lines, n, text, terminated)
    if shares is not None:
        return shares
    out = []
    for ref, line, share in zip(refs, lines, map(partition_share, lines, repeat(n))):
        out.append((ref & LINE_MASK) % n if share is None else share)
    return out


def share_picks(refs, lines: list, n: int, text: bytes | None = None, terminated: bool = False) -> list[bytes]:
    """For each of ``n`` shares, one byte per line of the batch: 1 where the line is that share's,
    0 elsewhere (the selector of :func:`itertools.compress`). A few bytes per line: what a
    ``--jobs`` reader sends a share besides its lines, from which the share numbers them."""
    shares = line_shares(refs, lines, n, text, terminated)
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
