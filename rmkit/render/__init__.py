"""Render a :class:`rmkit.verdict.Report` as text, JSON or JUnit XML; the report holds facts only."""

from __future__ import annotations

from rmkit.render.jsonout import render_json
from rmkit.render.junit import render_junit
from rmkit.render.text import render_text

RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit}

__all__ = ["RENDERERS", "render_json", "render_junit", "render_text"]
