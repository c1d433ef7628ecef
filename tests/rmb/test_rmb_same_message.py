"""The judgments tell messages apart by content without writing them out: :func:`.logjudge.same_json`
(one JSON value), :func:`.logjudge.same_reply` (one reply: every field but sig and src) and
``handlers._dst_key`` (a dst as a key). Each must say "equal" exactly where the sorted-key JSON
text (:func:`.logjudge.fingerprint`) of the values says so: a bool is no integer, 1.0 is no 1,
-0.0 is no 0.0, key order does not count, array order does. Drawn here over the values a log's
message can hold (the typed reading's scalars and arrays of them; the general reading's nested
objects), with near twins of each value, in the build under test (compiled or not).
"""

from __future__ import annotations

from hypothesis import given, strategies as st

from rmkit.conformance.rmb import handlers
from rmkit.conformance.rmb.logjudge import Group, fingerprint, same_json, same_reply

# scalars whose Python equality and JSON text disagree are drawn on purpose: True == 1 == 1.0, 0.0 == -0.0
TWINS = [0, 1, -1, 0.0, -0.0, 1.0, True, False, None, "", "1", 2 ** 63 - 1, 1e300]
scalars = st.one_of(st.sampled_from(TWINS), st.integers(-(2 ** 63), 2 ** 63 - 1), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=4), st.booleans(), st.none())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from("abcd"), inner, max_size=3)), max_leaves=8)
FIELDS = ["ver", "uid", "cmd", "dat", "src", "dst", "ret", "now", "sig", "exp"]
messages = st.dictionaries(st.sampled_from(FIELDS), values, max_size=6)


def _near(value):
    """A value equal to ``value`` as Python compares, not always as JSON writes it."""
    if type(value) is bool:
        return int(value)
    if type(value) is int and -(2 ** 53) < value < 2 ** 53:
        return float(value)
    if type(value) is float:
        return -value if value == 0 else value
    if type(value) is dict:
        return dict(reversed(list(value.items())))  # (the same object, keys in another order)
    if type(value) is list:
        return [_near(v) for v in value]
    return value


@given(a=values, b=values)
def test_same_json_is_equality_of_the_fingerprints(a, b):
    assert same_json(a, b) == (fingerprint(a) == fingerprint(b))
    near = _near(a)
    assert same_json(a, near) == (fingerprint(a) == fingerprint(near))
    assert same_json(a, a)


@given(a=messages, b=messages, sig=st.text(max_size=3), src=values)
def test_same_reply_is_equality_of_the_fingerprints_without_sig_and_src(a, b, sig, src):
    def key(m):
        return fingerprint({k: v for k, v in m.items() if k not in ("sig", "src")})

    assert same_reply(a, b) == (key(a) == key(b))
    restamped = {**{k: _near(v) for k, v in a.items()}, "sig": sig, "src": src}
    assert same_reply(a, restamped) == (key(a) == key(restamped))


@given(a=st.lists(scalars, max_size=4), b=st.lists(scalars, max_size=4))
def test_a_dst_key_is_equal_where_the_fingerprints_are(a, b):
    assert (handlers._dst_key(a) == handlers._dst_key(b)) == (fingerprint(a) == fingerprint(b))
    assert (handlers._dst_key(a) == handlers._dst_key(_near(a))) == (fingerprint(a) == fingerprint(_near(a)))


@given(msgs=st.lists(st.one_of(messages, values), max_size=6))
def test_a_groups_message_keys_are_equal_where_the_fingerprints_are(msgs):
    from rmkit.conformance.rmb.checker import RmbShards

    g = Group(RmbShards().ctx(), [])
    msgs = msgs + [_near(m) for m in msgs]
    keys = [g.key(m) for m in msgs]
    for i, a in enumerate(msgs):
        for j, b in enumerate(msgs):
            assert (keys[i] == keys[j]) == (fingerprint(a) == fingerprint(b))
