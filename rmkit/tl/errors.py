"""The one error type of the TL codec.

Why a single type with structured parts: a caller that decodes untrusted bytes (a receipt from a
log, a signed receipt from the wire) needs to tell the user what was expected, what was found,
and where -- the byte offset and the field path -- without parsing the message. ``TlError`` is a
``ValueError`` so that code which treats "bad input" uniformly keeps working.
"""

from __future__ import annotations


class TlError(ValueError):
    """A schema line cannot be parsed, a value cannot be serialized, or bytes cannot be decoded.

    ``expected`` and ``found`` say what was wanted and what was there; ``offset`` is the byte
    offset in the decoded input (``None`` when serializing or parsing a schema); ``path`` is the
    field path from the outermost object, e.g. ``tonNode.blockIdExt.seqno``.
    """

    def __init__(self, expected: str, found: str, *, offset: int | None = None, path: str = ""):
        self.expected, self.found, self.offset, self.path = expected, found, offset, path
        where = f"{path}: " if path else ""
        at = f" at byte offset {offset}" if offset is not None else ""
        super().__init__(f"{where}expected {expected}, found {found}{at}")
