"""The project's documents for people: README.md (the front door), ARCHITECTURE.md,
CONTRIBUTING.md and the pages under docs/. Tests that hold a document's text true read them all,
so a paragraph may move between pages without its test losing sight of it."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def documents(root: Path = REPO) -> list[Path]:
    """Every markdown document written for readers (the generated spec tables are held current
    by their own tests)."""
    top = [root / name for name in ("README.md", "ARCHITECTURE.md", "CONTRIBUTING.md") if (root / name).exists()]
    return top + sorted((root / "docs").glob("*.md"))


def documents_text() -> str:
    """All of them as one text, each headed by its name."""
    return "\n".join(f"<!-- {p.relative_to(REPO)} -->\n" + p.read_text(encoding="utf-8") for p in documents())
