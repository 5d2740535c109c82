"""Fault rules (shim/faultrules.py, shim/proxy/faults.py) and error answers (shim/error_answers.py), no broker."""

from __future__ import annotations

import random

import pytest

from kcodec import api
from shim.config import ConfigError, load
from shim.error_answers import error_body, error_frame, supports
from shim.faultrules import FaultError, Rule, parse_rules
from shim.proxy.faults import FaultInjector
from testsuite.codec.schema_samples import load_schemas, random_json
from shim.compat.wire import Wire


def _fires(rule: Rule, n: int) -> list[bool]:
    return [rule.fires() for _ in range(n)]


def test_first_every_probability():
    assert _fires(Rule({"api": "Heartbeat", "action": "drop", "first": 2}), 5) == [True, True, False, False, False]
    assert _fires(Rule({"api": 12, "action": "drop", "every": 3}), 7) == [False, False, True, False, False, True, False]
    a = _fires(Rule({"api": "*", "action": "close", "probability": 0.3, "seed": 5}), 1000)
    b = _fires(Rule({"api": "*", "action": "close", "probability": 0.3, "seed": 5}), 1000)
    assert a == b and 200 < sum(a) < 400          # seeded: the same sequence, about 30 %
    assert _fires(Rule({"api": "Fetch", "action": "delay", "delay_ms": 5}), 3) == [True] * 3


def test_matching_by_api_version_and_client():
    r = Rule({"api": "offsetcommit", "action": "error", "error": "NOT_COORDINATOR", "versions": [8, 9],
              "client_id": "app-"})
    assert r.api_key == 8 and r.error == 16
    assert r.matches(8, 9, "app-1") and not r.matches(8, 7, "app-1") and not r.matches(8, 9, "other")
    assert not r.matches(9, 9, "app-1")
    assert Rule({"api": "*", "action": "drop"}).matches(0, 9, None)


@pytest.mark.parametrize("spec, words", [
    ({"api": "Nope", "action": "drop"}, "api"),
    ({"api": "Heartbeat", "action": "explode"}, "action"),
    ({"api": "Heartbeat", "action": "delay"}, "delay_ms"),
    ({"api": "Heartbeat", "action": "error"}, "error"),
    ({"api": "Heartbeat", "action": "error", "error": "NO_SUCH_ERROR"}, "error"),
    ({"api": "DescribeConfigs", "action": "error", "error": 35}, "no error code"),
    ({"api": "Heartbeat", "action": "drop", "first": 1, "every": 2}, "one of"),
    ({"api": "Heartbeat", "action": "drop", "probability": 2}, "probability"),
    ({"api": "Heartbeat", "action": "drop", "bogus": 1}, "bogus"),
])
def test_bad_rules_are_refused_with_the_field_named(spec, words):
    with pytest.raises(FaultError, match=words):
        parse_rules([spec])


def test_rules_from_config_file_env_and_flag(tmp_path):
    f = tmp_path / "kshim.toml"
    f.write_text('admin_port = 9999\n[[faults]]\napi = "Heartbeat"\naction = "error"\nerror = "REBALANCE_IN_PROGRESS"\n'
                 'every = 2\n')
    cfg = load(f, environ={})
    assert cfg.admin_port == 9999 and cfg.faults[0]["api"] == "Heartbeat"
    assert FaultInjector(cfg.faults).rules[0].every == 2
    cfg = load(None, environ={"KSHIM_FAULTS": '[{"api": "Fetch", "action": "delay", "delay_ms": 50}]'})
    assert cfg.faults == [{"api": "Fetch", "action": "delay", "delay_ms": 50}]
    cfg = load(None, flags={"faults": '{"api": 3, "action": "close"}'}, environ={})
    assert cfg.faults == [{"api": 3, "action": "close"}]
    with pytest.raises(ConfigError, match="faults"):
        load(None, flags={"faults": '[{"api": 3}]'}, environ={})
    with pytest.raises(ConfigError, match="log_format"):
        load(None, flags={"log_format": "xml"}, environ={})


