"""Share groups (KIP-932) and streams groups (KIP-1071) in wire traces: real encoded frames through
the Tracer (testsuite/trace/sharebuild.py), their decoded fields on every hop, the ShareFetch /
ShareAcknowledge summaries (never the records), and `kshim trace show`'s filters."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from kcodec.protocol import ApiKey, Error
from shim.cli import main
from shim.trace.show import read_trace, show, trace_files
from testsuite.trace.sharebuild import RECORD_VALUE, scenario

C2K, K2U, U2K, K2C = "client->kshim", "kshim->upstream", "upstream->kshim", "kshim->client"
ORDERS_ID = "PxwqTmt9To-aCxwtPk9aaw"          # sharebuild.ORDERS in Kafka's Uuid form


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("share-trace")
    scenario(d)
    return d


@pytest.fixture(scope="module")
def recs(trace):
    return [r for r in read_trace(trace) if r["type"] == "frame"]


def hops(recs, api: ApiKey, corr: int) -> dict:
    """A call's records by direction: 2 hops for the group APIs kshim routes to the broker's
    coordinator on its own connection, 4 for ShareFetch/ShareAcknowledge (forwarded)."""
    found = {r["dir"]: r for r in recs if r["api_key"] == api and r["corr"] == corr}
    forwarded = api in (ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE)
    assert set(found) == ({C2K, K2U, U2K, K2C} if forwarded else {C2K, K2C})
    return found


def test_share_heartbeat_decoded(recs):
    h = hops(recs, ApiKey.SHARE_GROUP_HEARTBEAT, 2)            # S-1 joins
    for d in (C2K,):
        assert h[d]["api"] == "ShareGroupHeartbeat"
        assert h[d]["body"]["subscribedTopicNames"] == ["orders"] and h[d]["body"]["memberEpoch"] == 0
        assert (h[d]["group"], h[d]["member"], h[d]["epoch"]) == ("sg", "S-1", 0)
    for d in (K2C,):
        assert h[d]["body"]["assignment"] == {"topicPartitions": [{"topicId": ORDERS_ID, "partitions": [0, 1, 2]}]}
        assert (h[d]["group"], h[d]["member"], h[d]["epoch"]) == ("sg", "S-1", 1)   # group from the request
    fenced = hops(recs, ApiKey.SHARE_GROUP_HEARTBEAT, 14)[K2C]
    assert fenced["error_codes"] == [Error.FENCED_MEMBER_EPOCH] and fenced["member"] == "S-2"


def test_streams_heartbeat_decoded_with_topology_tasks_and_instance(recs):
    h = hops(recs, ApiKey.STREAMS_GROUP_HEARTBEAT, 5)          # T-2 (instance i-2) joins
    rq, rs = h[C2K], h[K2C]
    assert (rq["group"], rq["member"], rq["instance"], rq["epoch"]) == ("app", "T-2", "i-2", 0)
    assert rq["body"]["topology"]["subtopologies"][0]["sourceTopics"] == ["orders"]
    assert rq["body"]["processId"] == "p-T-2"
    assert (rs["epoch"], rs["instance"], rs["body"]["warmupTasks"]) == (2, "i-2", [{"subtopologyId": "0", "partitions": [2]}])
    assert rs["body"]["activeTasks"] == [] and rs["body"]["status"] is None
    stale = hops(recs, ApiKey.STREAMS_GROUP_HEARTBEAT, 8)[K2C]["body"]
    assert stale["status"] == [{"statusCode": 0, "statusDetail": "The topology epoch is stale"}]
    assert hops(recs, ApiKey.STREAMS_GROUP_HEARTBEAT, 18)[K2C]["error_codes"] == [Error.UNKNOWN_MEMBER_ID]


def test_share_fetch_and_acknowledge_are_summarised(recs):
    f = hops(recs, ApiKey.SHARE_FETCH, 10)
    assert f[C2K]["body"] == f[K2U]["body"] == {
        "groupId": "sg", "memberId": "S-1", "shareSessionEpoch": 1, "maxWaitMs": 500, "maxRecords": 500,
        "topics": [{"topicId": ORDERS_ID, "partitions": [
            {"partitionIndex": 0, "acknowledgementBatches": 2, "acknowledged": {"accept": 4, "release": 1}},
            {"partitionIndex": 1, "acknowledgementBatches": 0}]}], "forgottenTopicsData": []}
    assert (f[C2K]["group"], f[C2K]["member"]) == ("sg", "S-1")
    rs = f[K2C]
    assert (rs["group"], rs["member"], rs["error_codes"]) == ("sg", "S-1", [Error.NOT_LEADER_OR_FOLLOWER])
    p0, p1 = rs["body"]["responses"][0]["partitions"]
    assert (p0["acquiredRecords"], p0["acquiredRanges"], p0["errorCode"]) == (7, 1, 0) and p0["recordsBytes"] > 0
    assert (p1["errorCode"], p1["recordsBytes"]) == (Error.NOT_LEADER_OR_FOLLOWER, 0)
    assert "batches" not in rs and set(p0) == {"partitionIndex", "errorCode", "acknowledgeErrorCode", "acquiredRecords",
                                               "acquiredRanges", "recordsBytes"}
    a = hops(recs, ApiKey.SHARE_ACKNOWLEDGE, 11)
    assert a[C2K]["body"]["topics"][0]["partitions"] == [
        {"partitionIndex": 0, "acknowledgementBatches": 1, "acknowledged": {"reject": 2}}]
    assert a[K2C]["error_codes"] == [Error.INVALID_RECORD_STATE] and a[K2C]["member"] == "S-1"


@pytest.mark.parametrize("bodies", [False, True])
def test_record_bytes_never_reach_the_trace(tmp_path, bodies):
    scenario(tmp_path, bodies=bodies)
    raw = b"".join(gzip.decompress(p.read_bytes()) for p in trace_files(tmp_path))
    assert b"ShareFetch" in raw and RECORD_VALUE not in raw
    import base64
    assert base64.b64encode(RECORD_VALUE)[:8] not in raw


def test_describes_name_their_groups(recs):
    sd = hops(recs, ApiKey.STREAMS_GROUP_DESCRIBE, 12)
    assert sd[C2K]["group"] == sd[K2C]["group"] == "app"
    assert sd[K2C]["body"]["groups"][0]["members"][0]["memberId"] == "T-1"
    sh = hops(recs, ApiKey.SHARE_GROUP_DESCRIBE, 13)
    assert "group" not in sh[C2K] and sh[C2K]["groups"] == sh[K2C]["groups"] == ["sg", "other"]
    assert sh[K2C]["error_codes"] == [Error.GROUP_ID_NOT_FOUND]
    assert sh[K2C]["body"]["groups"][0]["members"][0]["assignment"]["topicPartitions"][0]["topicName"] == "orders"


def test_show_filters_by_group_member_and_api(trace, capsys):
    def lines(**kw) -> list[str]:
        out = io.StringIO()
        show(trace, out=out, **kw)
        return out.getvalue().splitlines()
    sg = lines(group="sg")
    # 7 share heartbeats and ShareGroupDescribe (names sg), 2 hops each; ShareFetch, ShareAcknowledge, 4 each
    assert len(sg) == 8 * 2 + 2 * 4 and all("group=sg" in x or "groups=sg,other" in x for x in sg)
    assert len(lines(group="other")) == 2
    assert len(lines(group="app")) == 2 * 7                     # 6 streams heartbeats and the describe
    s1 = lines(member="S-1", api="ShareFetch,ShareAcknowledge")
    assert len(s1) == 8
    assert "partitions=2 acks=accept:4,release:1" in s1[0]
    assert "err=NOT_LEADER_OR_FOLLOWER(6) partitions=2 acquired=7" in s1[3]
    assert len(lines(member="i-2")) == 2 * 4                    # T-2 by its instance id
    assert len(lines(api="share")) == 8 * 2 + 2 * 4 and len(lines(api="STREAMS")) == 2 * 7
    assert len(lines(api="ShareGroupHeartbeat", member="S-2")) == 2 * 4
    join = lines(api="StreamsGroupHeartbeat", member="T-1", limit=2)
    assert "c->k" in join[0] and "epoch=0" in join[0]
    assert "k->c" in join[1] and "epoch=1" in join[1] and "group=app member=T-1" in join[1]
    assert main(["trace", "show", str(trace), "--api", "share", "--member", "S-2", "--json"]) == 0
    got = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {r["api"] for r in got} == {"ShareGroupHeartbeat"} and len(got) == 8


def test_share_group_offset_apis_name_their_group(tmp_path):
    from kcodec.generated import alter_share_group_offsets as A
    from kcodec.generated import delete_share_group_offsets as D
    from kcodec.generated import describe_share_group_offsets as O
    from testsuite.trace.sharebuild import FrameTrace
    ft = FrameTrace(tmp_path)
    try:
        ft.forward(1, 2, "admin", ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, O.DescribeShareGroupOffsetsRequest(
            groups=[O.DescribeShareGroupOffsetsRequestGroup(group_id="sg", topics=None)]),
            O.DescribeShareGroupOffsetsResponse(groups=[O.DescribeShareGroupOffsetsResponseGroup(
                group_id="sg", topics=[O.DescribeShareGroupOffsetsResponseTopic(topic_name="orders", partitions=[
                    O.DescribeShareGroupOffsetsResponsePartition(partition_index=0, start_offset=42, lag=3)])])]))
        ft.forward(3, 4, "admin", ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, A.AlterShareGroupOffsetsRequest(
            group_id="sg", topics=[A.AlterShareGroupOffsetsRequestTopic(topic_name="orders", partitions=[
                A.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=7)])]),
            A.AlterShareGroupOffsetsResponse(error_code=Error.NON_EMPTY_GROUP))
        ft.forward(5, 6, "admin", ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, D.DeleteShareGroupOffsetsRequest(
            group_id="sg", topics=[D.DeleteShareGroupOffsetsRequestTopic(topic_name="orders")]),
            D.DeleteShareGroupOffsetsResponse(responses=[D.DeleteShareGroupOffsetsResponseTopic(
                topic_name="orders", error_code=Error.GROUP_ID_NOT_FOUND)]))
    finally:
        ft.close()
    recs = [r for r in read_trace(tmp_path) if r["type"] == "frame"]
    assert len(recs) == 6 and {r["group"] for r in recs} == {"sg"}
    d = hops(recs, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1)[K2C]["body"]
    assert d["groups"][0]["topics"][0]["partitions"][0]["startOffset"] == 42
    assert hops(recs, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 2)[K2C]["error_codes"] == [Error.NON_EMPTY_GROUP]
    assert hops(recs, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 3)[K2C]["error_codes"] == [Error.GROUP_ID_NOT_FOUND]
    assert hops(recs, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 2)[C2K]["body"]["topics"][0]["partitions"][0]["startOffset"] == 7
    out = io.StringIO()
    assert show(tmp_path, group="sg", api="share", out=out) == 6
