"""pytest plugin (entry point ``pytest11``): ``pytest --rmkit-impl-cmd "CMD"`` runs the driven
conformance suite against an implementation. Inert unless one of its options is given."""

from __future__ import annotations


def pytest_addoption(parser):
    group = parser.getgroup("rmkit", "rmkit driven conformance")
    group.addoption("--rmkit-impl-cmd", metavar="CMD", help="command starting the implementation's adapter (ROLE is replaced by the role)")
    group.addoption("--rmkit-impl", metavar="MODULE:FACTORY", help="a Python implementation instead of a process")
