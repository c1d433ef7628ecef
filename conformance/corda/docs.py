"""Documentation generated from spec/corda: the Markdown tables of ``spec/corda/README.md`` and the
Graphviz diagram of a message's path (``rmkit spec diagram --protocol corda``). Generated, so the
docs cannot drift from the YAML."""

from __future__ import annotations

import graphviz

from rmkit.protocols.corda.model import PROTOCOL, corda_spec
from rmkit.render.spectable import cell as _cell, source as _source
from rmkit.specload import load_protocol_spec


def _records_markdown(rec: dict) -> list[str]:
    """The records a node keeps, which the log checker reads (spec/corda/records.yaml)."""
    ev = rec["events"]
    out = ["", f"## Records a node keeps ({rec['format']})", "", f"Events file: {' '.join(ev['description'].split())}", "",
           "| field | type | meaning |", "|---|---|---|"]
    for name, f in ev["fields"].items():
        kind = f["type"] + (f" >= {f['min']}" if "min" in f else "") + (" or null" if f.get("nullable") else "")
        out.append(f"| {name} | {kind} | {_cell(' '.join(f['description'].split()))} |")
    out += ["", f"Every event carries {', '.join(ev['always'])}.", "", "| event | also carries | may carry | meaning |", "|---|---|---|---|"]
    for name, k in ev["kinds"].items():
        out.append(f"| {name} | {', '.join(k['required'])} | {', '.join(k.get('optional', [])) or '-'} | {_cell(' '.join(k['description'].split()))} |")
    verdicts = ev["verdicts"]
    also = verdicts.get("also_read", {})
    out += ["", "Verdicts (written as the documents spell the answers): " + ", ".join(verdicts["written"]) + "."
            + (" Also read: " + ", ".join(f"{v} = {a}" for v, a in also.items()) + "." if also else ""), ""]
    out += [f"- {w}" for w in ev["writer"]]
    out += ["", f"Processed-ids export: {' '.join(rec['processed']['description'].split())} Fields: "
            + ", ".join(rec["processed"]["required"]) + ".", "",
            f"The checker shards by `{rec['key']}` ({_source(rec['source'])})."]
    h = rec["horizon"]
    bound = "no bound; what the checker knows of a message is kept until the end of the log" if h["bound"] == "none" \
        else f"{h['bound']} s after the message's latest record on its node"
    out += ["", f"How long after its latest record a message's records can still come: {bound}. {' '.join(h['description'].split())} "
            f"({'; '.join(_source(s) for s in h['sources'])})."]
    return out


def _driven_markdown(rules: list[dict]) -> list[str]:
    """Which driven role of `rmkit conform --protocol corda` judges each rule, and where the others are judged."""
    out = ["", "## Rules judged by driven conformance", "",
           "`rmkit conform --protocol corda` reports, per role, each rule that role's judge can find broken "
           "(fail, finding, pass covered by N scenarios that catch the rule's mutant and ran clean, not exercised "
           "with why, or off) and names the others; which scenarios catch which mutant is measured in "
           "`conformance/corda/driven/coverage.json`. Where none does in a profile, the last column says why.", "",
           "| id | judged by conform roles | judged elsewhere | no scenario catches its mutant |", "|---|---|---|---|"]
    for r in rules:
        why = "; ".join(f"{p}: {_cell(text)}" for p, text in (r.get("not_covered") or {}).items())
        out.append(f"| {r['id']} | {', '.join(r['driven']) or '-'} | {_cell(r.get('judged_elsewhere', '')) or '-'} | {why or '-'} |")
    departures = [(r["id"], p, d) for r in rules for p, d in (r.get("known_departure") or {}).items()]
    if departures:
        out += ["", "Known departures: a strict rule's breach that a profile's reference facts have. The run does not "
                "fail on it; the rule's line says \"known departure\" with the finding it is reported as, and any other "
                "breach of the rule fails.", ""]
        out += [f"- {rid}, profile {p}: reported as {d['reported_as']}; {_cell(d['why'])} "
                f"({'; '.join(_source(s) for s in d['sources'])})" for rid, p, d in departures]
    return out


