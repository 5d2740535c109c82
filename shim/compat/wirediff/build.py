"""Requests of a scenario step: portable JSON (Kafka's JsonConverter field names, any version) with
symbolic references (`$mid:m1`, `$gen:m1`, `$topicid:t2`, ...) that each target resolves from its
own answers, built into a kcodec request at the step's version.

The builder is lenient where kcodec's `from_json` is strict: fields that do not exist at the version
are dropped and missing ones take their defaults, so one step file replays at any version."""

from __future__ import annotations

import base64

from kcodec import api
from kcodec._json import uuid_from_kafka


def build(api_key: int, version: int, body: dict):
    """A kcodec request object of `api_key` at `version` from a resolved portable dict."""
    return _struct(api.REQUESTS[api_key], body, version)


def _struct(cls, d: dict, v: int):
    obj = cls()
    for f in cls._FIELDS:
        if f.json not in d or not f.vlo <= v <= f.vhi:
            continue
        x = d[f.json]
        if x is None and not f.nlo <= v <= f.nhi:
            continue                          # null where the version cannot carry it: default
        setattr(obj, f.attr, _value(f, f.kind, x, v))
    return obj


def _value(f, kind: str, x, v: int):
    if x is None:
        return None
    if kind == "struct":
        return _struct(f.cls, x, v)
    if kind == "array":
        return [_value(f, f.elem, e, v) for e in x]
    if kind == "uuid":
        return uuid_from_kafka(x)
    if kind in ("bytes", "records"):
        return base64.b64decode(x) if isinstance(x, str) else bytes(x)
    return x


def resolve(x, lookup):
    """Replace every string "$kind:arg" in a JSON value by lookup(kind, arg)."""
    if isinstance(x, str):
        if x.startswith("$") and ":" in x:
            kind, arg = x[1:].split(":", 1)
            return lookup(kind, arg)
        return x
    if isinstance(x, list):
        return [resolve(e, lookup) for e in x]
    if isinstance(x, dict):
        return {k: resolve(e, lookup) for k, e in x.items()}
    return x


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
