"""Many exact string keys, each numbered and optionally holding a memo (bytes), in a few flat arrays.

Why: an exact log check (one with no bound on when a subject's records may still come) keeps
something of every subject to the end of the log. Kept as Python objects keyed by the subject's
string, the key alone costs about 90 bytes (the string object and its dict entry) and each memo an
object header more; at millions of subjects that is most of the memory. Here a key costs its
UTF-8 bytes in one arena, 32 bits of its fingerprint and a few array cells (about 31 bytes for a
key of 14 characters), and a memo its bytes, compressed a block of memos at a time, and 8 bytes of
offsets.

Exactness: a key is found by its fingerprint (by default the string's own ``hash``), and a
fingerprint that matches is then checked against the key's bytes in the arena. Two keys with the
same fingerprint therefore cost a second look, never a wrong answer (``tests/core/test_keystore.py``
holds that with a fingerprint that collides for every key).

A key's number is dense (0, 1, 2, ... in the order keys were added) and never changes, so callers
may keep their own columns indexed by it, and refer to a key by its number instead of its string.
This file is compiled where a C compiler is found (``setup.py`` builds it with Cython's pure Python
mode, as :mod:`rmkit.logclock`: the store is then a C type, its probing loop, counters and offsets C
integers, and its methods' calls among themselves C calls); elsewhere the same code runs as Python,
with the same results (``tests/core/test_keystore.py`` runs both).

Nothing here names a protocol.
"""

from __future__ import annotations

import zlib
from array import array

try:
    import cython
except ImportError:  # not compiled, and Cython not installed: the annotations below mean nothing
    from rmkit import _cython_shadow as cython

if cython.compiled:  # the table's and the offsets' arrays read in place by a probe (no Python number per cell)
    from cython.cimports.cpython.array import array as CArray
else:
    CArray = None

_EMPTY_SLOTS = 1 << 10
# The table of slots is doubled when more than this share of it is taken: linear probing stays at a
# few probes a lookup below it, and a slot costs 4 bytes.
_MAX_LOAD = 0.6
# The memos are put again into new blocks once the bytes of the memos replaced or dropped are more
# than those of the memos held, and more than this many.
_MIN_GARBAGE = 1 << 20
# Memos a block holds: a compression's cost is partly per block (its state set up), and a longer block
# compresses a little better; a memo read decompresses its whole block (kept for the next reads).
BLOCK_MEMOS = 256
_READ_BLOCKS = 8
# The sealed blocks are kept as they are while they hold fewer bytes than this: a store that stays
# small spends no time compressing; past it, they are all compressed, and so is each sealed after.
_RAW_MEMO_BYTES = 16 << 20
# A key keeps the low 32 bits of its fingerprint: they place it in the table (of fewer than 2**31
# slots) and spare most of the byte comparisons of a probe; the bytes decide (4 bytes a key fewer
# than the whole fingerprint).
_FP_BITS = 0xFFFFFFFF
# A memo's offset in its block and its length are kept in 2 bytes while every one fits (a block of
# BLOCK_MEMOS short memos does), in 4 from the first that does not (_widen).
_NARROW = 0xFFFF
# The memo columns hold cells for up to this many keys beyond those added (-1: no memo), so that a
# key's add grows them once in so many keys (at most 8 bytes a cell).
_MEMO_CELLS = 1 << 10


def _utf8(key: str) -> bytes:
    return key.encode("utf-8", "surrogatepass")


