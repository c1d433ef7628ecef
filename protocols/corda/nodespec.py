"""The contract of the processes the Corda crash-point harness runs (spec/corda/node.yaml, explained in
spec/corda/node.md): the placeholders of ``--node-cmd`` and ``--bridge-cmd``, the numbers the harness
waits, paces and plans by, and the database table the audit reads.

A command is a template: it is split as a shell would split it (no shell runs it), then every
placeholder standing as a whole word in a piece (not inside a longer word: ``NODES`` or ``DB_X``
stay as they are) is replaced by its value; a value never splits a piece, so a path with spaces or
a JSON object stays one argument. The same values are set in the process's environment under the
spec's prefix (``RMKIT_CORDA_DB`` ...), for a node that would rather read them there."""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass
from typing import Any

from rmkit.errors import UsageError
from rmkit.specload import load_protocol_spec

from rmkit.protocols.corda.model import PROTOCOL


@dataclass(frozen=True)
class Contract:
    env_prefix: str
    placeholders: dict[str, dict[str, str]]   # kind (node, bridge) -> word -> what it stands for
    harness: dict[str, Any]                   # the numbers of spec/corda/node.yaml harness
    tables: dict[str, dict[str, Any]]         # the database tables the audit reads
    link_lost: int                            # the exit code of a process that lost a broker connection
    clean: int                                # the exit code of a process stopped by SIGTERM

    def words(self, kind: str) -> list[str]:
        return list(self.placeholders[kind])


@functools.lru_cache(maxsize=None)
def contract() -> Contract:
    d = load_protocol_spec(PROTOCOL)["node"]
    return Contract(d["env_prefix"], {k: dict(v) for k, v in d["placeholders"].items()}, dict(d["harness"]),
                    dict(d["database"]["tables"]), d["exit_codes"]["link_lost"]["code"], d["exit_codes"]["clean"]["code"])


def split(template: str, option: str) -> list[str]:
    """The template's pieces; a :class:`UsageError` naming the option when it cannot be split."""
    try:
        pieces = shlex.split(template)
    except ValueError as e:
        raise UsageError(f"{option} {template!r}: cannot split it into arguments ({e})") from None
    if not pieces:
        raise UsageError(f"{option}: expected a command, found nothing")
    return pieces


@functools.lru_cache(maxsize=None)
def _pattern(words: tuple[str, ...]) -> re.Pattern:
    alternatives = "|".join(sorted(map(re.escape, words), key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_])({alternatives})(?![A-Za-z0-9_])")


def fill(template: str, values: dict[str, str], option: str = "--node-cmd") -> list[str]:
    """The argv of a command template with every placeholder (a whole word) replaced by its value."""
    pattern = _pattern(tuple(values))
    return [pattern.sub(lambda m: values[m.group(1)], piece) for piece in split(template, option)]


def environment(values: dict[str, str]) -> dict[str, str]:
    """The placeholders' values as environment variables (the spec's prefix + the word)."""
    prefix = contract().env_prefix
    return {prefix + k: v for k, v in values.items()}
