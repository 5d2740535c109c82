"""Hypothesis round trips for every generated message x every valid version.

For each (message, version): random valid objects (only fields that exist at that
version, nulls where nullable, random unknown tagged fields in flexible versions) are
encoded, decoded and compared; the decoded object must re-encode to the same bytes; and
the Kafka-JSON form must round-trip too.
"""
from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcodec import api
from kcodec.generated import _index

INT_RANGES = {
    "int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1),
}
ZERO = uuid.UUID(int=0)


def all_cases():
    cases = []
    for key in sorted(api.API_KEYS):
        lo, hi = api.VERSIONS[key]
        for cls in (api.REQUESTS[key], api.RESPONSES[key]):
            cases += [(cls, v) for v in range(lo, hi + 1)]
    for name, (_mod, _typ, (lo, hi), _f) in sorted(_index.OTHER.items()):
        cls = api.data_class(name)
        cases += [(cls, v) for v in range(lo, hi + 1)]
    return cases


CASES = all_cases()
_cache: dict = {}


def _prim(kind: str):
    if kind in INT_RANGES:
        lo, hi = INT_RANGES[kind]
        return st.integers(lo, hi)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "uuid":
        return st.just(ZERO) | st.uuids()
    if kind == "string":
        return st.text(max_size=6)
    if kind in ("bytes", "records"):
        return st.binary(max_size=6)
    raise AssertionError(kind)


def objects(cls, v: int):
    """Strategy of valid objects of cls at version v."""
    key = (cls, v)
    if key in _cache:
        return _cache[key]
    kwargs = {}
    for f in cls._FIELDS:
        if not f.vlo <= v <= f.vhi:
            continue  # absent at v: keep the default
        if f.kind == "struct":
            s = objects(f.cls, v)
        elif f.kind == "array":
            elem = objects(f.cls, v) if f.elem == "struct" else _prim(f.elem)
            s = st.lists(elem, max_size=3)
        else:
            s = _prim(f.kind)
        if f.nlo <= v <= f.nhi:
            s = st.none() | s
        kwargs[f.attr] = s
    if cls._FLEX_MIN is not None and v >= cls._FLEX_MIN:
        kwargs["_unknown_tagged_fields"] = st.dictionaries(
            st.integers(100, 2**31 - 2), st.binary(max_size=4), max_size=2)
    strat = st.builds(cls, **kwargs)
    _cache[key] = strat
    return strat


SETTINGS = settings(max_examples=10, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@pytest.mark.parametrize("cls,version", CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
def test_round_trip(cls, version):
    @SETTINGS
    @given(objects(cls, version))
    def check(obj):
        data = obj.encode(version)
        back = cls.decode(data, version)
        assert back == obj
        assert back.encode(version) == data
        # decode_from at an offset inside a bigger buffer
        framed = b"\xAA" * 3 + data + b"\x55"
        back2, end = cls.decode_from(memoryview(framed), 3, version)
        assert back2 == obj and end == 3 + len(data)
        # Kafka JSON (unknown tagged fields are not part of it)
        j = obj.to_json(version)
        j2 = json.loads(json.dumps(j))
        assert j2 == j
        again = cls.from_json(j2, version)
        assert again.to_json(version) == j
        assert cls.decode(again.encode(version), version).to_json(version) == j

    check()


def test_every_schema_is_covered():
    names = {c.__name__ for c, _ in CASES}
    assert len(CASES) > 600
    assert {"MetadataRequest", "MetadataResponse", "RequestHeader", "ResponseHeader",
            "ConsumerProtocolSubscription", "ConsumerProtocolAssignment"} <= names
    skipped = set(_index.SKIPPED)
    assert skipped == {f"{n}{t}.json" for n in ("ControlledShutdown", "LeaderAndIsr",
                                                "StopReplica", "UpdateMetadata")
                       for t in ("Request", "Response")}
