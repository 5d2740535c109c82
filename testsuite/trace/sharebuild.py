"""Traces of share groups (KIP-932) and streams groups (KIP-1071) made of real encoded frames: each
request and answer is encoded by kcodec and fed to a real Tracer (shim/trace/tracer.py) whose clock
is set by the test, with the hops kshim traces: the share/streams group APIs go to the broker's
coordinator on kshim's own connection (shim/groupservice/broker_groups.py), so only `client->kshim` and
`kshim->client` are traced; ShareFetch, ShareAcknowledge and Metadata are forwarded on the client's
upstream connection, four hops. The writer thread decodes them as it does in kshim.

`scenario(directory)` (times in ms from the start; topic "orders" has 3 partitions):

  0      Metadata answer: orders and its topic id
  share group "sg":
  100    S-1 joins (epoch 0) -> epoch 1, orders-0,1,2
  200    S-2 joins -> epoch 2, orders-2
  5100   S-1 epoch 1 -> epoch 2, orders-0,1 (orders-2 moved)
  5200   S-2 epoch 2 -> epoch 2, assignment null (unchanged)
  6000   S-1 ShareFetch (acknowledges 0..4: 4 accept, 1 release) -> 7 records acquired on orders-0,
         NOT_LEADER_OR_FOLLOWER on orders-1
  7000   S-1 ShareAcknowledge (orders-0 5..6 reject) -> INVALID_RECORD_STATE
  12000  S-2 epoch 1 -> FENCED_MEMBER_EPOCH; 12100 S-2 rejoins -> epoch 4, orders-2
  15000  S-1 leaves (epoch -1)
  streams group "app" (instance "i-2" for T-2):
  300    T-1 joins with its topology -> epoch 1, active 0_0 0_1 0_2
  400    T-2 joins -> epoch 2, active none, warmup 0_2
  5300   T-1 epoch 1 -> epoch 2, active 0_0 0_1, standby 0_2, status STALE_TOPOLOGY (code 0)
  5400   T-2 epoch 2 -> epoch 3, active 0_2
  9000   StreamsGroupDescribe app; ShareGroupDescribe sg, other
  16000  T-2 leaves (epoch -2, static); 16500 T-2 heartbeats epoch 3 -> UNKNOWN_MEMBER_ID
"""

from __future__ import annotations

import uuid

from kcodec.generated import metadata as M
from kcodec.generated import share_acknowledge as SA
from kcodec.generated import share_fetch as SF
from kcodec.generated import share_group_describe as SD
from kcodec.generated import share_group_heartbeat as SH
from kcodec.generated import streams_group_describe as TD
from kcodec.generated import streams_group_heartbeat as TH
from kcodec.protocol import ApiKey, Error
from shim.trace import records as R
from shim.trace import tracer as tracer_mod
from shim.trace.share_streams import WHOLE
from testsuite.trace.test_trace_unit import batch, req, resp

ROUTED = WHOLE          # answered by the broker's coordinator through kshim's own connection
ORDERS = uuid.UUID("3f1c2a4e-6b7d-4e8f-9a0b-1c2d3e4f5a6b")
RECORD_VALUE = b"value 1 "      # in the ShareFetch records: must never reach the trace
BASE_NS = 10**12


class FrameTrace:
    """A Tracer fed encoded frames at chosen times (ms); `close()` flushes the files."""

    def __init__(self, directory, **kw):
        self.t = 0.0
        self._saved = tracer_mod._now
        tracer_mod._now = lambda: BASE_NS + int(self.t * 1_000_000)
        self.tracer = tracer_mod.Tracer(directory, **kw)
        self.corr = 0
        self.conns: dict[str, int] = {}

    def conn(self, name: str) -> int:
        if name not in self.conns:
            self.conns[name] = self.tracer.new_conn()
        return self.conns[name]

    def forward(self, t_req: float, t_resp: float | None, conn: str, key: ApiKey, version: int, request, response):
        """client->kshim (and kshim->upstream) at t_req; (upstream->kshim and) kshim->client at t_resp."""
        self.corr += 1
        c, tr = self.conn(conn), self.tracer
        f = memoryview(req(key, version, self.corr, request, conn))
        upstream = key not in ROUTED
        for dt, d in ((0, R.C2K), (0.1, R.K2U))[:2 if upstream else 1]:
            self.t = t_req + dt
            tr.frame(c, d, key, version, self.corr, f, conn)
        if t_resp is None:
            return
        f = memoryview(resp(key, version, self.corr, response))
        for dt, d in ((-0.1, R.U2K), (0, R.K2C))[0 if upstream else 1:]:
            self.t = t_resp + dt
            tr.frame(c, d, key, version, self.corr, f)

    def close(self) -> None:
        self.tracer.close()
        tracer_mod._now = self._saved


