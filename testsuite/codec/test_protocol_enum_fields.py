"""Messages built with kcodec.protocol's IntEnum members (Error.UNKNOWN_MEMBER_ID, ApiKey.JOIN_GROUP)
where a field takes an integer encode, and convert to JSON, exactly as with the bare integers, and
decode back to plain ints: the coordinator answers with Error members. Long arrays take
the precompiled array packers, short ones the generic path."""

from __future__ import annotations

import json

import pytest

from kcodec import api
from kcodec.generated.api_versions import ApiVersion, ApiVersionsResponse
from kcodec.generated.heartbeat import HeartbeatResponse
from kcodec.generated.join_group import JoinGroupResponse
from kcodec.generated.offset_commit import (OffsetCommitResponse, OffsetCommitResponsePartition,
                                            OffsetCommitResponseTopic)
from kcodec.protocol import ApiKey, Error


def _plain(v):
    """v with every IntEnum member replaced by its int (a message with bare integers)."""
    return int(v) if isinstance(v, (Error, ApiKey)) else v


def _heartbeat(c):
    return HeartbeatResponse(error_code=c(Error.REBALANCE_IN_PROGRESS))


def _join(c):
    return JoinGroupResponse(error_code=c(Error.MEMBER_ID_REQUIRED), generation_id=-1, member_id="m-1",
                             protocol_type="consumer", protocol_name="range", leader="", members=[])


def _commit(c, n=3):
    codes = [Error.NONE, Error.UNKNOWN_MEMBER_ID, Error.UNKNOWN_SERVER_ERROR, Error.OFFSET_METADATA_TOO_LARGE]
    return OffsetCommitResponse(topics=[OffsetCommitResponseTopic(name="t", partitions=[
        OffsetCommitResponsePartition(partition_index=i, error_code=c(codes[i % len(codes)])) for i in range(n)])])


def _versions(c, n=3):
    keys = list(ApiKey)[:n]
    return ApiVersionsResponse(error_code=c(Error.NONE), api_keys=[
        ApiVersion(api_key=c(k), min_version=0, max_version=c(ApiKey.HEARTBEAT)) for k in keys])


BUILDERS = [(ApiKey.HEARTBEAT, _heartbeat), (ApiKey.JOIN_GROUP, _join),
            (ApiKey.OFFSET_COMMIT, _commit), (ApiKey.OFFSET_COMMIT, lambda c: _commit(c, 300)),
            (ApiKey.API_VERSIONS, _versions), (ApiKey.API_VERSIONS, lambda c: _versions(c, 60))]


def _plain_ints(x) -> bool:
    if isinstance(x, dict):
        return all(_plain_ints(v) for v in x.values())
    if isinstance(x, list):
        return all(_plain_ints(v) for v in x)
    return not isinstance(x, int) or type(x) in (int, bool)


@pytest.mark.parametrize("key,build", BUILDERS)
def test_enum_valued_fields_encode_as_their_integers(key, build):
    lo, hi = api.VERSIONS[key]
    for v in range(lo, hi + 1):
        with_enums, with_ints = build(lambda x: x), build(_plain)
        data = with_enums.encode(v)
        assert data == with_ints.encode(v), v
        back = type(with_enums).decode(data, v)
        assert back.encode(v) == data and back.to_json(v) == with_ints.to_json(v)
        as_json = with_enums.to_json(v)
        assert as_json == with_ints.to_json(v) and _plain_ints(as_json), v
        assert json.dumps(as_json) == json.dumps(with_ints.to_json(v))


def test_enum_members_are_their_codes_in_text():
    """f-strings, str() and json.dumps write the number (Python 3.11+: IntEnum formats as int)."""
    assert f"{Error.UNKNOWN_MEMBER_ID}" == str(Error.UNKNOWN_MEMBER_ID) == "25"
    assert json.dumps({"e": Error.NONE, ApiKey.JOIN_GROUP: [ApiKey.SYNC_GROUP]}) == '{"e": 0, "11": [14]}'
