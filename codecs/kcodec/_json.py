"""Kafka JsonConverter format for generated messages (hand-written, driven by ``_FIELDS``).

Matches the ``*JsonConverter`` classes Kafka generates:
  * keys are the schema field names with the first letter lower-cased ("throttleTimeMs");
  * only fields that exist at the version are written; tagged fields only when they
    differ from their default; a field that does not exist at the version but holds a
    non-default value is an error unless it is ``ignorable``;
  * int8/16/32/64, uint16/32 as JSON integers; float64 as a JSON float; bool as boolean;
  * uuid as Kafka's Uuid string (URL-safe base64 without padding, 22 characters);
  * bytes and records as standard base64 with padding (Jackson's BinaryNode text form);
  * null for null values of nullable fields; unknown tagged fields are not represented.

One deliberate difference: Kafka's converter writes records as an *empty* binary node
(or only "<name>SizeInBytes" in request logs); we write the actual record bytes, which
Kafka's reader accepts, so JSON round trips keep the records.

``from_json`` mirrors Kafka's reader: a missing field is an error when the field is
mandatory at the version (present and not tagged), otherwise it takes its default; keys
that are not fields are ignored.
"""
from __future__ import annotations

import base64
import binascii
from uuid import UUID

from ._markers import LIST, STRUCT
from .errors import DecodeError, EncodeError

_INT_RANGES = {
    "int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1),
}


def uuid_to_kafka(u: UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def uuid_from_kafka(s: str) -> UUID:
    raw = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    if len(raw) != 16:
        raise ValueError(f"a Kafka Uuid string must decode to 16 bytes, got {len(raw)}")
    return UUID(bytes=raw)


def nondefault(f, x) -> bool:
    d = f.default
    if d is None:
        return x is not None
    if d == LIST or isinstance(d, bytes):
        return x is None or len(x) != 0
    if d == STRUCT:
        return x != f.cls()
    return x != d


def _in(v: int, lo: int, hi: int) -> bool:
    return lo <= v <= hi


# ---------------------------------------------------------------- to JSON

def to_json(obj, version: int) -> dict:
    cls = type(obj)
    if not (0 <= version < len(cls._DEC) and cls._DEC[version] is not None):
        raise EncodeError(f"unsupported version {version}", cls.__name__, None, version)
    out = {}
    for f in cls._FIELDS:
        x = getattr(obj, f.attr)
        if _in(version, f.vlo, f.vhi):
            if f.tlo >= 0 and version >= f.tlo and not nondefault(f, x):
                continue
            out[f.json] = _value_to_json(cls, f, x, version, f.kind,
                                         _in(version, f.nlo, f.nhi))
        elif not f.ignorable and nondefault(f, x):
            raise EncodeError("non-default value for a field that does not exist at this "
                              "version (and is not ignorable)", cls.__name__, f.name, version)
    return out


def _value_to_json(cls, f, x, v, kind, nullable):
    if x is None:
        if nullable:
            return None
        raise EncodeError("None given for a non-nullable field", cls.__name__, f.name, v)
    if kind == "bool":
        return bool(x)
    if kind in _INT_RANGES:
        return int(x)
    if kind == "float64":
        return float(x)
    if kind == "uuid":
        return uuid_to_kafka(x)
    if kind == "string":
        return str(x)
    if kind in ("bytes", "records"):
        return base64.b64encode(bytes(x)).decode("ascii")
    if kind == "struct":
        return to_json(x, v)
    if kind == "array":
        return [_value_to_json(cls, f, e, v, f.elem, False) for e in x]
    raise AssertionError(kind)


# ---------------------------------------------------------------- from JSON

def from_json(cls, d: dict, version: int):
    if not (0 <= version < len(cls._DEC) and cls._DEC[version] is not None):
        raise DecodeError(f"unsupported version {version}", cls.__name__, None, None, version)
    if not isinstance(d, dict):
        raise DecodeError(f"expected a JSON object, got {type(d).__name__}", cls.__name__, None,
                          None, version)
    obj = cls()
    for f in cls._FIELDS:
        if f.json not in d:
            if _in(version, f.vlo, f.vhi) and not (f.tlo >= 0 and version >= f.tlo):
                raise DecodeError(f"missing field '{f.json}', which is mandatory in this version",
                                  cls.__name__, f.name, None, version)
            continue
        setattr(obj, f.attr, _value_from_json(cls, f, d[f.json], version, f.kind,
                                              _in(version, f.nlo, f.nhi)))
    return obj


def _bad(cls, f, v, msg):
    return DecodeError(msg, cls.__name__, f.name, None, v)


def _value_from_json(cls, f, x, v, kind, nullable):
    if x is None:
        if nullable and kind not in _INT_RANGES and kind not in ("bool", "float64", "uuid"):
            return None
        raise _bad(cls, f, v, "null for a non-nullable field")
    if kind == "bool":
        if not isinstance(x, bool):
            raise _bad(cls, f, v, f"expected a boolean, got {type(x).__name__}")
        return x
    if kind in _INT_RANGES:
        if isinstance(x, str):
            try:
                x = int(x[2:], 16) if x.startswith("0x") else int(x)
            except ValueError:
                raise _bad(cls, f, v, f"not a number: {x!r}") from None
        elif isinstance(x, float) and x.is_integer():
            x = int(x)
        if isinstance(x, bool) or not isinstance(x, int):
            raise _bad(cls, f, v, f"expected an integer, got {type(x).__name__}")
        lo, hi = _INT_RANGES[kind]
        if not lo <= x <= hi:
            raise _bad(cls, f, v, f"{x} is out of range for {kind}")
        return x
    if kind == "float64":
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise _bad(cls, f, v, f"expected a number, got {type(x).__name__}")
        return float(x)
    if kind == "uuid":
        if not isinstance(x, str):
            raise _bad(cls, f, v, "expected a Uuid string")
        try:
            return uuid_from_kafka(x)
        except (ValueError, binascii.Error) as e:
            raise _bad(cls, f, v, f"invalid Uuid {x!r}: {e}") from None
    if kind == "string":
        if not isinstance(x, str):
            raise _bad(cls, f, v, f"expected a string, got {type(x).__name__}")
        return x
    if kind in ("bytes", "records"):
        if not isinstance(x, str):
            raise _bad(cls, f, v, "expected base64-encoded binary data")
        try:
            return base64.b64decode(x, validate=True)
        except (ValueError, binascii.Error) as e:
            raise _bad(cls, f, v, f"invalid base64: {e}") from None
    if kind == "struct":
        return from_json(f.cls, x, v)
    if kind == "array":
        if not isinstance(x, list):
            raise _bad(cls, f, v, f"expected a JSON array, got {type(x).__name__}")
        return [_value_from_json(cls, f, e, v, f.elem, False) for e in x]
    raise AssertionError(kind)


__all__ = ["to_json", "from_json", "uuid_to_kafka", "uuid_from_kafka", "nondefault"]
