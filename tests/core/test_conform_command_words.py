"""What every protocol's `rmkit conform` makes of the implementation command: ROLE replaced as a
word of its own only (never inside a path or a name), and saved failures kept per implementation
command in the default folder, so that one implementation's failures are not replayed against
another."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmkit.cli_options import DEFAULT_REGRESSIONS, regressions_of, with_role


@pytest.mark.parametrize("word, expected", [
    ("ROLE", "validator"), ("--role=ROLE", "--role=validator"), ("role:ROLE", "role:validator"),
    ("/srv/ROLE/bin/adapter", "/srv/ROLE/bin/adapter"), ("ROLE.log", "ROLE.log"), ("~/ROLE", "~/ROLE"),
    ("my-ROLE", "my-ROLE"), ("ROLES", "ROLES"), ("XROLE", "XROLE"), ("./ROLE", "./ROLE"),
])
def test_role_is_replaced_as_a_word_of_its_own_only(word, expected):
    assert with_role(word, "validator") == expected


def test_the_remp_and_corda_adapters_fill_role_as_words(monkeypatch):
    from rmkit.conformance.corda.driven import adapters as corda
    from rmkit.conformance.remp.driven import adapters as remp

    assert remp.ProcessImplementation("/srv/ROLE/adapter --role ROLE", "validator").argv == ["/srv/ROLE/adapter", "--role", "validator"]
    monkeypatch.setattr(corda.ProcessImplementation, "_setup", lambda self: None)
    monkeypatch.setattr(corda.ProcessImplementation, "_start", lambda self: None)
    assert corda.ProcessImplementation("/srv/ROLE/node ROLE", "receiver", 5.0).argv == ["/srv/ROLE/node", "receiver"]


def test_saved_failures_are_kept_per_implementation_command(monkeypatch):
    monkeypatch.delenv("RMKIT_REGRESSIONS", raising=False)
    a = regressions_of(DEFAULT_REGRESSIONS, "daemon-a --listen {listen}")
    b = regressions_of(DEFAULT_REGRESSIONS, "daemon-b --listen {listen}")
    assert a != b and a.parent == b.parent == DEFAULT_REGRESSIONS
    assert a == regressions_of(str(DEFAULT_REGRESSIONS), "daemon-a --listen {listen}")
    assert regressions_of("mine", "daemon-a") == Path("mine")  # a folder the user named is theirs
    monkeypatch.setenv("RMKIT_REGRESSIONS", "ci-regressions")
    assert regressions_of(DEFAULT_REGRESSIONS, "daemon-a") == DEFAULT_REGRESSIONS