def _catalogue_markdown(cat: dict) -> list[str]:
    """The named scenarios of `rmkit conform --protocol corda` and the windows they play."""
    out = ["", "## Named scenarios of driven conformance", "",
           "`rmkit conform --protocol corda` plays these first on every run (`--catalogue-only`: these alone); "
           "the contract they are played under is [adapter.md](adapter.md).", "",
           "| window | crash point | meaning |", "|---|---|---|"]
    for name, w in cat["windows"].items():
        out.append(f"| {name} | {w.get('crash_point', '-')} | {_cell(w['description'])} |")
    out += ["", "| scenario | role | window | rules it is written for | steps | what it plays |", "|---|---|---|---|---|---|"]
    for sc in cat["scenarios"]:
        out.append(f"| {sc['id']} | {sc['role']} | {sc['window']} | {', '.join(sc['checks'])} | {len(sc['steps'])} "
                   f"| {_cell(sc['title'])} |")
    return out


def spec_markdown() -> str:
    spec = load_protocol_spec(PROTOCOL)
    profiles = list(spec["protocol"]["profiles"])
    for p in profiles:
        corda_spec(p)  # cross-references checked before anything is written
    msgs, system = spec["messages"], spec["system"]
    out = ["# Corda P2P spec tables", "",
           "<!-- Generated by `rmkit spec docs --protocol corda -o spec/corda/README.md` from spec/corda/*.yaml. Do not edit. -->", "",
           spec["protocol"]["title"] + ".", "", "## Profiles", ""]
    for name, p in spec["protocol"]["profiles"].items():
        out.append(f"- **{name}**{' (default)' if p.get('default') else ''}: {' '.join(p['description'].split())}")
    out += ["", "## Roles", ""]
    out += [f"- **{name}**: {r['description']}" for name, r in spec["protocol"]["roles"].items()]
    out += ["", "## Message headers", "", "| header | type | required | meaning | source |", "|---|---|---|---|---|"]
    for name, h in msgs["headers"].items():
        out.append(f"| {name} | {h['type']} | {'yes' if h['required'] else 'no'} | {_cell(h['description'])} | {_source(h['source'])} |")
    out += ["", "## Deduplication ids", "", "| format | pattern | parts | deterministic | meaning |", "|---|---|---|---|---|"]
    for letter, f in msgs["dedup_ids"].items():
        out.append(f"| {f['prefix']} | `{_cell(f['pattern'])}` | {', '.join(f['parts'])} | {'yes' if f['deterministic'] else 'no'} | {_cell(f['description'])} |")
    out += ["", "## Queues", "", "| queue | name | one per | consumer | meaning |", "|---|---|---|---|---|"]
    for name, q in msgs["queues"].items():
        out.append(f"| {name} | `{q['name']}` | {q['per']} | {q['consumer']} | {_cell(q['description'])} |")
    out += ["", "## Deduplicator answers and their consequences", "",
            f"The deduplicator looks in this order: {', '.join(system['dedup_order'])}.", "",
            "| answer | meaning | " + " | ".join(profiles) + " |", "|" + "---|" * (2 + len(profiles))]
    for answer, a in system["dedup_answers"].items():
        out.append(f"| {answer} | {_cell(a['meaning'])} | " + " | ".join(a["consequence"][p] for p in profiles) + " |")
    out += ["", "| consequence | acknowledged | what happens |", "|---|---|---|"]
    out += [f"| {n} | {c['acknowledged']} | {_cell(c['description'])} |" for n, c in system["consequences"].items()]
    out += ["", f"Fast path (key {', '.join(system['fast_path']['key'])}): {' '.join(system['fast_path']['description'].split())}",
            "", "## Actions at a suspend, in order", ""]
    out += [f"{i}. **{a['name']}**: {a['description']}" for i, a in enumerate(system["suspend_actions"], 1)]
    out += ["", "## Crash points", "", "| crash point | role | what follows |", "|---|---|---|"]
    out += [f"| {n} | {c['role']} | {_cell(c['effect'])} |" for n, c in system["crash_points"].items()]
    out += ["", f"Redelivery: {system['redelivery']['description']}", "",
            f"Bridge: {system['bridge']['description']}", "",
            f"Ordering, promised: {system['ordering']['promise']} As built: {system['ordering']['as_built']}", "",
            "## Profile parameters", "", "| parameter | " + " | ".join(profiles) + " | meaning |", "|" + "---|" * (2 + len(profiles))]
    for name, p in system["profile_params"].items():
        out.append(f"| {name} | " + " | ".join(str(p["values"][x]).lower() if isinstance(p["values"][x], bool) else str(p["values"][x])
                                             for x in profiles) + f" | {_cell(p['description'])} |")
    out += _records_markdown(spec["records"])
    out += _harness_markdown(spec["node"])
    out += ["", "## Rules", "", "| id | severity | " + " | ".join(profiles) + " | statement | source |", "|" + "---|" * (4 + len(profiles))]
    for r in spec["rules"]["rules"]:
        out.append(f"| {r['id']} | {r['severity']} | " + " | ".join(r["modes"][p] for p in profiles)
                   + f" | {_cell(r['statement'])} | {_source(r['source'])} |")
    out += _driven_markdown(spec["rules"]["rules"])
    out += _catalogue_markdown(spec["catalogue"])
    from rmkit.traceability import traceability_markdown

    out += traceability_markdown(spec["traceability"]["sentences"], "document 003")
    return "\n".join(out) + "\n"


