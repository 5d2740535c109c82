"""One request at a time per connection, as the broker: its network processor reads a connection's
next request only once the current one is answered (`SocketServer.Processor` mutes the
`KafkaChannel`). A Heartbeat, OffsetCommit, LeaveGroup or CreateTopics pipelined behind a JoinGroup
that the coordinator parks takes effect only after the join is answered. The same raw requests go to
the real broker and through kshim; the answers and what another connection sees must agree."""

from __future__ import annotations

import time

import pytest

from kcodec import api
from kcodec.generated.create_topics import CreatableTopic, CreateTopicsRequest
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.metadata import MetadataRequest, MetadataRequestTopic
from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)
from kcodec.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment

from shim.compat.wire import Wire

pytestmark = pytest.mark.timing   # compares wall-clock measurements: runs alone (scripts/test)

COMMIT, METADATA, JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, FIND, CREATE = 8, 3, 11, 12, 13, 14, 15, 10, 19
REBALANCE_MS = 2000


def _join(group: str, member: str) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=REBALANCE_MS,
                            member_id=member, protocol_type="consumer",
                            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01")])


def _describe(w: Wire, group: str, names: dict) -> tuple:
    w.send(DESCRIBE, 0, api.REQUESTS[DESCRIBE](groups=[group]))
    (g,) = w.read_response(DESCRIBE, 0)[1].groups
    return g.group_state, sorted(names.get(m.member_id, "?") for m in g.members)


def _topic_exists(w: Wire, topic: str) -> bool:
    w.send(METADATA, 12, MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False))
    (t,) = w.read_response(METADATA, 12)[1].topics
    return t.error_code == 0


def pipelined_behind_a_parked_join(bootstrap: str, group: str, topic: str, new_topic: str) -> dict:
    """A and B form generation 2; A (the leader) rejoins, which parks its JoinGroup until B rejoins or
    the rebalance timeout removes B; behind it on A's connection, in one write: Heartbeat and
    OffsetCommit of generation 2, LeaveGroup, CreateTopics. Another connection looks meanwhile."""
    with Wire(bootstrap) as a, Wire(bootstrap) as b, Wire(bootstrap) as c:
        for _ in range(100):      # the broker creates and loads __consumer_offsets on first use
            c.send(FIND, 3, api.REQUESTS[FIND](key=group, key_type=0))
            if c.read_response(FIND, 3)[1].error_code == 0:
                break
            time.sleep(0.2)
        a.send(JOIN, 3, _join(group, ""))
        member_a = a.read_response(JOIN, 3)[1].member_id
        b.send(JOIN, 3, _join(group, ""))
        time.sleep(0.3)
        a.send(JOIN, 3, _join(group, member_a))
        ja, jb = a.read_response(JOIN, 3)[1], b.read_response(JOIN, 3)[1]
        gen, member_b = ja.generation_id, jb.member_id
        names = {member_a: "A", member_b: "B"}
        a.send(SYNC, 3, SyncGroupRequest(group_id=group, generation_id=gen, member_id=member_a, assignments=[
            SyncGroupRequestAssignment(member_id=member_a, assignment=b"a"),
            SyncGroupRequestAssignment(member_id=member_b, assignment=b"b")]))
        b.send(SYNC, 3, SyncGroupRequest(group_id=group, generation_id=gen, member_id=member_b, assignments=[]))
        synced = (a.read_response(SYNC, 3)[1].error_code, b.read_response(SYNC, 3)[1].error_code)

        later = [
            (HEARTBEAT, 3, api.REQUESTS[HEARTBEAT](group_id=group, generation_id=gen, member_id=member_a)),
            (COMMIT, 2, OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=gen, member_id=member_a,
                                            retention_time_ms=-1, topics=[OffsetCommitRequestTopic(
                                                name=topic, partitions=[OffsetCommitRequestPartition(
                                                    partition_index=0, committed_offset=5, committed_metadata="")])])),
            (LEAVE, 0, api.REQUESTS[LEAVE](group_id=group, member_id=member_a)),
            (CREATE, 5, CreateTopicsRequest(timeout_ms=30000, topics=[CreatableTopic(
                name=new_topic, num_partitions=1, replication_factor=1, assignments=[], configs=[])])),
        ]
        t0 = time.monotonic()
        a.send_raw(b"".join([a.frame(JOIN, 3, _join(group, member_a))[1]] +
                            [a.frame(k, v, req)[1] for k, v, req in later]))
        time.sleep(REBALANCE_MS / 2000)
        during = _describe(c, group, names), _topic_exists(c, new_topic)
        rejoin = a.read_response(JOIN, 3)[1]
        joined_after = time.monotonic() - t0
        answers = [("join", rejoin.error_code, rejoin.generation_id - gen, names.get(rejoin.leader, "?"))]
        for k, v, _ in later:
            r = a.read_response(k, v)[1]
            if k == COMMIT:
                answers.append(("commit", [p.error_code for t in r.topics for p in t.partitions]))
            elif k == CREATE:
                answers.append(("create", [t.error_code for t in r.topics]))
            else:
                answers.append((api.API_KEYS[k], r.error_code))
        return {"synced": synced, "during": during, "answers": answers,
                "join_waited": joined_after > REBALANCE_MS / 2000, "after": _describe(c, group, names)}


def test_requests_behind_a_parked_join_wait_for_it(kafka, kshim, names, new_topic):
    topic = new_topic()
    facts = {where: pipelined_behind_a_parked_join(boot, names.group(where), topic, names.topic(where))
             for where, boot in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap))}
    assert facts["kshim"] == facts["broker"]
    # while A's join is parked, A is still a member and the topic is not created yet; after it the
    # heartbeat and commit of the old generation are ILLEGAL_GENERATION and A's leave empties the group
    assert facts["broker"] == {
        "synced": (0, 0), "during": (("PreparingRebalance", ["A", "B"]), False),
        "answers": [("join", 0, 1, "A"), ("Heartbeat", 22), ("commit", [22]), ("LeaveGroup", 0), ("create", [0])],
        "join_waited": True, "after": ("Empty", [])}
