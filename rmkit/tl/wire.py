"""TL primitives: the length prefix of ``string``/``bytes`` and fixed-size integers.

Why separate from the generic codec: these few functions are the whole of TL's byte-level rules,
and protocol code with a hand-compiled fast path (e.g. for its records) must use exactly the same
rules as the generic codec; both import them from here.

Length-prefixed data: one length byte when the length is below 254, else the byte 0xfe and the
length in 3 bytes little-endian; then the data; then zero bytes so that prefix + data is a
multiple of 4. Decoding is canonical-only: a 0xfe prefix for a length below 254, the reserved
prefix 0xff, or a non-zero padding byte are errors, so every value has exactly one encoding (and
re-serializing decoded bytes gives the same bytes, which signature checks rely on).
"""

from __future__ import annotations

from rmkit.tl.errors import TlError

MAX_BYTES_LEN = (1 << 24) - 1
_PAD = (b"", b"\0\0\0", b"\0\0", b"\0")

#: (bits, signed range) of the fixed-size integer built-ins, for range checks and messages.
INT_RANGES = {"int": (-(1 << 31), (1 << 31) - 1), "long": (-(1 << 63), (1 << 63) - 1)}


def pack_bytes(data: bytes) -> bytes:
    """The TL encoding of a ``bytes`` (or UTF-8 ``string``) value: prefix, data, zero padding."""
    n = len(data)
    if n < 254:
        head = bytes((n,))
        total = 1 + n
    elif n <= MAX_BYTES_LEN:
        head = b"\xfe" + n.to_bytes(3, "little")
        total = 4 + n
    else:
        raise TlError(f"at most {MAX_BYTES_LEN} bytes", f"{n} bytes")
    return head + data + _PAD[total & 3]


def unpack_bytes(buf: bytes | memoryview, offset: int, path: str = "") -> tuple[bytes, int]:
    """Read one length-prefixed value at ``offset``; return (data, offset after the padding)."""
    end = len(buf)
    if offset >= end:
        raise TlError("a length prefix (1 byte)", "the end of the input", offset=offset, path=path)
    first = buf[offset]
    if first < 254:
        n, start = first, offset + 1
    elif first == 254:
        if offset + 4 > end:
            raise TlError("a 0xfe length prefix with 3 length bytes", f"{end - offset - 1} length bytes before the end",
                          offset=offset, path=path)
        n = int.from_bytes(buf[offset + 1:offset + 4], "little")
        start = offset + 4
        if n < 254:
            raise TlError("the 1-byte length prefix for a length below 254 (canonical form)",
                          f"the 0xfe form for length {n}", offset=offset, path=path)
    else:
        raise TlError("a length prefix below 0xff (0xff is reserved)", "0xff", offset=offset, path=path)
    stop = start + n
    if stop > end:
        raise TlError(f"{n} bytes of data", f"{end - start} bytes before the end", offset=start, path=path)
    padded = (stop - offset + 3) & ~3
    after = offset + padded
    if after > end:
        raise TlError(f"{after - stop} zero padding bytes", f"{end - stop} bytes before the end", offset=stop, path=path)
    for i in range(stop, after):
        if buf[i]:
            raise TlError("zero padding bytes", f"0x{buf[i]:02x}", offset=i, path=path)
    return bytes(buf[start:stop]), after
