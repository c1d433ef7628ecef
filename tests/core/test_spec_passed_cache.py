"""A spec file that passed its JSON Schema is not validated again at the next start (the digest of
its text, its schema and the jsonschema version is remembered); any change to the text or the
schema is validated, so a broken spec still fails loudly."""

from __future__ import annotations

import pytest

from rmkit import specload
from rmkit.errors import SpecError
from rmkit.specload import load_protocol_spec, load_schema
from spec_support import broken_spec_copy


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(specload.CACHE_DIR_ENV, str(tmp_path / "cache"))
    load_protocol_spec.cache_clear()
    load_schema.cache_clear()
    yield tmp_path / "cache" / "spec-passed"
    load_protocol_spec.cache_clear()
    load_schema.cache_clear()


def test_a_passed_file_is_validated_once(cache, monkeypatch):
    calls = []
    real = specload.validate_document
    monkeypatch.setattr(specload, "validate_document", lambda *a, **k: (calls.append(a[2]), real(*a, **k)))
    load_protocol_spec("remp")
    first = len(calls)
    assert first >= 10 and len(list(cache.iterdir())) == first
    load_protocol_spec.cache_clear()
    load_protocol_spec("remp")
    assert len(calls) == first  # nothing validated again


def test_a_changed_file_is_validated_again_and_fails(cache, tmp_path, monkeypatch):
    load_protocol_spec("remp")  # the shipped files are remembered as passed
    broken_spec_copy(tmp_path, monkeypatch, "remp", "kinds.yaml", "final: false", "final: nope")
    with pytest.raises(SpecError, match=r"kinds.yaml"):
        load_protocol_spec("remp")


def test_an_unwritable_cache_still_validates(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(specload.CACHE_DIR_ENV, str(blocker))  # a file where the folder would go
    load_protocol_spec.cache_clear()
    try:
        assert load_protocol_spec("remp")["protocol"]["protocol"] == "remp"
    finally:
        load_protocol_spec.cache_clear()
