"""A small, protocol-independent TL (Type Language) toolkit.

TL is the serialization of the TON family of node protocols: constructors declared by schema
lines, identified on the wire by the CRC32 of their normalized line. This package parses such
lines (:mod:`.schema`), holds the byte-level rules (:mod:`.wire`) and serializes and strictly
deserializes values (:mod:`.codec`). Protocol code (a protocol's signed records) keeps its schema lines in
its spec files and builds on these pieces; nothing here knows about any protocol.
"""

from rmkit.tl.codec import deserialize, serialize
from rmkit.tl.errors import TlError
from rmkit.tl.schema import BUILTINS, Constructor, Field, Schema, TypeRef, constructor_id, normalize, parse_line, type_ref
from rmkit.tl.wire import pack_bytes, unpack_bytes

__all__ = ["BUILTINS", "Constructor", "Field", "Schema", "TlError", "TypeRef", "constructor_id", "deserialize",
           "normalize", "pack_bytes", "parse_line", "serialize", "type_ref", "unpack_bytes"]
