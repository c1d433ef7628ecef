"""Finding a quoted key's value in every line of a batch at once, for the readers of ``--jobs``
runs that deal each line to the share its value names (a protocol names the key and the share of
a value's last byte; a protocol's ``shares`` module is one).

The *fast reading* of a line: the quoted key (``"message_id"``, say) occurs in it exactly once
(occurrences that overlap counted apart), right after it a colon and a quote, and the first quote
after that one, which closes a non-empty value, is in the same line. Where every line of a batch
reads so, its value's last byte is the one a reader of the last key would find; where any line does
not, the batch is the caller's to read line by line (None).

:func:`deal_by_key` deals a chunk in one call with the compiled scanner (``rmkit._linescan``,
built by ``pip install`` where a C compiler is found). Where it was not built it answers None, and
the reader deals the chunk as it deals any batch: its lines split, then the protocol's batch proof
(:func:`last_value_bytes`, array operations with numpy), line by line where that fails. Both ways
give the same answer on every text; a test (``test_linescan.py``) holds them equal.
``RMKIT_PURE_PYTHON=1`` in the environment leaves the compiled scanner out (to compare, or to rule
it out).
"""

from __future__ import annotations

import os

from rmkit.lazy import numpy_module


_QUOTE = ord('"')
_VALUE_OPENS = (ord(":"), ord('"'))  # what follows the key on the fast reading: a colon, the value's quote
# share -> a translation of share numbers into 1 (this share) / 0 (another)
_PICK: dict[int, bytes] = {}


def _compiled():
    if os.environ.get("RMKIT_PURE_PYTHON", "") not in ("", "0"):
        return None, None, None
    try:
        from rmkit._linescan import braced_lines, deal_by_key, line_hashes
    except ImportError:  # not built (no C compiler at install): the caller deals the chunk's lines itself
        return None, None, None
    return deal_by_key, braced_lines, line_hashes


_COMPILED, _BRACED, _LINE_HASHES = _compiled()
COMPILED = _COMPILED is not None  # whether deal_by_key and braced_lines run the compiled scanner


def pick_table(k: int) -> bytes:
    """A translation of share numbers into 1 (share ``k``) / 0 (another)."""
    table = _PICK.get(k)
    if table is None:
        table = _PICK[k] = bytes(int(c == k) for c in range(256))
    return table


def picks_of(shares: bytes, n: int) -> list[bytes]:
    """Each of ``n`` shares' pick of a batch whose lines' shares are ``shares`` (a byte a line): a
    byte a line, 1 where the line is that share's (a --jobs reader's ``deal``)."""
    return [shares.translate(pick_table(k)) for k in range(n)]


def last_value_bytes(lines: list, key: bytes, text: bytes | None = None, terminated: bool = False):
    """The last byte of each line's value on the fast reading (a numpy array of bytes), or None
    when a line of the batch does not read so. ``text``: the lines joined by newlines when the
    reader has them so (anything may follow them); joined here otherwise. ``terminated``: each
    line ends with its newline (the text: the lines one after the other).

    The proof, with array operations over the text instead of a call per line: the quoted key
    occurs exactly as often as there are lines, each occurrence after its line's start and its
    colon and quote before the line's end (one in each line); the value's closing quote, the first
    quote after the opening one, is in the same line and not the opening one's neighbour."""
    if not lines or type(lines[0]) is not bytes:
        return None
    np = numpy_module()
    pattern = np.frombuffer(key, np.uint8)
    lengths = np.fromiter(map(len, lines), np.int64, len(lines))
    if terminated:
        lengths -= 1  # (without the newline, which each line has)
    ends = np.cumsum(lengths + 1) - 1  # where each line ends (its newline, or the text's end)
    if text is None:
        text = (b"" if terminated else b"\n").join(lines)
    a = np.frombuffer(text, np.uint8, count=int(ends[-1]))
    quotes = np.flatnonzero(a == _QUOTE)
    found = quotes[quotes <= a.size - pattern.size]
    for i in range(1, pattern.size):  # the quotes that open the key: kept while the next bytes match it
        found = found[a[found + i] == pattern[i]]
    if found.size != len(lines):
        return None
    starts = ends - lengths
    opens = found + pattern.size  # the colon, then the value's opening quote
    if not (np.all(found >= starts) and np.all(opens + 1 < ends)):  # one key in each line, its ":" and quote in it too
        return None
    if not (np.all(a[opens] == _VALUE_OPENS[0]) and np.all(a[opens + 1] == _VALUE_OPENS[1])):
        return None
    at = np.searchsorted(quotes, opens + 2)  # the first quote after the opening one
    if at[-1] >= quotes.size:
        return None
    closing = quotes[at]
    if not np.all(closing < ends) or not np.all(closing > opens + 2):  # in the line; the value not empty
        return None
    return a[closing - 1]


def deal_by_key(text: bytes, key: bytes, n: int, fold: bytes) -> tuple[list[bytes], list[bytes]] | None:
    """A chunk's lines dealt to ``n`` shares by the fast reading of ``key`` (quoted, e.g.
    ``b'"message_id"'``): (for each share a byte per line, 1 where the line is that share's; for
    each share its lines one after the other), or None where a line does not read so or the
    compiled scanner was not built (the caller deals the chunk's lines itself). ``text``: lines,
    each ending with its newline; ``fold``: 256 bytes, the share of each byte a value may end with
    (a byte >= n there: not dealt, None)."""
    return None if _COMPILED is None else _COMPILED(text, key, n, fold)


def braced_lines(text: bytes) -> int:
    """How many lines ``text`` holds (lines, each ending with its newline) when every one starts
    with "{" and ends with "}" right before its newline, else 0 (and 0 for an empty text). Where
    they do, no JSON value runs from one line into the next (after a "}" that ends a line inside a
    value JSON allows only ",", "}" or "]", never "{"), so a decoder of values one after the other
    (msgspec's ``decode_lines``) finds each line's value, one a line, as decoding each line alone
    would. A memchr loop where compiled (counting in Python costs as much as the decoding it saves)."""
    if _BRACED is not None:
        return _BRACED(text)
    n = text.count(b"\n")
    braced = (n > 0 and text[-1] == 0x0A and text[0] == 0x7B and text.count(b"}\n") == n
              and text.count(b"\n{") == n - 1)
    return n if braced else 0


def _python_line_hashes(lines: list) -> list:
    """Python's ``hash`` of each line: equal lines alike, different ones almost never."""
    return list(map(hash, lines))


# A 64-bit hash of each line of a list (a list of numbers): what a checker knows a redelivered
# (byte-identical) record line by. The compiled scanner's reads eight bytes a step, for about a
# fifth of the instructions of Python's hash of bytes; Python's where it was not built. Both know
# the same lines alike (a line that is not bytes gets Python's hash in either).
line_hashes = _LINE_HASHES if _LINE_HASHES is not None else _python_line_hashes
