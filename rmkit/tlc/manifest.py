"""``tla/manifest.json``: which TLA+ models the kit ships, how to check them, what to expect.

Why a manifest (in the style of the tlaplus/Examples one): the command line must not name
protocols, the expected figures (distinct states, depth) belong next to the model rather than
in code, and CI can tell a fast config from a slow one. The loader checks the file's shape and
says what it expected, what it found and where, so a typo is a clear error rather than a
``KeyError`` halfway through a run.

The ``tla/`` folder is shipped in the wheel as the package ``rmkit.tla``; ``RMKIT_TLA_DIR``
points the kit at another copy (as ``RMKIT_SPEC_DIR`` does for the spec files).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rmkit.errors import SpecError, UsageError
from rmkit.tlc.result import ASSERTION, ASSUMPTION, DEADLOCK, INVARIANT, PASS, PROPERTY, VIOLATION, TlcResult

TLA_DIR_ENV = "RMKIT_TLA_DIR"
MANIFEST = "manifest.json"
RESULTS = ("success", "safety failure", "liveness failure", "deadlock failure", "assumption failure")

_MODEL_KEYS = {"name": str, "path": str, "spec": str, "source": str, "configs": list, "properties": list}
_CONFIG_KEYS = {"name": str, "module": str, "cfg": str, "workers": int, "runtime": str, "result": str,
                "distinctStates": (int, type(None)), "totalStates": (int, type(None)), "depth": (int, type(None)),
                "deadlock": bool, "slow": bool, "finding": dict, "simulate": dict}
# "properties": every promise of the model with the mutation that breaks it and a witness (read by
# the mutation runner, rmkit.tlc.mutations)
_OPTIONAL = {"source", "finding", "simulate", "properties", "runtime", "slow"}
# A config may expect a violation: a finding the model exists to show (e.g. a property an
# implementation is known not to keep). Its counterexample is reported, and the run passes.
_FINDING_KEYS = {"invariant": str, "rule": str, "profile": str, "summary": str}
# A config too large to search exhaustively is checked by TLC's simulation mode: random behaviours
# of a given depth, from a given seed, for a given time (no figures to expect: it never completes).
_SIMULATE_KEYS = {"depth": int, "seed": int, "traces": int}
# Each property a model claims names the mechanism-removal mutation that breaks it and a witness that
# the states it speaks of are reachable (``rmkit.tlc.mutations`` runs both). ``runtime`` is the
# measured time of the run (HH:MM:SS, one worker); ``slow`` keeps it out of the default test run.
_PROPERTY_KEYS = {"name": str, "kind": str, "promises": str, "adversary": str, "mutation": dict, "witness": dict}
_MUTATION_KEYS = {"what": str, "config": str, "edits": list, "expect": str, "runtime": str, "slow": bool}
_EDIT_KEYS = {"file": str, "old": str, "new": str}
_WITNESS_KEYS = {"config": str, "invariant": str, "runtime": str, "slow": bool}
PROPERTY_KINDS = ("invariant", "property")
EXPECTS = ("violation", "liveness", "deadlock")


def tla_root() -> Path:
    """The folder holding ``manifest.json`` and one folder per model."""
    override = os.environ.get(TLA_DIR_ENV)
    if override:
        return Path(override)
    return Path(str(resources.files("rmkit.tla")))


@dataclass
class ConfigEntry:
    """One way to check a model: a TLC root module + cfg, and the figures it is expected to give."""

    name: str
    module: str
    cfg: str
    workers: int
    runtime: str
    result: str
    distinct_states: int | None
    total_states: int | None
    depth: int | None
    deadlock: bool    # False: run with -deadlock (deadlock checking off)
    slow: bool
    finding: dict | None = None   # an expected violation: invariant, rule, profile, summary
    simulate: dict | None = None  # checked by simulation only: depth, seed, traces (behaviours)

    def expected_finding(self, result: TlcResult) -> bool:
        """True when ``result`` is this config's expected finding: the named invariant violated."""
        return (self.finding is not None and result.verdict == VIOLATION and bool(result.counterexamples)
                and result.counterexamples[0].name == self.finding["invariant"])

    @property
    def runtime_s(self) -> int:
        h, m, s = (int(x) for x in self.runtime.split(":"))
        return h * 3600 + m * 60 + s