def test_injector_admin_operations():
    inj = FaultInjector([{"api": "Heartbeat", "action": "drop"}])
    added = inj.add([{"api": "JoinGroup", "action": "close"}, {"api": "SyncGroup", "action": "close"}])
    assert [r.id for r in added] == [2, 3]
    assert inj.clear(2) == 1 and [r["id"] for r in inj.describe()] == [1, 3]
    assert inj.clear() == 2 and inj.rules == []


def _requests():
    """(api key, version, request) for every API with an error answer, every version, random content."""
    schemas = load_schemas()
    rnd = random.Random(11)
    for key in sorted(api.API_KEYS):
        if not supports(key):
            continue
        lo, hi = api.VERSIONS[key]
        cls = api.REQUESTS[key]
        schema = schemas.get(cls.__name__) or schemas.get(api.API_KEYS[key] + "Request")
        for v in range(lo, hi + 1):
            yield key, v, cls.from_json(random_json(schema, v, rnd), v)


def _nested_errors(obj, depth=0) -> list[int]:
    out = []
    for name in getattr(obj, "__slots__", ()):
        value = getattr(obj, name, None)
        if depth and name.endswith("error_code"):
            out.append(value)
        if type(value) is list:
            for item in value:
                out += _nested_errors(item, depth + 1)
    return out


def _has_entries(req) -> bool:
    """Does the request name any group/key/topic (Metadata) or partition the answer mirrors?"""
    for name in ("groups", "groups_names", "coordinator_keys"):
        if getattr(req, name, None):
            return True
    if type(req).__name__ == "MetadataRequest":
        return bool(req.topics)
    topics = getattr(req, "topic_data", None) or getattr(req, "topics", None) or []
    return any(getattr(t, "partition_data", None) or getattr(t, "partitions", None) for t in topics)


def test_error_answers_decode_and_carry_the_code():
    """For every API/version with an error field, the answer encodes at that version, decodes with
    kcodec, and every requested group/topic/partition (mirrored) carries the code."""
    done, refused = set(), []
    for key, v, req in _requests():
        try:
            body = error_body(key, v, req, 16)
            data = body.encode(v)
        except Exception as e:   # noqa: BLE001
            # only a response whose error field starts at a later version may refuse
            assert "has no error code" in str(e) or "non-default value" in str(e), (api.API_KEYS[key], v, e)
            assert key not in (0, 1, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 28, 42, 47), (api.API_KEYS[key], v, e)
            refused.append((key, v))
            continue
        back = api.RESPONSES[key].decode(data, v)
        nested = _nested_errors(back)
        assert set(nested) <= {16}, (api.API_KEYS[key], v, nested)
        top = getattr(back, "error_code", 0)
        assert top in (0, 16) and (top == 16 or nested or not _has_entries(req)), (api.API_KEYS[key], v)
        done.add(key)
    for key in (0, 1, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 28, 42, 47):
        assert key in done, api.API_KEYS[key]
    assert len(refused) < 10, refused


def test_error_frame_answers_with_the_requests_correlation_id():
    from kcodec.generated.heartbeat import HeartbeatRequest
    from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                OffsetCommitRequestTopic)
    w = Wire.__new__(Wire)
    w.correlation = 0
    _, data = w.frame(12, 4, HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), correlation_id=77)
    out = error_frame(12, 4, memoryview(data)[4:], 27)
    hdr, pos = api.ResponseHeader.decode_from(out, 0, api.response_header_version(12, 4))
    assert hdr.correlation_id == 77 and api.RESPONSES[12].decode(out[pos:], 4).error_code == 27
    req = OffsetCommitRequest(group_id="g", topics=[OffsetCommitRequestTopic(name="t", partitions=[
        OffsetCommitRequestPartition(partition_index=i, committed_offset=5) for i in (0, 3)])])
    _, data = w.frame(8, 8, req, correlation_id=5)
    out = error_frame(8, 8, memoryview(data)[4:], 16)
    hdr, pos = api.ResponseHeader.decode_from(out, 0, api.response_header_version(8, 8))
    resp = api.RESPONSES[8].decode(out[pos:], 8)
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in resp.topics] == \
        [("t", [(0, 16), (3, 16)])]
