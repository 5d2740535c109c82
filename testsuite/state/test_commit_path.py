"""The in-process commit path of testsuite/bench/commit_path.py (sessions -> GroupService ->
coordinator -> StateLog -> responses, the state topic's broker replaced by an instant stand-in):
every commit is answered, in order, after its records were appended."""

from __future__ import annotations

import asyncio

from kcodec import api
from kcodec.generated.offset_commit import OffsetCommitResponse
from testsuite.bench.commit_path import run


def test_every_commit_is_answered_after_its_records_are_appended():
    res = asyncio.run(run(committers=5, partitions=3, waves=12))   # raises if an answer or record is missing
    assert res["commits"] == 60 and res["cpu_us_per_commit"] > 0
    for prefix, frame in res["last_answers"]:
        body = bytes(frame)
        assert int.from_bytes(prefix, "big") == len(body)
        hdr, pos = api.ResponseHeader.decode_from(body, 0, api.response_header_version(8, 8))
        assert hdr.correlation_id == 11                  # the last wave's request, answered last
        resp = OffsetCommitResponse.decode(body[pos:], 8)
        assert [(p.partition_index, p.error_code) for t in resp.topics for p in t.partitions] == \
            [(0, 0), (1, 0), (2, 0)]