@dataclass
class Edit:
    """One textual change of a model file: ``old`` must occur exactly once in ``file``."""

    file: str
    old: str
    new: str


@dataclass
class Mutation:
    """A copy of the model with one mechanism removed (``edits``), checked on ``config`` for the
    property alone; ``expect`` is how TLC must report it (a safety violation, a liveness violation,
    or a deadlock)."""

    what: str
    config: str
    edits: list[Edit]
    expect: str
    runtime: str | None = None
    slow: bool | None = None   # None: as its configuration


@dataclass
class Witness:
    """An invariant of the configuration's root module that TLC must violate: the states the
    property speaks of are reachable under the configuration's bounds."""

    config: str
    invariant: str
    runtime: str | None = None
    slow: bool | None = None   # None: as its configuration


@dataclass
class PropertyEntry:
    """A property a model claims: what it promises, under which adversary, the mutation that breaks
    it and the witness that its states are reachable."""

    name: str
    kind: str   # invariant | property (temporal)
    promises: str
    adversary: str
    mutation: Mutation
    witness: Witness


@dataclass
class ModelEntry:
    name: str
    path: str
    spec: str
    source: str | None
    configs: list[ConfigEntry]
    root: Path
    properties: list[PropertyEntry] = field(default_factory=list)

    @property
    def dir(self) -> Path:
        return self.root / self.path

    @property
    def default_config(self) -> ConfigEntry:
        """The first config not marked slow (the first one if all are)."""
        return next((c for c in self.configs if not c.slow), self.configs[0])

    def config(self, name: str | None) -> ConfigEntry:
        if name is None:
            return self.default_config
        for c in self.configs:
            if c.name == name:
                return c
        raise UsageError(f"model {self.name!r} has no config {name!r}; configs: {', '.join(c.name for c in self.configs)}")

    def missing_files(self, cfg: ConfigEntry | None = None) -> list[str]:
        """Files the manifest names that are not there (the spec, and the config's module and cfg)."""
        names = [self.spec] + ([f"{cfg.module}.tla", cfg.cfg] if cfg else [])
        return [n for n in dict.fromkeys(names) if not (self.dir / n).is_file()]


@dataclass
class Manifest:
    models: list[ModelEntry]
    path: Path

    @property
    def default_model(self) -> ModelEntry:
        return self.models[0]

    def model(self, name: str | None) -> ModelEntry:
        if name is None:
            return self.default_model
        for m in self.models:
            if m.name == name:
                return m
        raise UsageError(f"unknown model {name!r}; models in {self.path}: {', '.join(m.name for m in self.models)}")


def _type_name(t: Any) -> str:
    if isinstance(t, tuple):
        return " or ".join(_type_name(x) for x in t)
    return {str: "a string", int: "an integer", bool: "true or false", list: "a list", type(None): "null"}[t]


