"""Load a protocol's spec files (YAML), validate each against its JSON Schema, and fail loudly.

The spec folder is shipped as package data (``rmkit.spec``), so an installed wheel finds it with
``importlib.resources``; ``RMKIT_SPEC_DIR`` points the kit at another copy (useful when editing
the spec of an installed kit). Validation happens at start-up so a broken spec is a clear error
naming file, line and field, never a wrong verdict later.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import yaml

from rmkit.errors import InputError, SpecError, UsageError

SPEC_DIR_ENV = "RMKIT_SPEC_DIR"


def spec_root() -> Path:
    """The folder holding ``schema/`` and one folder per protocol."""
    override = os.environ.get(SPEC_DIR_ENV)
    if override:
        return Path(override)
    return Path(str(resources.files("rmkit.spec")))


def available_protocol_specs() -> list[str]:
    root = spec_root()
    return sorted(p.name for p in root.iterdir() if (p / "protocol.yaml").is_file())


def _yaml_line(node: yaml.Node | None, path: list[Any]) -> int | None:
    """Walk a composed YAML node tree along a JSON path; return the 1-based line of the deepest hit."""
    line = node.start_mark.line + 1 if node is not None else None
    for step in path:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if k.value == str(step)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            nxt = node.value[step]
        else:
            nxt = None
        if nxt is None:
            break
        node, line = nxt, nxt.start_mark.line + 1
    return line


def _dotted(path: list[Any]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


# libyaml's safe loader when PyYAML has it (ten times faster: every command loads the spec), else PyYAML's own
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _refuse_duplicate_keys(root: yaml.Node | None) -> None:
    """A mapping that gives one key twice is an error, with both lines. YAML's loaders keep the
    last value silently, so an entry pasted twice (one transition's target edited in one copy)
    would change the spec's meaning without a word."""
    stack = [root] if root is not None else []
    visited: set[int] = set()  # an alias makes a node reachable twice, or from itself
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value != "<<":
                    name = (key.tag, key.value)
                    if name in first:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"found the key {key.value!r} twice in one mapping (first at line "
                            f"{first[name]}); give each key once", key.start_mark)
                    first[name] = key.start_mark.line + 1
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _load_with_node(text: str) -> tuple[Any, yaml.Node | None]:
    """The document's data and its composed node (for the lines of errors), from one parse:
    the data is constructed from the node rather than by parsing the text a second time."""
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        _refuse_duplicate_keys(node)
        return (loader.construct_document(node) if node is not None else None), node
    finally:
        loader.dispose()


