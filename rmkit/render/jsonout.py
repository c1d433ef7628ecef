"""JSON report: the schema documented in docs/check.md (``verdict, protocol, profile, receipts,
messages, violations, counts, metrics`` first, then the rest)."""

from __future__ import annotations

import orjson

from rmkit.verdict import Report


def render_json(report: Report, **_) -> str:
    return orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n"
