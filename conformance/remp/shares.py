"""Which share of a ``--jobs`` run each line of a batch belongs to, a whole batch at a time.

:func:`partition_share` is the one rule (the last hex digit of the
raw message id, case-folded; the line number where no id is found). Applied line by line it costs
about a sixth of checking a receipt (1.3 µs a line), so it is applied here to a batch at once:
array operations over the batch's text (:func:`rmkit.linescan.last_value_bytes`) find each line's
id, and the batch takes that answer only when it can prove it is the rule's own (every line holds
the id key exactly once, written ``"message_id":"<id>"``); a ``--jobs`` reader deals a chunk of
them at once (:func:`deal_text`: the compiled scanner where it was built); any other batch (Kafka values held as strings, blank lines, odd
spacing, a second key) is classified line by line by the rule itself. The tests compare both
ways on edge lines.
"""

from __future__ import annotations

from itertools import compress, repeat

from rmkit.linescan import deal_by_key, last_value_bytes, picks_of
from rmkit.logread import REF_LINE_BITS

LINE_MASK = (1 << REF_LINE_BITS) - 1  # a reference's line number


def _last_key(line: bytes, key: bytes) -> int:
    """Where the last ``key`` (quoted) stands as a key, followed by its colon, or -1. A string
    value that reads "message_id" is passed over: taken for the key, it would put the receipt in
    another share than its message's other receipts."""
    i = line.rfind(key)
    while i >= 0:
        k = i + len(key)
        while line[k:k + 1] in (b" ", b"\t", b"\r", b"\n"):  # JSON's whitespace before the colon
            k += 1
        if line[k:k + 1] == b":":
            return i
        i = line.rfind(key, 0, i)
    return -1


def partition_share(line: bytes, n: int) -> int | None:
    """Which of ``n`` shares the receipt on this raw line belongs to, by its message id, found
    without parsing JSON (plain, or escaped inside a Kafka value held as a string); None when the
    id cannot be found this way. Ids are hashes, so their last hex digit spreads them evenly; case
    is folded (``| 0x20``) because the spec profile allows upper-case hex. It reads the raw line,
    before any decoding, so that a line can be dealt to its share without being parsed
    (:func:`line_shares` applies it to a batch at once)."""
    # the key itself, quoted; the last one wins, as it does for the JSON reader
    i = _last_key(line, b'"message_id"')
    if i >= 0:
        j = line.find(b'"', i + 12)  # the value's opening quote
        k = line.find(b'"', j + 1)
    else:
        i = _last_key(line, b'\\"message_id\\"')
        if i < 0:
            return None
        j = line.find(b'"', i + 14)
        k = line.find(b'\\"', j + 1)
    if j < 0 or k <= j + 1:
        return None
    return (line[k - 1] | 0x20) % n


_KEY = b'"message_id"'  # the id key, quoted
# n -> each byte's share among n, as partition_share computes it from the id's last character
_FOLD: dict = {}


def _fold_table(n: int) -> bytes:
    table = _FOLD.get(n)
    if table is None:
        table = _FOLD[n] = bytes([(c | 0x20) % n for c in range(256)])
    return table


def fast_shares(lines: list, n: int, text: bytes | None = None, terminated: bool = False) -> bytes | None:
    """Each line's share as partition_share gives it, computed for the batch at once, or None when
    this batch cannot be proven to follow the fast reading (:func:`rmkit.linescan.last_value_bytes`,
    whose arguments these are). The single key of the fast reading is the last key, where
    partition_share reads the id's last character: the one before the closing quote."""
    if n > 256:
        return None
    last = last_value_bytes(lines, _KEY, text, terminated)
    return None if last is None else last.tobytes().translate(_fold_table(n))


def deal_text(text: bytes, n: int) -> tuple[list[bytes], list[bytes]] | None:
    """A chunk of terminated lines dealt to ``n`` shares at once (picks, texts), as
    :func:`share_picks` and joining each share's lines would deal it, or None where the chunk is
    not on the fast reading (:func:`rmkit.linescan.deal_by_key`)."""
    return deal_by_key(text, _KEY, n, _fold_table(n)) if n <= 256 else None


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
        return picks_of(shares, n)
    return [bytes(s == k for s in shares) for k in range(n)]  # (shares beyond 255 fit no byte)


def own_lines(refs, lines: list, k: int, n: int) -> tuple[list, list]:
    """The (refs, lines) of a batch that belong to share ``k`` of ``n``."""
    pick = share_picks(refs, lines, n)[k]
    return list(compress(refs, pick)), list(compress(lines, pick))


def split_lines(refs, lines: list, n: int) -> list[tuple[list, list]]:
    """A batch's (refs, lines) for each of ``n`` shares, in share order, in log order within each."""
    return [(list(compress(refs, pick)), list(compress(lines, pick))) for pick in share_picks(refs, lines, n)]