def share_hb(ft, t, conn, member, epoch, answer_epoch, parts=None, error=Error.NONE, topics=("orders",)):
    rq = SH.ShareGroupHeartbeatRequest(group_id="sg", member_id=member, member_epoch=epoch,
                                       subscribed_topic_names=list(topics) if epoch == 0 else None)
    assignment = None if parts is None else SH.Assignment(topic_partitions=[
        SH.TopicPartitions(topic_id=ORDERS, partitions=list(parts))])
    rs = SH.ShareGroupHeartbeatResponse(error_code=error, member_id=member, member_epoch=answer_epoch,
                                        heartbeat_interval_ms=5000, assignment=assignment)
    ft.forward(t, t + 2, conn, ApiKey.SHARE_GROUP_HEARTBEAT, 1, rq, rs)


def task_ids(cls, parts):
    return None if parts is None else ([cls(subtopology_id="0", partitions=list(parts))] if parts else [])


def streams_hb(ft, t, conn, member, epoch, answer_epoch, active=None, standby=None, warmup=None,
               error=Error.NONE, instance=None, status=None):
    topology = None
    if epoch == 0:
        topology = TH.Topology(epoch=1, subtopologies=[TH.Subtopology(subtopology_id="0", source_topics=["orders"])])
    rq = TH.StreamsGroupHeartbeatRequest(group_id="app", member_id=member, member_epoch=epoch, instance_id=instance,
                                         rebalance_timeout_ms=30000, topology=topology, process_id="p-" + member)
    T = TH.StreamsGroupHeartbeatResponseTaskIds
    rs = TH.StreamsGroupHeartbeatResponse(
        error_code=error, member_id=member, member_epoch=answer_epoch, heartbeat_interval_ms=5000,
        active_tasks=task_ids(T, active), standby_tasks=task_ids(T, standby), warmup_tasks=task_ids(T, warmup),
        status=[TH.Status(status_code=code, status_detail=text) for code, text in status or ()] or None)
    ft.forward(t, t + 2, conn, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, rq, rs)


def share_fetch_and_ack(ft):
    ack = SF.AcknowledgementBatch
    rq = SF.ShareFetchRequest(group_id="sg", member_id="S-1", share_session_epoch=1, max_wait_ms=500, max_records=500,
                              batch_size=500, topics=[SF.FetchTopic(topic_id=ORDERS, partitions=[
                                  SF.FetchPartition(partition_index=0, acknowledgement_batches=[
                                      ack(first_offset=0, last_offset=3, acknowledge_types=[1]),
                                      ack(first_offset=4, last_offset=4, acknowledge_types=[2])]),
                                  SF.FetchPartition(partition_index=1)])])
    rs = SF.ShareFetchResponse(acquisition_lock_timeout_ms=30000, responses=[SF.ShareFetchableTopicResponse(
        topic_id=ORDERS, partitions=[
            SF.PartitionData(partition_index=0, records=batch(7, base_offset=5),
                             acquired_records=[SF.AcquiredRecords(first_offset=5, last_offset=11, delivery_count=1)]),
            SF.PartitionData(partition_index=1, error_code=Error.NOT_LEADER_OR_FOLLOWER, records=b"")])])
    ft.forward(6000, 6010, "s1", ApiKey.SHARE_FETCH, 1, rq, rs)
    rq = SA.ShareAcknowledgeRequest(group_id="sg", member_id="S-1", share_session_epoch=2, topics=[
        SA.AcknowledgeTopic(topic_id=ORDERS, partitions=[SA.AcknowledgePartition(
            partition_index=0, acknowledgement_batches=[SA.AcknowledgementBatch(first_offset=5, last_offset=6,
                                                                                acknowledge_types=[3, 3])])])])
    rs = SA.ShareAcknowledgeResponse(responses=[SA.ShareAcknowledgeTopicResponse(topic_id=ORDERS, partitions=[
        SA.PartitionData(partition_index=0, error_code=Error.INVALID_RECORD_STATE)])])
    ft.forward(7000, 7003, "s1", ApiKey.SHARE_ACKNOWLEDGE, 1, rq, rs)


