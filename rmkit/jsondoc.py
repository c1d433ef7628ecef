"""One JSON document from a user's file (a saved scenario), read with the limits every reader of
the kit keeps: a UTF-8 byte order mark skipped, JSON read by orjson (as the log readers read it),
at most :data:`rmkit.logread.MAX_LINE_BYTES`, nesting at most :data:`MAX_NESTING` levels, then
held to its JSON Schema in ``spec/schema/`` (types and ranges of every field). Each problem is
(field, what is wrong, line) for the reader to word in its own way, so that the file's reader
never meets a value of a type it does not expect (docs/input-limits.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from rmkit.logread import MAX_LINE_BYTES, UTF8_BOM

# Deeper than any document of the kit (a scenario is four levels deep): a file past this is no
# scenario, and is refused before a schema validator or a line finder walks it recursively.
MAX_NESTING = 32


class DocumentError(Exception):
    """The file cannot be read as one JSON document; ``str()`` says why, ``line`` where if known."""

    def __init__(self, what: str, line: int | None = None):
        super().__init__(what)
        self.line = line


def read_json_document(path: str | Path) -> tuple[Any, bytes]:
    """(data, text) of the JSON file at ``path``; :class:`DocumentError` when it cannot be read,
    is too large or is not JSON (orjson's own nesting limit included)."""
    try:
        with open(path, "rb") as f:
            text = f.read(MAX_LINE_BYTES + len(UTF8_BOM) + 1)
    except OSError as exc:
        raise DocumentError(f"cannot read ({exc.strerror or exc})") from None
    if text.startswith(UTF8_BOM):
        text = text[len(UTF8_BOM):]
    if len(text) > MAX_LINE_BYTES:
        raise DocumentError(f"larger than {MAX_LINE_BYTES:,} bytes (16 MiB): no scenario is; not read")
    try:
        return orjson.loads(text), text
    except orjson.JSONDecodeError as exc:
        raise DocumentError(f"not JSON ({str(exc)[:200]})", getattr(exc, "lineno", None)) from None


def nesting_problem(data: Any, limit: int = MAX_NESTING) -> list[Any] | None:
    """The path of the first value nested deeper than ``limit`` levels, or None (without
    recursion: the document may be orjson's 1024 levels deep)."""
    stack = [(data, [])]
    while stack:
        value, path = stack.pop()
        if len(path) > limit:
            return path
        if isinstance(value, dict):
            stack.extend((v, path + [k]) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, path + [i]) for i, v in enumerate(value))
    return None


def document_problem(data: Any, schema_name: str, text: bytes = b"") -> tuple[str, str, int | None] | None:
    """(field, what is wrong, line) of the first problem of ``data`` under
    ``spec/schema/<schema_name>.schema.json``, or None. A required field that is missing is
    named as the field, not as its parent."""
    from rmkit.specload import dotted, first_schema_error

    deep = nesting_problem(data)
    if deep is not None:
        return dotted(deep[:MAX_NESTING]), f"nested deeper than {MAX_NESTING} levels (no field of the format is)", None
    err = first_schema_error(data, schema_name)
    if err is None:
        return None
    path = list(err.absolute_path)
    message = err.message[:300]
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = [name for name in err.validator_value if name not in err.instance]
        path, message = path + missing[:1], "missing"
    elif err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = err.schema.get("properties", {})
        path = path + [name for name in err.instance if name not in known][:1]
        message = f"not a field of the format (expected one of {', '.join(known)})"
    return dotted(path) or "(top)", f"{message} (spec/schema/{schema_name}.schema.json)", _line(text, path)


def _line(text: bytes, path: list[Any]) -> int | None:
    """The line of ``path`` in a document already read and bounded (PyYAML reads JSON)."""
    import yaml

    from rmkit.specload import yaml_line

    if not text or b"\n" not in text.strip():
        return None  # one line: its number says nothing
    try:
        node = yaml.compose(text.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return None
    return yaml_line(node, path)
