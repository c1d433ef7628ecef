"""The twin directory: twin id -> address, key type, public key. The kit's stand-in for the
chain (spec/schema/rmb-directory.schema.json); a JSON or YAML file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmkit.protocols.rmb.signing import public_key_from_hex
from rmkit.errors import InputError
from rmkit.specload import check_user_document, read_user_document


SHAPE = '{"twins": {"ID": {"address": "host:port", "key_type": "ed25519|sr25519", "public_key": "HEX"}}}'


def _mistaken_for(data: Any) -> str:
    """What a file that is no directory seems to be, when it is the likely mix-up: the twins.json
    `rmkit rmb up` writes beside directory.json (its twins' keys and ports). Its content is not
    quoted: it holds private seeds."""
    if isinstance(data, list) and data and all(isinstance(t, dict) and {"twin", "seed"} <= t.keys() for t in data):
        return "; this file is the twins' keys and ports that `rmkit rmb up` writes as twins.json: give the directory.json beside it"
    return ""


@dataclass(frozen=True)
class Twin:
    id: int
    address: str
    key_type: str
    public_key: bytes

    def url(self, path: str) -> str:
        return f"http://{self.address}{path}"


class Directory:
    def __init__(self, twins: dict[int, Twin]):
        self.twins = twins

    def get(self, twin_id: Any) -> Twin | None:
        return self.twins.get(twin_id) if isinstance(twin_id, int) and not isinstance(twin_id, bool) else None

    @classmethod
    def load(cls, path: str | Path, option: str = "--directory") -> "Directory":
        data, node = read_user_document(str(path), option)
        if not (isinstance(data, dict) and "twins" in data):
            raise InputError(f"{option} {path}: not a twin directory: expected {SHAPE} (spec/schema/rmb-directory."
                             f"schema.json; `rmkit rmb up --dir D` writes one as D/directory.json)" + _mistaken_for(data))
        check_user_document(data, "rmb-directory", node, str(path), option)
        return cls.from_data(data)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> "Directory":
        return cls({int(k): Twin(int(k), v["address"], v["key_type"], public_key_from_hex(v["public_key"]))
                    for k, v in data["twins"].items()})

    def to_data(self) -> dict[str, Any]:
        return {"twins": {str(t.id): {"address": t.address, "key_type": t.key_type, "public_key": t.public_key.hex()}
                          for t in self.twins.values()}}