def describes(ft):
    rq = TD.StreamsGroupDescribeRequest(group_ids=["app"])
    rs = TD.StreamsGroupDescribeResponse(groups=[TD.DescribedGroup(
        group_id="app", group_state="Stable", group_epoch=3, assignment_epoch=3,
        members=[TD.Member(member_id="T-1", member_epoch=2, process_id="p-T-1", client_id="c-t1")])])
    ft.forward(9000, 9002, "admin", ApiKey.STREAMS_GROUP_DESCRIBE, 0, rq, rs)
    rq = SD.ShareGroupDescribeRequest(group_ids=["sg", "other"])
    rs = SD.ShareGroupDescribeResponse(groups=[
        SD.DescribedGroup(group_id="sg", group_state="Stable", group_epoch=4, assignment_epoch=4, assignor_name="simple",
                          members=[SD.Member(member_id="S-1", member_epoch=2, client_id="c-s1", assignment=SD.Assignment(
                              topic_partitions=[SD.TopicPartitions(topic_id=ORDERS, topic_name="orders",
                                                                   partitions=[0, 1])]))]),
        SD.DescribedGroup(group_id="other", error_code=Error.GROUP_ID_NOT_FOUND)])
    ft.forward(9100, 9102, "admin", ApiKey.SHARE_GROUP_DESCRIBE, 1, rq, rs)


def metadata(ft):
    rs = M.MetadataResponse(topics=[M.MetadataResponseTopic(name="orders", topic_id=ORDERS, partitions=[])])
    ft.forward(0, 1, "s1", ApiKey.METADATA, 12, M.MetadataRequest(topics=None), rs)


def scenario(directory, **kw) -> None:
    ft = FrameTrace(directory, **kw)
    try:
        metadata(ft)
        share_hb(ft, 100, "s1", "S-1", 0, 1, [0, 1, 2])
        share_hb(ft, 200, "s2", "S-2", 0, 2, [2])
        streams_hb(ft, 300, "t1", "T-1", 0, 1, active=[0, 1, 2], standby=[], warmup=[])
        streams_hb(ft, 400, "t2", "T-2", 0, 2, active=[], standby=[], warmup=[2], instance="i-2")
        share_hb(ft, 5100, "s1", "S-1", 1, 2, [0, 1])
        share_hb(ft, 5200, "s2", "S-2", 2, 2)
        streams_hb(ft, 5300, "t1", "T-1", 1, 2, active=[0, 1], standby=[2], warmup=[],
                   status=[(0, "The topology epoch is stale")])
        streams_hb(ft, 5400, "t2", "T-2", 2, 3, active=[2], standby=[], warmup=[], instance="i-2")
        share_fetch_and_ack(ft)
        describes(ft)
        share_hb(ft, 12000, "s2", "S-2", 1, 1, error=Error.FENCED_MEMBER_EPOCH)
        share_hb(ft, 12100, "s2", "S-2", 0, 4, [2])
        share_hb(ft, 15000, "s1", "S-1", -1, -1)
        streams_hb(ft, 16000, "t2", "T-2", -2, -2, instance="i-2")
        streams_hb(ft, 16500, "t2", "T-2", 3, 3, error=Error.UNKNOWN_MEMBER_ID, instance="i-2")
    finally:
        ft.close()
