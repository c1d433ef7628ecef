"""Cells of the Markdown tables generated from a protocol's spec (``rmkit spec docs``)."""

from __future__ import annotations


def cell(x) -> str:
    """A value as one Markdown table cell (no pipes, no line breaks)."""
    return str(x).replace("|", "\\|").replace("\n", " ")


def source(src: dict) -> str:
    """A rule's or fact's source: the quoted seed sentence, or the reference fact."""
    if "quote" in src:
        return f"doc {src['doc']}: “{cell(src['quote'])}”"
    return f"{src['doc']}: {cell(src['fact'])}"
