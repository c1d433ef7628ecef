# cython: annotation_typing=False
"""RMB-SIG-007: one signature on two different messages.

The v1 challenge joins its pieces with no separator (spec/rmb/signature.yaml), so messages whose
signed fields differ can have one challenge: dst [2, 3] and dst [23], or a uid whose end moves into
cmd. A signature seen on two messages whose signed fields differ is either such a collision or a
signature copied onto another message; the log checker reports it (severity info) wherever the
two messages are in the log, whichever share of a ``--jobs`` run or Spark audit read each.

A share keeps four numbers per signed message it saw (a digest of the signature, a digest of the
signed fields as values, the line's reference and which event it was), in arrays: 25 bytes per
message, not the message. Given a directory (as ``rmkit check`` gives it), a share writes each
full chunk of them to its files there as it fills, so what the index holds in memory is one
chunk whatever the log's length: the merge reads the files (it needs the whole index only once,
after the shares are done).
"""

from __future__ import annotations

import functools
import hashlib
from array import array
from typing import Any, Iterable

import orjson

from rmkit.lazy import numpy_module

# The lines that carry a message as its signer sent it: a daemon's own POST, a recorder's view of one.
SIGNED_EVENTS = ("http-post", "recorded-request")
RULE = "RMB-SIG-007"


def _digest(data: bytes, blake2b=hashlib.blake2b, from_bytes=int.from_bytes) -> int:
    return from_bytes(blake2b(data, digest_size=8).digest(), "little")


_EVENT_NUMBER = {e: i for i, e in enumerate(SIGNED_EVENTS)}  # (SIGNED_EVENTS.index)


@functools.lru_cache(maxsize=None)
def _absent(pieces: tuple) -> tuple:
    """(piece, its value where the message lacks it) of each signed field: pxy absent = false."""
    return tuple((k, False if k == "pxy" else None) for k in pieces)


class SignatureIndex:
    """The signed messages one share saw: signature digest, signed-fields digest, line ref, event
    (``directory``: where its full chunks are written as they fill, None: kept in memory)."""

    def __init__(self, pieces: Iterable[str], directory: str | None = None):
        self.pieces = tuple(pieces)
        self.absent = _absent(self.pieces)
        self.done: list[tuple] = []  # the full chunks kept: (sig, fields, ref, event) arrays of CHUNK entries
        self.files: list[str] | None = None  # the files of the chunks written, a column each (None: none written)
        self.written = 0  # entries in the files
        self.directory = directory
        self._chunk()

    def _chunk(self) -> None:
        """Start a chunk. The arrays grow chunk by chunk, not as one array: one that grows by
        reallocation holds its old and new copies at once, and the holes they leave behind."""
        if getattr(self, "ref", None):
            full = (self.sig, self.fields, self.ref, self.event)
            if self.directory is None:
                self.done.append(full)
            else:
                self._write(full)
        self.sig, self.fields, self.ref, self.event = array("Q"), array("Q"), array("Q"), array("B")
        self.room = CHUNK

    def _write(self, chunk: tuple) -> None:
        """Append a chunk's arrays to the index's files (one per column, made at the first)."""
        import os
        import tempfile

        if self.files is None:
            self.files = []
            for name, _ in _COLUMNS:
                fd, path = tempfile.mkstemp(prefix=f"rmb-signatures-{name}-", dir=self.directory)
                os.close(fd)
                self.files.append(path)
        for path, column in zip(self.files, chunk):
            with open(path, "ab") as f:
                column.tofile(f)
        self.written += len(chunk[2])

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, state):
        self.__dict__.update(state)

    def add(self, ref: int, event: str, msg: Any) -> None:
        number = _EVENT_NUMBER.get(event)
        if number is None or not isinstance(msg, dict):
            return
        sig = msg.get("sig")
        if not isinstance(sig, str) or not sig:
            return
        # the signed fields as values (dst a list, pxy absent = false): two messages differ here
        # even where their concatenated challenge is the same
        get = msg.get
        try:
            fields = orjson.dumps([get(k, d) for k, d in self.absent])
        except TypeError:  # a value JSON cannot hold (a huge integer): judged by the schema rules, not here
            return
        self.sig.append(_digest(sig.encode("utf-8", "surrogatepass")))
        self.fields.append(_digest(fields))
        self.ref.append(ref)
        self.event.append(number)
        self.room -= 1
        if not self.room:
            self._chunk()

    def __len__(self) -> int:
        return self.written + CHUNK * len(self.done) + len(self.ref)

    def _chunks(self) -> list[tuple]:
        return self.done + [(self.sig, self.fields, self.ref, self.event)]

    def columns(self) -> tuple:
        """(sig, fields, ref, event) as numpy arrays (one chunk read in place, more joined)."""
        np = numpy_module()

        if self.files is not None:
            self.spill(self.directory)  # (the chunks written, then the rest: read back as one)
            return SpilledIndex(self.files, self.written).columns()
        chunks = self._chunks()
        return tuple(np.frombuffer(chunks[0][j], dtype=dtype) if len(chunks) == 1 else
                     np.concatenate([np.frombuffer(c[j], dtype=dtype) for c in chunks])
                     for j, (_, dtype) in enumerate(_COLUMNS))

    def spill(self, directory: str) -> "SpilledIndex":
        """This index written to files in ``directory`` (its arrays as they are, no copy made;
        those of an index given a directory were written there as they filled), as a ``--jobs``
        share hands it to the merge: its process need not pickle the arrays (a copy or two of
        them, at the end of the run, when its memory is at its peak) and the merge reads them
        once."""
        if self.files is not None and directory != self.directory:
            raise ValueError(f"the index writes its chunks to {self.directory!r}, not {directory!r}")
        self.directory = directory
        for chunk in self._chunks():
            if len(chunk[2]):
                self._write(chunk)
        self.done = []
        self.sig, self.fields, self.ref, self.event = array("Q"), array("Q"), array("Q"), array("B")
        self.room = CHUNK
        if self.files is None:  # (nothing signed: empty files, read back as no entry)
            self._write(self._chunks()[0])
        return SpilledIndex(self.files, self.written)


