"""Render a :class:`rmkit.verdict.Report` as text, JSON or JUnit XML; the report holds facts only.

Each renderer's module is imported when it is first asked for: the text renderer pulls in rich
(tens of milliseconds), which a run writing JSON never needs, and every run of ``rmkit check``
pays its imports before it reads a line.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping

# format -> (module, function) of its renderer
_WHERE = {"text": ("rmkit.render.text", "render_text"), "json": ("rmkit.render.jsonout", "render_json"),
          "junit": ("rmkit.render.junit", "render_junit")}


class _Renderers(Mapping):
    """format -> renderer, each imported on first use."""

    def __getitem__(self, fmt: str) -> Callable:
        module, name = _WHERE[fmt]
        return getattr(importlib.import_module(module), name)

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


RENDERERS: Mapping[str, Callable] = _Renderers()

__all__ = ["RENDERERS", "render_json", "render_junit", "render_text"]


def __getattr__(name: str):
    for module, function in _WHERE.values():
        if function == name:
            return getattr(importlib.import_module(module), function)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