def _read_yaml(text: str, shown: str) -> tuple[Any, yaml.Node | None]:
    try:
        return _load_with_node(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SpecError(shown, "", f"not valid YAML: {getattr(exc, 'problem', exc)}",
                        line=mark.line + 1 if mark else None) from None


@functools.lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    path = spec_root() / "schema" / f"{name}.schema.json"
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpecError(f"spec/schema/{name}.schema.json", "", f"cannot load the schema: {exc}") from None
    import jsonschema  # on demand: a spec that passed before is not validated again (_load_spec_file)

    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def first_schema_error(data: Any, schema_name: str):
    """The first (most specific) ``jsonschema`` error of ``data`` under the schema
    ``spec/schema/<schema_name>.schema.json``, or None when it passes: the deepest path first,
    then jsonschema's best match among those."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    errors = sorted(validator.iter_errors(data), key=lambda e: (-len(e.absolute_path), str(e.absolute_path)))
    return jsonschema.exceptions.best_match(errors) if errors else None


def schema_problem(data: Any, schema_name: str, node: yaml.Node | None = None) -> tuple[str, str, int | None] | None:
    """The first (most specific) schema violation of ``data`` as ``(field path, message, line)``,
    or None when ``data`` passes the schema ``spec/schema/<schema_name>.schema.json``."""
    err = first_schema_error(data, schema_name)
    if err is None:
        return None
    path = list(err.absolute_path)
    return (_dotted(path), f"{err.message} (schema rule: {'/'.join(map(str, err.absolute_schema_path))})",
            _yaml_line(node, path))


def validate_document(data: Any, schema_name: str, shown: str, node: yaml.Node | None = None) -> None:
    """Raise :class:`SpecError` for the first (most specific) schema violation of ``data``."""
    problem = schema_problem(data, schema_name, node)
    if problem is not None:
        where, message, line = problem
        raise SpecError(shown, where, message, line=line)


CACHE_DIR_ENV = "RMKIT_CACHE_DIR"
# what the loader checks beyond the schema (raise it when that changes: a file that passed an
# older loader is read and checked again)
_LOADER_CHECKS = b"loader-2: duplicate keys"


def _passed_dir() -> Path:
    base = os.environ.get(CACHE_DIR_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "rmkit")
    return Path(base) / "spec-passed"


def _compose(path: Path) -> yaml.Node | None:
    """The composed YAML of a spec file that passed before (for the line of an error)."""
    try:
        return yaml.compose(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except (OSError, yaml.YAMLError):
        return None


@functools.lru_cache(maxsize=None)
def _jsonschema_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jsonschema")
    except PackageNotFoundError:
        return "unknown"


def _load_spec_file(path: Path, shown: str, schema_name: str) -> tuple[Any, yaml.Node | None]:
    """A spec file read and validated against its JSON Schema: (data, composed node).

    Reading YAML and validating it is most of a command's start-up, so a file that passed is
    remembered in the user's cache folder (``RMKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/rmkit``):
    its data as JSON, under the digest of its text, its schema's text and the jsonschema version.
    The next start with the very same text and schema reads that JSON and validates nothing; any
    change is read and validated afresh. Node None: compose it on demand (:func:`spec_line`).
    Without a writable cache folder every start reads and validates."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(shown, "", f"cannot read the file ({exc.strerror})") from None
    try:
        schema_text = (spec_root() / "schema" / f"{schema_name}.schema.json").read_bytes()
    except OSError:
        schema_text = b""  # validation below reports it
    digest = hashlib.sha256(b"\0".join((_LOADER_CHECKS, _jsonschema_version().encode(), schema_name.encode(),
                                        schema_text, text.encode()))).hexdigest()
    passed = _passed_dir() / f"{digest}.json"
    try:
        return orjson.loads(passed.read_bytes()), None
    except (OSError, orjson.JSONDecodeError):
        pass
    data, node = _read_yaml(text, shown)
    validate_document(data, schema_name, shown, node)
    try:
        raw = orjson.dumps(data)
        if orjson.loads(raw) == data:  # only what JSON holds exactly (no non-string keys, dates...)
            passed.parent.mkdir(parents=True, exist_ok=True)
            tmp = passed.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(raw)
            os.replace(tmp, passed)
    except (OSError, TypeError, orjson.JSONEncodeError):
        pass
    return data, node


def read_user_document(path: str, option: str) -> tuple[Any, yaml.Node | None]:
    """A user-supplied JSON or YAML file (``option`` names the flag that gave it, e.g.
    ``--validators``) as data plus its composed node for line numbers; :class:`InputError` naming
    the file (and line) when it cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{option} {path}: expected UTF-8 text, found byte 0x{exc.object[exc.start]:02x} "
                         f"at offset {exc.start}") from None
    try:
        return _load_with_node(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{path}:{mark.line + 1}" if mark else path
        raise InputError(f"{option} {at}: not valid JSON or YAML: {getattr(exc, 'problem', exc)}") from None


def check_user_document(data: Any, schema_name: str, node: yaml.Node | None, path: str, option: str) -> None:
    """:class:`InputError` for the first schema violation of a user-supplied document, naming the
    file, line and field."""
    problem = schema_problem(data, schema_name, node)
    if problem is not None:
        where, message, line = problem
        at = f"{path}:{line}" if line else path
        raise InputError(f"{option} {at}: at {where or '(top)'}: {message}")


def yaml_line(node: yaml.Node | None, path: list[Any]) -> int | None:
    """The 1-based line of the field at ``path`` (keys and list indexes) in a composed YAML
    document, or of its deepest ancestor found; for errors in user-supplied YAML or JSON files."""
    return _yaml_line(node, path)


def dotted(path: list[Any]) -> str:
    """A field path as users read it: ``sessions[2].validators[0]``."""
    return _dotted(path)


@functools.lru_cache(maxsize=None)
def load_protocol_spec(protocol: str) -> dict[str, Any]:
    """Every file of ``spec/<protocol>/`` validated, as ``{"protocol": manifest, <part>: data}``.

    Only schema validation happens here; cross-references between files are checked by the
    protocol's own compile step (each protocol knows which names must match).
    """
    root = spec_root() / protocol
    manifest_path = root / "protocol.yaml"
    if not manifest_path.is_file():
        known = ", ".join(available_protocol_specs()) or "none"
        raise UsageError(f"no spec for protocol {protocol!r}: expected {manifest_path}; protocols with a spec: {known}")
    shown = f"spec/{protocol}/protocol.yaml"
    manifest, node = _load_spec_file(manifest_path, shown, "protocol")
    if manifest["protocol"] != protocol:
        raise SpecError(shown, "protocol", f"expected {protocol!r} (the folder name), found {manifest['protocol']!r}",
                        line=_yaml_line(node or _compose(manifest_path), ["protocol"]))
    out: dict[str, Any] = {"protocol": manifest}
    for part, entry in manifest["files"].items():
        shown_part = f"spec/{protocol}/{entry['file']}"
        data, pnode = _load_spec_file(root / entry["file"], shown_part, entry["schema"])
        out[part] = data
        out.setdefault("_nodes", {})[part] = [shown_part, pnode, root / entry["file"]]
    return out


def spec_line(spec: dict[str, Any], part: str, path: list[Any]) -> tuple[str, int | None]:
    """(file shown to users, line) of a field of a loaded spec, for cross-reference errors."""
    entry = spec["_nodes"][part]
    shown, node = entry[0], entry[1]
    if node is None:  # read from the cache of passed files: composed when first needed
        node = entry[1] = _compose(entry[2])
    return shown, _yaml_line(node, path)
