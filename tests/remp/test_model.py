"""The compiled spec: fast format checks agree exactly with the spec's regular expressions."""

import re

from hypothesis import given
from hypothesis import strategies as st

from rmkit.protocols.remp.model import _format_check, _hex_check, model_for

HEX_PATTERNS = ["^[0-9a-fA-F]{64}$", "^[0-9a-f]{64}$", "^([0-9a-fA-F]{64}|[0-9a-fA-F]{128})$", "^[0-9a-fA-F]{16}$"]

near_hex = st.one_of(
    st.text(alphabet="0123456789abcdefABCDEF", min_size=14, max_size=130),
    st.text(alphabet="0123456789abcdef \tgG+/=é", min_size=14, max_size=130),
    st.sampled_from(["a" * 64, "A" * 64, "0" * 64, "0" * 63 + " ", " " + "0" * 63, "0" * 128, "ab " * 21 + "a", "00" * 8]),
)


@given(near_hex)
def test_fast_hex_checks_equal_the_regex(value):
    for pattern in HEX_PATTERNS:
        fast = _hex_check(pattern)
        assert fast is not None
        assert fast(value) == (re.fullmatch(pattern, value) is not None), (pattern, value)


def test_other_patterns_keep_the_regex():
    assert _hex_check("^([A-Za-z0-9+/]{86}==)?$") is None
    assert _hex_check("^[0-9a-fA-F]{64}x$") is None
    check, _ = _format_check({"type": "string", "pattern": "^([A-Za-z0-9+/]{86}==)?$"})
    assert check("A" * 86 + "==") and check("") and not check("A" * 86)


@given(st.one_of(st.integers(), st.text(max_size=5), st.none(), st.booleans(), st.floats(allow_nan=False)))
def test_integer_formats_reject_everything_but_ints(value):
    check, _ = _format_check({"type": "integer", "minimum": 0})
    assert check(value) == (type(value) is int and value >= 0)


def test_compiled_validator_reports_each_bad_field():
    ki = model_for("spec").kinds["IncludedIntoBlock"]
    good = {"block_id": "a" * 64, "block_file_hash": "b" * 64, "block_seqno": 1, "shard": "e" * 16, "wc": 0}
    assert ki.validate(good) is None
    bad = ki.validate({**good, "block_id": "zz", "block_seqno": "1", "wc": None})
    assert len(bad) == 3
    assert any(p.startswith("block_id: expected") and "'zz'" in p for p in bad)
    assert any(p.startswith("block_seqno: expected an integer >= 0") for p in bad)
    assert "wc: required for IncludedIntoBlock, missing" in bad


def test_log_transitions_let_an_ever_node_validator_leave_out_intermediate_receipts():
    """After a reject, left-out receipts (IncludedIntoAcceptedBlock, then anything) lead back to an
    open position in ever-node, so the log may show any kind next; after Finalized or Timeout
    nothing. The documents' profile has no such freedom, and the model's own table is unchanged."""
    from rmkit.protocols.remp.model import model_for

    en, sp = model_for("ever-node"), model_for("spec")
    assert "rejected" in en.kinds["RejectedByShardchain"].log_transitions["validator"][1]
    assert "rejected" not in en.kinds["RejectedByShardchain"].transitions["validator"][1]
    for k, ki in en.kinds.items():
        if "validator" in ki.log_transitions:
            assert not {"timed_out"} & ki.log_transitions["validator"][1], k
            assert ("finalized" in ki.log_transitions["validator"][1]) == (k == "Finalized"), k
    assert all(ki.log_transitions == ki.transitions for ki in sp.kinds.values())
