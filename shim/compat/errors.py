"""Kafka error codes as names, for observations a person can read (from the coordinator's table)."""

from __future__ import annotations

from shim.coordinator import errors as _E

_NAMES = {v: k for k, v in vars(_E).items() if k.isupper() and isinstance(v, int)}
_NAMES.setdefault(0, "NONE")
for _code, _name in ((110, "FENCED_MEMBER_EPOCH"), (111, "UNRELEASED_INSTANCE_ID"), (112, "UNSUPPORTED_ASSIGNOR"),
                     (113, "STALE_MEMBER_EPOCH"), (69, "GROUP_ID_NOT_FOUND"), (79, "MEMBER_ID_REQUIRED")):
    _NAMES.setdefault(_code, _name)


def name(code: int) -> str:
    return "NONE" if code == 0 else _NAMES.get(code, f"ERROR_{code}")