@cython.cclass
class KeyStore:
    """Exact string keys, numbered densely in the order they were added, each with an optional memo.

    ``fingerprint``: str -> int in [-2**63, 2**63) (default: ``hash``); any function is exact, a
    poor one only slower. A store pickles (its keys and memos; the table of fingerprints is rebuilt
    in the process that reads it, where ``hash`` differs, when a key is first looked up there)."""

    # (its C fields are declared in keystore.pxd)

    def __init__(self, fingerprint=hash):
        self.fingerprint = fingerprint
        self._fps = array("I")          # key number -> its fingerprint's low 32 bits (_FP_BITS)
        # key n is _keys[_key_at[n]:_key_at[n + 1]] (4 bytes an offset while the arena is below 4 GB)
        self._key_at = array("I", [0])
        self._keys = bytearray()
        # key number -> its memo's block (-1: none), offset and length in it (_empty_memos)
        self._empty_memos()
        self._table(_EMPTY_SLOTS)

    # keys ------------------------------------------------------------------------------------
    @cython.locals(size=cython.Py_ssize_t, mask=cython.Py_ssize_t, i=cython.Py_ssize_t, n=cython.Py_ssize_t,
                   h=cython.longlong)
    def _table(self, size: int) -> None:
        """The table of slots (key number + 1; 0: empty), ``size`` (a power of two) of them, filled
        from the keys' fingerprints."""
        self._slots = slots = array("i", [0]) * size  # (no bytes object of that size beside it)
        self._mask = mask = size - 1
        for n, h in enumerate(self._fps):
            i = h & mask
            while slots[i]:
                i = (i + 1) & mask
            slots[i] = n + 1

    @cython.cfunc
    @cython.locals(a=cython.Py_ssize_t, b=cython.Py_ssize_t, i=cython.Py_ssize_t, at=CArray)
    def _is(self, n: cython.Py_ssize_t, key) -> cython.bint:
        at = self._key_at
        if cython.compiled:  # (the offsets read in place: 4 bytes each below 4 GB of keys, else 8)
            if at.ob_descr.itemsize == 4:
                a, b = at.data.as_uints[n], at.data.as_uints[n + 1]
            else:
                a, b = at.data.as_longlongs[n], at.data.as_longlongs[n + 1]
        else:
            a, b = at[n], at[n + 1]
        if cython.compiled:  # (the arena's bytes read in place: no slice of it made)
            mine = cython.declare(bytes, _utf8(key))
            if len(mine) != b - a:
                return False
            arena = cython.declare(cython.p_char, self._keys)
            theirs = cython.declare(cython.p_char, mine)
            for i in range(b - a):
                if arena[a + i] != theirs[i]:
                    return False
            return True
        return self._keys[a:b] == _utf8(key)

    @cython.cfunc
    @cython.locals(i=cython.Py_ssize_t, mask=cython.Py_ssize_t, s=cython.Py_ssize_t, slots=CArray, fps=CArray)
    def _slot(self, key, h: cython.longlong) -> cython.Py_ssize_t:
        """The slot that holds ``key`` (fingerprint ``h``), or the empty one where it would go."""
        slots, fps, mask = self._slots, self._fps, self._mask
        i = h & mask
        h &= 0xFFFFFFFF  # (_FP_BITS, a C constant here)
        if cython.compiled:  # (the table's "i" and the fingerprints' "I" cells read in place)
            while True:
                s = slots.data.as_ints[i]
                if not s or (fps.data.as_uints[s - 1] == h and self._is(s - 1, key)):
                    return i
                i = (i + 1) & mask
        while True:
            s = slots[i]
            if not s or (fps[s - 1] == h and self._is(s - 1, key)):
                return i
            i = (i + 1) & mask

    @cython.ccall
    @cython.locals(i=cython.Py_ssize_t)
    def find(self, key) -> cython.Py_ssize_t:
        """``key``'s number; -1 where it was never added."""
        if self._slots is None:
            self._rebuild()
        i = self._slot(key, self.fingerprint(key))
        if cython.compiled:
            slots = cython.declare(CArray, self._slots)
            return slots.data.as_ints[i] - 1
        return self._slots[i] - 1

    @cython.locals(h=cython.longlong, i=cython.Py_ssize_t, n=cython.Py_ssize_t, size=cython.Py_ssize_t, slots=CArray)
    @cython.ccall
    def add(self, key) -> cython.Py_ssize_t:
        """``key``'s number, added where it is new."""
        if self._slots is None:
            self._rebuild()
        h = self.fingerprint(key)
        slots, fps = self._slots, self._fps
        i = self._slot(key, h)
        if cython.compiled:  # (the slot read and written in place)
            if slots.data.as_ints[i]:
                return slots.data.as_ints[i] - 1
        elif slots[i]:
            return slots[i] - 1
        n = len(fps)
        fps.append(h & _FP_BITS)
        self._keys += _utf8(key)
        try:
            self._key_at.append(len(self._keys))
        except OverflowError:
            self._key_at = array("q", self._key_at)
            self._key_at.append(len(self._keys))
        if n >= len(self._memo_blk):
            self._more_memo_cells()
        size = len(slots)
        if cython.compiled:
            slots.data.as_ints[i] = n + 1
        else:
            slots[i] = n + 1
        if n + 1 > _MAX_LOAD * size:
            self._table(size * 2)
        return n

    def _more_memo_cells(self) -> None:
        """The memo columns' cells for the next _MEMO_CELLS keys (-1, 0, 0: no memo): grown a few
        at a time rather than three appends, each a method call, with every key added."""
        self._memo_blk.extend(array("i", [-1]) * _MEMO_CELLS)
        self._memo_off.extend(array(self._memo_off.typecode, [0]) * _MEMO_CELLS)
        self._memo_len.extend(array(self._memo_len.typecode, [0]) * _MEMO_CELLS)

    def _rebuild(self) -> None:
        """The fingerprints and their table, in a process that read the store pickled."""
        self._fps = array("I", (self.fingerprint(self.key(n)) & _FP_BITS for n in range(len(self))))
        size = _EMPTY_SLOTS
        while len(self._fps) >= _MAX_LOAD * size:
            size *= 2
        self._table(size)

    @cython.locals(n=cython.Py_ssize_t, a=cython.Py_ssize_t, b=cython.Py_ssize_t)
    def key(self, n: int) -> str:
        """Key number ``n``'s string (a new string object each call)."""
        at = self._key_at
        a, b = at[n], at[n + 1]
        if cython.compiled:  # (decoded from the arena in place: no slice of it made)
            arena = cython.declare(cython.p_char, self._keys)
            return arena[a:b].decode("utf-8", "surrogatepass")
        return self._keys[a:b].decode("utf-8", "surrogatepass")

    def __len__(self) -> int:
        return len(self._key_at) - 1

    def __contains__(self, key: str) -> bool:
        return self.find(key) >= 0

    # memos -----------------------------------------------------------------------------------
    # Memos are kept in blocks of BLOCK_MEMOS, each compressed once full where the store is large
    # (successive memos of a log check are alike: a block compresses to about a third); the block
    # being filled stays as it is, and a few blocks last read are kept decompressed (the records that ask for memos most often
    # come in about the order the memos were put).
    @cython.ccall
    @cython.locals(n=cython.Py_ssize_t)
    def held(self, key) -> cython.Py_ssize_t:
        """``key``'s number where it holds a memo, else -1."""
        if not self.memos:
            return -1
        n = self.find(key)
        if n < 0:
            return -1
        return n if self._block_of(n) >= 0 else -1

    @cython.cfunc
    @cython.locals(blk=CArray)
    def _block_of(self, n: cython.Py_ssize_t) -> cython.Py_ssize_t:
        """The block of key number ``n``'s memo (-1: none), its cell read in place where compiled."""
        blk = self._memo_blk
        if cython.compiled:
            if not 0 <= n < len(blk):
                raise IndexError(n)
            return blk.data.as_ints[n]
        return blk[n]

    @cython.locals(n=cython.Py_ssize_t)
    def holds(self, n: int) -> bool:
        return self._memo_blk[n] >= 0

    def numbers_held(self):
        """The numbers of the keys that hold a memo, in order."""
        return (n for n, b in enumerate(self._memo_blk) if b >= 0)

    @cython.ccall
    @cython.locals(b=cython.Py_ssize_t, at=cython.Py_ssize_t, size=cython.Py_ssize_t, off=CArray, lens=CArray)
    def memo(self, n: cython.Py_ssize_t):
        """Key number ``n``'s memo, None where it holds none."""
        b = self._block_of(n)
        if b < 0:
            return None
        block = self._open if b == len(self._blocks) else self._block(b)
        if cython.compiled:  # (its offset and length read in place, 2 bytes each or 4: _widen; the
            off, lens = self._memo_off, self._memo_len  # memo copied once, from the block's bytes)
            if off.ob_descr.itemsize == 2:
                at, size = off.data.as_ushorts[n], lens.data.as_ushorts[n]
            else:
                at, size = off.data.as_ints[n], lens.data.as_ints[n]
            if at + size > len(block):
                raise IndexError(n)
            data = cython.declare(cython.p_char, block)
            return data[at:at + size]
        at = self._memo_off[n]
        return bytes(block[at:at + self._memo_len[n]])

    @cython.cfunc
    def _block(self, b: cython.Py_ssize_t):
        if not self._zipped:
            return self._blocks[b]
        block = self._read.get(b)
        if block is None:
            if len(self._read) >= _READ_BLOCKS:
                del self._read[next(iter(self._read))]
            block = self._read[b] = zlib.decompress(self._blocks[b])
        return block

    @cython.ccall
    def put(self, n: cython.Py_ssize_t, memo: bytes):
        """Key number ``n`` holds ``memo`` (in place of any it held)."""
        if self._block_of(n) >= 0:
            self._forget(n)
        self.memos += 1
        self._bytes += len(memo)
        opened = self._open
        if (len(opened) > _NARROW or len(memo) > _NARROW) and self._memo_off.typecode == "H":
            self._widen()
        self._memo_blk[n] = len(self._blocks)
        self._memo_off[n] = len(opened)
        self._memo_len[n] = len(memo)
        opened += memo
        self._live.append(0) if len(self._live) == len(self._blocks) else None
        self._live[-1] += 1
        if self._live[-1] >= BLOCK_MEMOS:
            if self._zipped:
                self._blocks.append(zlib.compress(opened, 1))
            else:
                self._blocks.append(bytes(opened))
                self._raw += len(opened)
                if self._raw > _RAW_MEMO_BYTES:
                    self._zip()
            self._open = bytearray()
        if self._garbage > _MIN_GARBAGE and self._garbage > self._bytes:
            self._compact()

    @cython.locals(n=cython.Py_ssize_t)
    def drop(self, n: int) -> None:
        """Key number ``n`` holds no memo any longer (its key stays)."""
        if self._memo_blk[n] >= 0:
            self._forget(n)

    @cython.cfunc
    @cython.locals(b=cython.Py_ssize_t, size=cython.Py_ssize_t)
    def _forget(self, n: cython.Py_ssize_t):
        b = self._memo_blk[n]
        self._memo_blk[n] = -1
        self.memos -= 1
        size = self._memo_len[n]
        self._bytes -= size
        self._garbage += size
        self._live[b] -= 1
        if not self._live[b] and b < len(self._blocks):  # (a sealed block no memo holds any longer)
            self._blocks[b] = b""
            self._read.pop(b, None)

    def _widen(self) -> None:
        """The memos' offsets and lengths in 4 bytes each, from now on."""
        self._memo_off = array("i", self._memo_off)
        self._memo_len = array("i", self._memo_len)

    def _zip(self) -> None:
        """Every sealed block compressed, and each sealed from now on."""
        blocks = self._blocks
        for b in range(len(blocks)):
            if blocks[b]:
                blocks[b] = zlib.compress(blocks[b], 1)
        self._read.clear()
        self._zipped = True

    def _compact(self) -> None:
        """Every memo put again, into new blocks without the dead ones."""
        held = sorted(((b, self._memo_off[n]), n) for n, b in enumerate(self._memo_blk) if b >= 0)
        memos = [(n, self.memo(n)) for _, n in held]
        self._empty_memos()
        for n, memo in memos:
            self.put(n, memo)

    def _empty_memos(self) -> None:
        size = len(self._key_at) - 1
        self._memo_blk = array("i", [-1]) * size
        self._memo_off = array("H", [0]) * size  # (4 bytes each past _NARROW: _widen)
        self._memo_len = array("H", [0]) * size
        self._blocks = []                # the full blocks (compressed where _zipped)
        self._live = array("i")          # per block (the open one last): the memos it holds
        self._open = bytearray()         # the block being filled
        self._read = {}                  # block -> its bytes, for the blocks last read
        self._bytes = self._garbage = self.memos = self._raw = 0
        self._zipped = False

    def forget_memos(self) -> None:
        """Every memo dropped at once (the keys stay)."""
        self._empty_memos()

    def nbytes(self) -> int:
        """The bytes its arrays and arenas hold (their capacity aside)."""
        arrays = (self._fps, self._slots, self._key_at, self._memo_blk, self._memo_off, self._memo_len, self._live)
        return (sum(a.itemsize * len(a) for a in arrays if a is not None) + len(self._keys) + len(self._open)
                + sum(map(len, self._blocks)))

    # pickling --------------------------------------------------------------------------------
    def __reduce__(self):
        # (the fingerprints are not kept: ``hash`` differs between processes)
        memos = [(n, self.memo(n)) for n in self.numbers_held()]
        return _unpickled, ({"key_at": self._key_at, "keys": self._keys, "memos": memos},)

    def _restore(self, state) -> None:
        self.fingerprint = hash
        self._key_at, self._keys = state["key_at"], state["keys"]
        self._empty_memos()
        for n, memo in state["memos"]:
            self.put(n, memo)
        self._fps = self._slots = None  # (built when a key is first looked up: _rebuild)


def _unpickled(state) -> KeyStore:
    store = KeyStore()
    store._restore(state)
    return store


COMPILED = cython.compiled  # whether this module runs compiled