# entries of an index's chunk (its arrays: 1.6 MB)
CHUNK = 1 << 16

# the index's arrays and their element types (array typecodes Q and B: 8 bytes and 1, in the machine's order)
_COLUMNS = (("sig", "=u8"), ("fields", "=u8"), ("ref", "=u8"), ("event", "u1"))


class SpilledIndex:
    """A :class:`SignatureIndex` written to files (:meth:`SignatureIndex.spill`, a column each):
    its length and :meth:`columns`, read from the files."""

    def __init__(self, paths: list[str], count: int):
        self.paths, self.count = list(paths), count

    def __len__(self) -> int:
        return self.count

    def columns(self) -> tuple:
        np = numpy_module()

        return tuple(np.fromfile(path, dtype=dtype, count=self.count) for path, (_, dtype) in zip(self.paths, _COLUMNS))


def reused(indices: Iterable[SignatureIndex]) -> list[tuple[str, str, list[tuple[int, str, None]]]]:
    """(rule, why, evidence) for every signature that signs messages with different signed fields:
    the first line of each of the first two different messages, in line order."""
    np = numpy_module()

    parts = [i for i in indices if len(i)]
    if not parts:
        return []
    if len(parts) == 1:
        sig, fields, ref, event = parts[0].columns()  # (one share's arrays read in place, not copied)
    else:
        columns = [i.columns() for i in parts]
        sig, fields, ref, event = (np.concatenate([c[j] for c in columns]) for j in range(len(_COLUMNS)))
        columns = None  # (the shares' arrays freed before the sort; compiled, a variable a generator reads cannot be deleted)
    order = np.lexsort((ref, fields, sig))
    sig, fields, ref, event = sig[order], fields[order], ref[order], event[order]
    # a signature whose sorted run holds more than one fields digest
    same_sig = sig[1:] == sig[:-1]
    other_fields = fields[1:] != fields[:-1]
    hits = np.nonzero(same_sig & other_fields)[0]
    out, seen = [], set()
    for k in hits:
        s = int(sig[k])
        if s in seen:
            continue
        seen.add(s)
        start = int(np.searchsorted(sig, sig[k], side="left"))
        a, b = start, int(k) + 1  # the first line of the first fields digest, the first of the next
        lines = sorted(((int(ref[a]), SIGNED_EVENTS[event[a]]), (int(ref[b]), SIGNED_EVENTS[event[b]])))
        out.append((RULE, "one signature on two messages whose signed fields differ (the challenge joins them "
                    "without a separator, so such messages can share it; or the signature was copied)",
                    [(r, e, None) for r, e in lines]))
    return out
