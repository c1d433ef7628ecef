"""Reading an HTML report the way a test asserts on it: its verdict, its sections in order, the
text of each, and the commands it gives to reproduce a failure (stdlib parser: the page must be
well-formed enough for it, and for a browser, to find them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Page:
    verdict: str | None = None
    sections: list[str] = field(default_factory=list)  # section ids, in page order
    text: dict[str, str] = field(default_factory=dict)  # section id -> its text
    reproduce: list[str] = field(default_factory=list)  # the text of each <code class="reproduce">


class _Reader(HTMLParser):
    def __init__(self):
        super().__init__()
        self.page = Page()
        self.section: str | None = None
        self.in_reproduce = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.page.verdict = a.get("data-verdict")
        elif tag == "section":
            self.section = a.get("id")
            self.page.sections.append(self.section)
            self.page.text[self.section] = ""
        elif tag == "code" and a.get("class") == "reproduce":
            self.in_reproduce = True
            self.page.reproduce.append("")

    def handle_endtag(self, tag):
        if tag == "section":
            self.section = None
        elif tag == "code":
            self.in_reproduce = False

    def handle_data(self, data):
        if self.section:
            self.page.text[self.section] += data
        if self.in_reproduce:
            self.page.reproduce[-1] += data


def read_page(html: str) -> Page:
    r = _Reader()
    r.feed(html)
    r.close()
    assert html.lstrip().lower().startswith("<!doctype html>") and html.rstrip().endswith("</html>"), html[:200]
    return r.page