def _harness_markdown(node: dict) -> list[str]:
    """The contract of a node under the crash-point harness (spec/corda/node.yaml; node.md explains it)."""
    out = ["", f"## The crash-point harness's node contract ({node['format']})", "",
           "`rmkit corda torture` and `rmkit corda up` run any node and bridge given by `--node-cmd` and `--bridge-cmd`; "
           "what they must do is [node.md](node.md). Placeholders (whole words; also set as environment variables "
           f"`{node['env_prefix']}<NAME>`):", ""]
    for kind, words in node["placeholders"].items():
        out.append(f"- {kind}: " + ", ".join(f"`{w}`" for w in words))
    tables = node["database"]["tables"]
    out += ["", "Database (SQLite) tables the harness reads: " + "; ".join(
        f"`{t}` ({', '.join(d['columns'])}; {'required' if d['required'] else 'optional'})" for t, d in tables.items()) + ".",
        "", "| harness number | value |", "|---|---|"]
    for name, value in node["harness"].items():
        if isinstance(value, dict):
            out += [f"| {name}.{k} | {v} |" for k, v in value.items()]
        else:
            out.append(f"| {name} | {value} |")
    return out


def path_diagram(profile: str) -> str:
    """DOT source: a message's path (flow, outbound queue, bridge, inbound queue, deduplicator,
    commit, acknowledgement), with each deduplicator answer's consequence in this profile."""
    cs = corda_spec(profile)
    g = graphviz.Digraph(name=f"corda_{profile.replace('-', '_')}",
                         graph_attr={"rankdir": "LR", "label": f"Corda P2P message path, profile {profile} (generated from spec/corda)",
                                     "labelloc": "t", "fontsize": "12"}, node_attr={"fontsize": "10", "shape": "box"},
                         edge_attr={"fontsize": "8"})
    for n in ("flow", "outbound", "bridge", "inbound", "dedup", "commit", "ack", "dropped"):
        g.node(n)
    g.edge("flow", "outbound", label="checkpoint, then send")
    g.edge("outbound", "bridge", label="deliver")
    g.edge("bridge", "inbound", label="transfer; local ack after remote ack")
    g.edge("bridge", "outbound", label="rollback: redelivery", style="dashed")
    g.edge("inbound", "dedup", label="deliver")
    g.edge("dedup", "inbound", label="restart: redelivery of unacked", style="dashed")
    for answer, consequence in cs.consequence.items():
        target = {"process": "commit", "ack_and_drop": "ack", "discard": "dropped"}[consequence]
        g.edge("dedup", target, label=f"{answer}: {consequence}")
    g.edge("commit", "ack", label=" -> ".join(cs.suspend_actions[2:4]))
    return g.source