def _found(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    kind = {str: "string", int: "integer", float: "number", list: "list", dict: "object"}.get(type(v), type(v).__name__)
    shown = json.dumps(v)
    return f"{kind} {shown if len(shown) <= 40 else shown[:40] + '…'}"


def _check_keys(obj: Any, keys: dict[str, Any], shown: str, where: str) -> None:
    if not isinstance(obj, dict):
        raise SpecError(shown, where, f"expected an object, found {_found(obj)}")
    unknown = [k for k in obj if k not in keys]
    if unknown:
        raise SpecError(shown, f"{where}.{unknown[0]}", f"unknown key; expected one of {', '.join(keys)}")
    for key, typ in keys.items():
        if key not in obj:
            if key in _OPTIONAL:
                continue
            raise SpecError(shown, where, f"missing key {key!r} (expected {_type_name(typ)})")
        val = obj[key]
        ok = isinstance(val, typ) and not (isinstance(val, bool) and typ in (int, (int, type(None))))
        if not ok:
            raise SpecError(shown, f"{where}.{key}", f"expected {_type_name(typ)}, found {_found(val)}")


def _config(obj: Any, shown: str, where: str) -> ConfigEntry:
    if isinstance(obj, dict) and obj.get("workers") == "auto":
        raise SpecError(shown, f"{where}.workers", "expected an integer >= 1, found string \"auto\" "
                                                   "(TLC 2.15 has no -workers auto)")
    _check_keys(obj, _CONFIG_KEYS, shown, where)
    if obj["workers"] < 1:
        raise SpecError(shown, f"{where}.workers", f"expected an integer >= 1, found {obj['workers']}")
    if not re.fullmatch(r"\d{2}:\d{2}:\d{2}", obj["runtime"]):
        raise SpecError(shown, f"{where}.runtime", f"expected HH:MM:SS, found {_found(obj['runtime'])}")
    if obj["result"] not in RESULTS:
        raise SpecError(shown, f"{where}.result", f"expected one of {', '.join(RESULTS)}; found {_found(obj['result'])}")
    if not obj["cfg"].endswith(".cfg"):
        raise SpecError(shown, f"{where}.cfg", f"expected a file name ending in .cfg, found {_found(obj['cfg'])}")
    for key in ("distinctStates", "totalStates", "depth"):
        if obj[key] is not None and obj[key] < 0:
            raise SpecError(shown, f"{where}.{key}", f"expected a number >= 0 or null, found {obj[key]}")
    if "finding" in obj:
        _check_keys(obj["finding"], _FINDING_KEYS, shown, f"{where}.finding")
        if obj["result"] != "safety failure":
            raise SpecError(shown, f"{where}.result", f"a config with a finding expects \"safety failure\", found {_found(obj['result'])}")
    if "simulate" in obj:
        _check_keys(obj["simulate"], _SIMULATE_KEYS, shown, f"{where}.simulate")
        for key in ("depth", "traces"):
            if obj["simulate"][key] < 1:
                raise SpecError(shown, f"{where}.simulate.{key}", f"expected an integer >= 1, found {obj['simulate'][key]}")
        figures = [k for k in ("distinctStates", "totalStates", "depth") if obj[k] is not None]
        if figures:
            raise SpecError(shown, f"{where}.{figures[0]}", "a simulated config never completes: expected null, "
                                                           f"found {obj[figures[0]]}")
    return ConfigEntry(obj["name"], obj["module"].removesuffix(".tla"), obj["cfg"], obj["workers"], obj["runtime"],
                       obj["result"], obj["distinctStates"], obj["totalStates"], obj["depth"], obj["deadlock"], obj["slow"],
                       obj.get("finding"), obj.get("simulate"))


def _runtime(obj: dict, shown: str, where: str) -> None:
    if "runtime" in obj and not re.fullmatch(r"\d{2}:\d{2}:\d{2}", obj["runtime"]):
        raise SpecError(shown, f"{where}.runtime", f"expected HH:MM:SS, found {_found(obj['runtime'])}")


def _property(obj: Any, configs: list[ConfigEntry], shown: str, where: str) -> PropertyEntry:
    _check_keys(obj, _PROPERTY_KEYS, shown, where)
    if obj["kind"] not in PROPERTY_KINDS:
        raise SpecError(shown, f"{where}.kind", f"expected one of {', '.join(PROPERTY_KINDS)}; found {_found(obj['kind'])}")
    names = [c.name for c in configs]
    mut, wit = obj["mutation"], obj["witness"]
    _check_keys(mut, _MUTATION_KEYS, shown, f"{where}.mutation")
    _check_keys(wit, _WITNESS_KEYS, shown, f"{where}.witness")
    for part, key in ((mut, "mutation"), (wit, "witness")):
        if part["config"] not in names:
            raise SpecError(shown, f"{where}.{key}.config", f"expected a config of this model ({', '.join(names)}); "
                                                            f"found {_found(part['config'])}")
        _runtime(part, shown, f"{where}.{key}")
    if mut["expect"] not in EXPECTS:
        raise SpecError(shown, f"{where}.mutation.expect", f"expected one of {', '.join(EXPECTS)}; found {_found(mut['expect'])}")
    if not mut["edits"]:
        raise SpecError(shown, f"{where}.mutation.edits", "expected at least one edit, found an empty list")
    edits = []
    for k, e in enumerate(mut["edits"]):
        _check_keys(e, _EDIT_KEYS, shown, f"{where}.mutation.edits[{k}]")
        if e["old"] == e["new"]:
            raise SpecError(shown, f"{where}.mutation.edits[{k}].new", "expected a text other than old (the edit changes nothing)")
        edits.append(Edit(e["file"], e["old"], e["new"]))
    return PropertyEntry(obj["name"], obj["kind"], obj["promises"], obj["adversary"],
                         Mutation(mut["what"], mut["config"], edits, mut["expect"], mut.get("runtime"), mut.get("slow")),
                         Witness(wit["config"], wit["invariant"], wit.get("runtime"), wit.get("slow")))


def load_manifest(root: str | os.PathLike | None = None) -> Manifest:
    """Read and validate ``<root>/manifest.json`` (default root: :func:`tla_root`)."""
    base = Path(root) if root is not None else tla_root()
    path = base / MANIFEST
    shown = str(path) if root is not None or os.environ.get(TLA_DIR_ENV) else f"tla/{MANIFEST}"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(shown, "", f"cannot read the model manifest ({exc.strerror or exc})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(shown, "", f"not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    _check_keys(doc, {"models": list}, shown, "(top)")
    if not doc["models"]:
        raise SpecError(shown, "models", "expected at least one model, found an empty list")
    models: list[ModelEntry] = []
    for i, m in enumerate(doc["models"]):
        where = f"models[{i}]"
        _check_keys(m, _MODEL_KEYS, shown, where)
        if any(x.name == m["name"] for x in models):
            raise SpecError(shown, f"{where}.name", f"expected a unique model name, found {m['name']!r} twice")
        if not m["spec"].endswith(".tla"):
            raise SpecError(shown, f"{where}.spec", f"expected a file name ending in .tla, found {_found(m['spec'])}")
        if not m["configs"]:
            raise SpecError(shown, f"{where}.configs", "expected at least one config, found an empty list")
        configs: list[ConfigEntry] = []
        for j, c in enumerate(m["configs"]):
            cfg = _config(c, shown, f"{where}.configs[{j}]")
            if any(x.name == cfg.name for x in configs):
                raise SpecError(shown, f"{where}.configs[{j}].name", f"expected a unique config name, found {cfg.name!r} twice")
            configs.append(cfg)
        properties: list[PropertyEntry] = []
        for j, p in enumerate(m.get("properties", [])):
            # a property resting on several mechanisms has one entry per mechanism (the same name)
            properties.append(_property(p, configs, shown, f"{where}.properties[{j}]"))
        models.append(ModelEntry(m["name"], m["path"], m["spec"], m.get("source"), configs, base, properties))
    return Manifest(models, path)


# -- expected figures -----------------------------------------------------------------------------
@dataclass
class Expectation:
    """One figure the manifest promises, and what the run found."""

    figure: str
    expected: Any
    found: Any
    match: bool = field(init=False)

    def __post_init__(self) -> None:
        self.match = self.expected == self.found


def result_name(result: TlcResult) -> str:
    """The manifest's name for a run's outcome (``success``, ``safety failure``, ...; ``error``)."""
    if result.verdict == PASS:
        return "success"
    if result.verdict != VIOLATION:
        return "error"
    ce = result.counterexamples[0]
    if ce.kind == DEADLOCK:
        return "deadlock failure"
    if ce.kind == ASSUMPTION:
        return "assumption failure"
    if ce.kind == PROPERTY and (ce.lasso is not None or ce.stutters):
        return "liveness failure"
    if ce.kind in (INVARIANT, PROPERTY, ASSERTION):
        return "safety failure"
    return "error"


def compare(result: TlcResult, config: ConfigEntry) -> list[Expectation]:
    """The manifest's figures against a finished model-checking run (empty for a simulation or an
    unfinished run, where they do not apply). A mismatch is information, not a failure."""
    if result.mode != "model-check" or not result.complete or result.verdict == "error":
        return []
    out = [Expectation("result", config.result, result_name(result))]
    for figure, expected, found in (("distinctStates", config.distinct_states, result.distinct_states),
                                    ("totalStates", config.total_states, result.total_states),
                                    ("depth", config.depth, result.depth)):
        if expected is not None:
            out.append(Expectation(figure, expected, found))
    return out
