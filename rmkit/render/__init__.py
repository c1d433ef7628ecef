"""Render a :class:`rmkit.verdict.Report` as text, JSON or JUnit XML; the report holds facts only.

Each renderer's module is imported when it is first asked for: the text renderer pulls in rich
(tens of milliseconds), which a run writing JSON never needs, and every run of ``rmkit check``
pays its imports before it reads a line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from rmkit.lazy import lazy_attributes

# format -> (module, function) of its renderer
_WHERE = {"text": ("rmkit.render.text", "render_text"), "json": ("rmkit.render.jsonout", "render_json"),
          "junit": ("rmkit.render.junit", "render_junit")}

__all__ = ["RENDERERS", "render_json", "render_junit", "render_text"]

__getattr__, __dir__ = lazy_attributes(__name__, {function: (module, function) for module, function in _WHERE.values()})


class _Renderers(Mapping):
    """format -> renderer, each imported on first use."""

    def __getitem__(self, fmt: str) -> Callable:
        return __getattr__(_WHERE[fmt][1])

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


RENDERERS: Mapping[str, Callable] = _Renderers()
