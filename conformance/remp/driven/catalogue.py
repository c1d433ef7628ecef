"""The catalogue of named scenarios (``spec/remp/conformance.yaml``), resolved into events.

Why named scenarios before generated ones: each exercises one rule or requirement of the documents
deterministically, so a report can say, rule by rule, what an implementation passes (the per-rule
matrix), whatever the generated runs happen to draw.
"""

from __future__ import annotations

import functools

from rmkit.protocols.remp.adapterwire import adapter_spec
from rmkit.conformance.remp.driven.names import block, default_params, msg_id
from rmkit.conformance.remp.driven.scenario import Scenario
from rmkit.specload import load_protocol_spec

ID_FIELDS = ("msg_id", "message_id")
BLOCK_FIELDS = ("block", "mc_block")


@functools.lru_cache(maxsize=None)
def conformance_spec() -> dict:
    return load_protocol_spec("remp")["conformance"]


def requirements() -> dict:
    return {r["id"]: r for r in conformance_spec()["requirements"]}


def _resolve(obj):
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in ID_FIELDS and isinstance(v, str):
                out[k] = msg_id(v)
            elif k == "msg_ids" and isinstance(v, list):
                out[k] = [msg_id(x) for x in v]
            elif k in BLOCK_FIELDS and isinstance(v, str):
                out[k] = block(v)
            else:
                out[k] = _resolve(v)
        return out
    if isinstance(obj, list):
        return [_resolve(x) for x in obj]
    return obj


def resolve_event(step: dict) -> dict:
    """A catalogue step as the wire's event: names resolved, optional fields filled with null."""
    ev = _resolve(step)
    decl = adapter_spec()["events"][ev["type"]]["fields"]
    for f, ftype in decl.items():
        if f not in ev and ftype.endswith("?"):
            ev[f] = None
    return ev


def _params(role: str, profile: str, events: list) -> dict:
    first = next((e for e in events if e["type"] == "SessionSwitch"), None)
    n = len(first["validators"]) if first else 4
    return default_params(role, profile, n)


def catalogue(profile: str, roles=None) -> list[Scenario]:
    """The catalogue's scenarios for ``profile`` (and ``roles``), in file order."""
    out = []
    for sc in conformance_spec()["scenarios"]:
        if roles and sc["role"] not in roles:
            continue
        if profile not in sc.get("profiles", [profile]):
            continue
        events = [resolve_event(s) for s in sc["steps"]]
        out.append(Scenario(id=sc["id"], role=sc["role"], profile=profile, params=_params(sc["role"], profile, events),
                            events=events, title=sc["title"], checks=tuple(sc["checks"]), origin="catalogue",
                            note={"expect": sc.get("expect", [])}))
    return out


def unmet_expectations(sc: Scenario, expected_outputs: list) -> list[str]:
    """The catalogue's ``expect`` items the reference's outputs do not meet (should be none)."""
    bad = []
    for e in sc.note.get("expect", []):
        if "profiles" in e and sc.profile not in e["profiles"]:
            continue
        step = e["step"]
        outs = expected_outputs[step - 1] if step <= len(expected_outputs) else []
        if "output" in e:
            hit = [o for o in outs if o["type"] == e["output"]
                   and ("kind" not in e or (o.get("receipt") or {}).get("kind") == e["kind"])]
            if not hit:
                bad.append(f"{sc.id} step {step}: expected a {e['output']}{' ' + e['kind'] if 'kind' in e else ''}")
        if "absent" in e and any(o["type"] == e["absent"] and o.get("msg_ids", True) for o in outs):
            bad.append(f"{sc.id} step {step}: expected no {e['absent']}")
    return bad
