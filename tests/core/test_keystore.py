"""rmkit.keystore: exact string keys found by fingerprint, and their memos; compiled (where built) and
run as Python alike."""

from __future__ import annotations

import importlib.util
import pickle
import sys
from pathlib import Path

import pytest

from rmkit import keystore as installed


def _as_python():
    """rmkit/keystore.py run as Python, whether or not the installed module is its compiled form."""
    spec = importlib.util.spec_from_file_location("keystore_as_python", Path(installed.__file__).with_name("keystore.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (a store pickles by its module's name)
    spec.loader.exec_module(module)
    return module


MODULES = [installed] + ([_as_python()] if installed.COMPILED else [])


@pytest.fixture(params=MODULES, ids=["installed", "as Python"][:len(MODULES)])
def keystore(request):
    """The module under test."""
    return request.param

KEYS = [f"N-f{k % 7}-{k}-0" for k in range(3000)] + ["", "é", "\ud800x", "N-f1-1-0 "]


@pytest.mark.parametrize("fingerprint", [hash, lambda key: 0, lambda key: len(key) % 5, lambda key: -len(key)],
                         ids=["hash", "one fingerprint", "five fingerprints", "negative"])
def test_keys_are_numbered_and_found_exactly_whatever_the_fingerprint(keystore, fingerprint):
    store = keystore.KeyStore(fingerprint)
    keys = KEYS if fingerprint is hash else KEYS[:300] + KEYS[-4:]
    for n, key in enumerate(keys):
        assert store.find(key) == -1
        assert store.add(key) == n
    assert len(store) == len(keys)
    for n, key in enumerate(keys):
        assert store.add(key) == n and store.find(key) == n and store.key(n) == key and key in store
    assert store.find("N-f0-0-1") == -1 and "N-f0-0-1" not in store


@pytest.mark.parametrize("raw_bytes", [0, 2000, 1 << 30], ids=["compressed", "compressed on the way", "raw"])
def test_memos_are_kept_replaced_and_dropped(keystore, monkeypatch, raw_bytes):
    monkeypatch.setattr(keystore, "_MIN_GARBAGE", 64)  # (compacted often)
    monkeypatch.setattr(keystore, "BLOCK_MEMOS", 16)   # (many blocks, more than are kept read)
    monkeypatch.setattr(keystore, "_READ_BLOCKS", 2)
    monkeypatch.setattr(keystore, "_RAW_MEMO_BYTES", raw_bytes)
    store = keystore.KeyStore()
    held = {}
    for n, key in enumerate(KEYS[:500]):
        store.add(key)
        if n % 3:
            held[n] = f"memo of {key}".encode() * (n % 4)
            store.put(n, held[n])
    for n in range(0, 500, 5):  # replaced and dropped: the arena's dead bytes are rewritten away
        if n % 2:
            held[n] = b"again" * (n % 7)
            store.put(n, held[n])
        elif n in held:
            store.drop(n)
            del held[n]
    assert store.memos == len(held) and sorted(store.numbers_held()) == sorted(held)
    for n, key in enumerate(KEYS[:500]):
        assert store.memo(n) == held.get(n) and store.holds(n) == (n in held)
        assert store.held(key) == (n if n in held else -1)
    assert store._garbage <= max(keystore._MIN_GARBAGE, store._bytes)
    assert store._zipped == (raw_bytes < 1 << 30)
    copy = pickle.loads(pickle.dumps(store))  # (in another process ``hash`` differs: rebuilt on first look-up)
    assert [copy.memo(n) for n in range(500)] == [store.memo(n) for n in range(500)]
    assert [copy.find(k) for k in KEYS] == [store.find(k) for k in KEYS]
    store.forget_memos()
    assert store.memos == 0 and store.memo(1) is None and store.find(KEYS[1]) == 1


def test_a_key_costs_tens_of_bytes(keystore):
    store = keystore.KeyStore()
    for k in range(100_000):
        store.put(store.add(f"N-f{k % 1000}-{k}-0"), b"")
    assert store.nbytes() / len(store) < 60


def test_key_offsets_widen_past_four_gigabytes(keystore):
    """The keys' offsets are 4 bytes while the arena is below 4 GB, then 8."""
    store = keystore.KeyStore()
    store.add("a")
    assert store._key_at.typecode == "I"
    store._keys = _Told(store._keys, 1 << 32)  # (an arena told 4 GB longer than it is)
    assert store.add("b") == 1 and store._key_at.typecode == "q" and list(store._key_at) == [0, 1, (1 << 32) + 2]


def test_memo_offsets_widen_past_two_bytes(keystore):
    """A memo's offset in its block and its length are 2 bytes while they fit, then 4; the memos
    read back the same either side of the change."""
    store = keystore.KeyStore()
    memos = {store.add(f"k{k}"): bytes([k % 251]) * (70 + k) for k in range(200)}  # (a block past 64 KB)
    memos[store.add("long")] = b"x" * 70_000
    for n, memo in memos.items():
        store.put(n, memo)
    assert store._memo_off.typecode == store._memo_len.typecode == "i"
    assert all(store.memo(n) == memo for n, memo in memos.items())
    narrow = keystore.KeyStore()
    narrow.put(narrow.add("a"), b"abc")
    assert narrow._memo_off.typecode == narrow._memo_len.typecode == "H" and narrow.memo(0) == b"abc"


class _Told(bytearray):
    """A bytearray whose length is told ``extra`` bytes above what it holds."""

    def __init__(self, data, extra):
        super().__init__(data)
        self.extra = extra

    def __len__(self):
        return super().__len__() + self.extra
