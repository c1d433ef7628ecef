"""The JSON Schema of one line of a Corda node's events file, generated from spec/corda/records.yaml
(the format's one definition) into spec/schema/corda-record-line.schema.json, for implementers whose
tools validate with JSON Schema (spec/corda/node.md). ``python -m rmkit.conformance.corda.recordschema``
prints it; a test holds the committed file equal to it."""

from __future__ import annotations

import json
import sys
from typing import Any

from rmkit.specload import load_protocol_spec

from rmkit.protocols.corda.model import PROTOCOL


def _field(f: dict) -> dict[str, Any]:
    out: dict[str, Any] = {"description": f["description"]}
    if f["type"] == "string":
        out.update(type="string", minLength=1)
    else:
        out["type"] = "integer"
        if "min" in f:
            out["minimum"] = f["min"]
    if f.get("nullable"):
        out["type"] = [out["type"], "null"]
    return out


def line_schema() -> dict[str, Any]:
    records = load_protocol_spec(PROTOCOL)["records"]
    ev = records["events"]
    properties = {name: _field(f) for name, f in ev["fields"].items()}
    properties["event"] = {**properties["event"], "enum": list(ev["kinds"])}
    verdicts = ev["verdicts"]  # as the documents spell them, and the spelling earlier records carry
    properties["verdict"] = {**properties["verdict"], "enum": list(verdicts["written"]) + list(verdicts.get("also_read", {}))}
    rules = [{"if": {"properties": {"event": {"const": kind}}, "required": ["event"]},
              "then": {"required": list(k["required"])}}
             for kind, k in ev["kinds"].items() if k["required"]]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "rmkit/corda-record-line.schema.json",
        "title": f"One line of a Corda node's events file ({records['format']}; generated from spec/corda/records.yaml)",
        "description": ev["description"],
        "type": "object",
        "required": list(ev["always"]),
        "properties": properties,
        "allOf": rules,
    }


def render() -> str:
    return json.dumps(line_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
