"""Errors the kit raises on purpose, each saying what was expected, what was found, and where.

Exit codes follow from the type: a :class:`UsageError`, :class:`SpecError` or :class:`InputError`
ends a command with exit code 2 (see ``rmkit --help``).
"""

from __future__ import annotations


class RmkitError(Exception):
    """Base class of the kit's own errors; ``str()`` is the message a user sees."""

    exit_code = 2


class UsageError(RmkitError):
    """The command line or an API call asked for something that does not exist."""


class SpecError(RmkitError):
    """A spec file is missing, is not valid YAML, breaks its JSON Schema, or refers to a name that
    does not exist. The message names the file, the line (when known) and the field."""

    def __init__(self, file: str, where: str, message: str, line: int | None = None):
        self.file, self.where, self.line, self.detail = file, where, line, message
        at = f"{file}:{line}" if line else file
        super().__init__(f"invalid spec {at}: at {where or '(top)'}: {message}")


class InputError(RmkitError):
    """An input file cannot be opened or read at all (unreadable lines are reported, not raised)."""


class NothingChecked(RmkitError):
    """A driven run in which nothing was checked (no message reached the implementation, no act
    applied to the profile): a pass would be a verdict on nothing, so no verdict (exit 2)."""
