"""Classic members meeting consumer groups, and the error messages of the consumer-group APIs: the same
raw requests sent to the real broker and to kshim, answers compared (error codes and messages; group ids
and generated member ids normalised). The sans-IO counterpart: testsuite/coordinator/consumer/
test_broker_answers.py."""

from __future__ import annotations

import struct
import time

from kcodec.generated.consumer_group_describe import ConsumerGroupDescribeRequest
from kcodec.generated.consumer_group_heartbeat import (ConsumerGroupHeartbeatRequest,
                                                       ConsumerGroupHeartbeatRequestTopicPartitions)
from kcodec.generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from kcodec.generated.describe_groups import DescribeGroupsRequest
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.sync_group import SyncGroupRequest

from testsuite.groups.test_offsets_wire import find_coordinator
from shim.compat.wire import Wire

JOIN, SYNC, DESCRIBE, CGH, CGD = 11, 14, 15, 68, 69


class Client:
    def __init__(self, bootstrap: str, group: str):
        self.w, self.group, self.bootstrap = Wire(bootstrap), group, bootstrap
        find_coordinator(bootstrap, group)

    def call(self, api_key: int, version: int, req):
        self.w.send(api_key, version, req)
        return self.w.read_response(api_key, version)[1]

    def norm(self, text):
        return None if text is None else text.replace(self.group, "G")

    def cgh(self, member_id="m", epoch=0, *, gid=None, instance=None, rack=None, rebalance=30_000, topics=None,
            regex=None, assignor=None, owned=None, v=1):
        tps = [] if epoch == 0 and owned is None else owned
        return self.call(CGH, v, ConsumerGroupHeartbeatRequest(
            group_id=self.group if gid is None else gid, member_id=member_id, member_epoch=epoch,
            instance_id=instance, rack_id=rack, rebalance_timeout_ms=rebalance, subscribed_topic_names=topics,
            subscribed_topic_regex=regex, server_assignor=assignor, topic_partitions=tps))

    def join(self, topics, member_id="", *, instance=None, ptype="consumer", protocol="range", session=10_000,
             rebalance=30_000, meta=None):
        if meta is None:
            sub = ConsumerProtocolSubscription(topics=list(topics), user_data=None, owned_partitions=[])
            meta = struct.pack(">h", 1) + sub.encode(1)
        return self.call(JOIN, 9, JoinGroupRequest(
            group_id=self.group, session_timeout_ms=session, rebalance_timeout_ms=rebalance, member_id=member_id,
            group_instance_id=instance, protocol_type=ptype, reason=None,
            protocols=[JoinGroupRequestProtocol(name=protocol, metadata=meta)]))

    def sync(self, member_id, generation, instance=None):
        return self.call(SYNC, 5, SyncGroupRequest(group_id=self.group, generation_id=generation, member_id=member_id,
                                                   group_instance_id=instance, protocol_type="consumer",
                                                   protocol_name="range", assignments=[]))

    def describe(self, v=6):
        (d,) = self.call(DESCRIBE, v, DescribeGroupsRequest(groups=[self.group])).groups
        return d.error_code, self.norm(d.error_message), d.group_state, d.protocol_type, d.protocol_data, \
            len(d.members)

    def describe_cg(self):
        (d,) = self.call(CGD, 1, ConsumerGroupDescribeRequest(group_ids=[self.group])).groups
        return d.error_code, self.norm(d.error_message), d.group_state

    def consumer_member(self, topic, instance=None, partitions=2):
        """A consumer-protocol member heartbeating until it owns every partition of `topic`."""
        r = self.cgh("cm-" + self.group, 0, instance=instance, topics=[topic])
        deadline = time.monotonic() + 20
        while True:
            assert r.error_code == 0, r
            owned = [ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=tp.topic_id, partitions=tp.partitions)
                     for tp in r.assignment.topic_partitions] if r.assignment is not None else None
            if owned and sum(len(tp.partitions) for tp in owned) == partitions:
                r = self.cgh(r.member_id, r.member_epoch, rebalance=-1, owned=owned)
                return r.member_epoch
            assert time.monotonic() < deadline, r
            time.sleep(0.3)
            r = self.cgh(r.member_id, r.member_epoch, rebalance=-1, owned=owned)


def join_answer(j, known=()):
    mid = "" if not j.member_id else "<known id>" if j.member_id in known else "<new id>"
    return j.error_code, j.generation_id, j.leader, mid


def replacement(c: Client, topic: str, new_subscription: bool) -> dict:
    epoch = c.consumer_member(topic, instance="i1")     # may differ: the broker can see a new topic late
    j = c.join([topic, "other-topic"] if new_subscription else [topic], instance="i1")
    code, generation, leader, mid = join_answer(j)
    out = {"join": (code, "the replaced member's epoch" if generation == epoch else generation, leader, mid)}
    out["describe"] = c.describe()
    out["describe_cg"] = c.describe_cg()
    out["sync"] = c.sync(j.member_id, j.generation_id, instance="i1").error_code
    return out


def rejoin_minus_one(c: Client, topic: str) -> dict:
    c.consumer_member(topic)
    mid = c.join([topic]).member_id
    j = c.join([topic], mid)
    out = {"join": join_answer(j, (mid,)), "sync": c.sync(mid, j.generation_id).error_code}
    j = c.join([topic], mid, rebalance=-1)
    out["rejoin"] = join_answer(j, (mid,))
    time.sleep(0.2)
    out["sync after"] = c.sync(mid, j.generation_id).error_code
    return out


def join_errors(c: Client, topic: str) -> dict:
    c.consumer_member(topic)
    out = {"static": join_answer(c.join([topic], instance="i1"))}
    out["type"] = join_answer(c.join([topic], "given", ptype="other"))
    out["protocol"] = join_answer(c.join([topic], "given", protocol="sticky"))
    out["fenced"] = join_answer(c.join([topic], "other-id", instance="i1"))
    out["unknown"] = join_answer(c.join([topic], "other-id", instance="i9"))
    out["session"] = join_answer(c.join([topic], "given", session=10), ("given",))
    for n, meta in enumerate((b"", b"\xff\xff\x00\x00\x00\x00", b"\x00\x01garbage")):
        out[f"malformed {n}"] = join_answer(c.join([topic], "given", meta=meta))
    return out


HEARTBEATS = {
    "empty group id": dict(gid=""),
    "blank group id": dict(gid=" "),
    "empty group and member id": dict(gid="", member_id=""),
    "empty member id, epoch 5": dict(member_id="", epoch=5, rebalance=-1),
    "blank member id, epoch 5": dict(member_id=" ", epoch=5, rebalance=-1),
    "epoch -3": dict(epoch=-3, rebalance=-1),
    "epoch -3, unknown assignor": dict(epoch=-3, rebalance=-1, assignor="nope"),
    "epoch -2 without instance": dict(epoch=-2, rebalance=-1),
    "join, rebalance -1": dict(rebalance=-1, topics=["t"]),
    "join without subscription": dict(),
    "join, both names and regex": dict(topics=["t"], regex="x-.*"),
    "invalid regex": dict(regex="x-("),
    "unknown assignor": dict(topics=["t"], assignor="nope"),
    "empty instance, rack and member id": dict(member_id="", epoch=1, rebalance=-1, instance="", rack=""),
    "unknown group, epoch 1": dict(epoch=1, rebalance=-1, gid="-none"),
    "unknown group, leave": dict(epoch=-1, rebalance=-1, gid="-none"),
}


def heartbeat_errors(c: Client, topic: str) -> dict:
    out = {}
    for name, kw in HEARTBEATS.items():
        kw = dict(kw)
        kw.setdefault("topics", None)
        if kw.get("gid") == "-none":
            kw["gid"] = c.group + "-none"
        r = c.cgh(kw.pop("member_id", "m"), kw.pop("epoch", 0), **kw)
        out[name] = r.error_code, c.norm(r.error_message)
    return out


def other_type(c: Client, topic: str) -> dict:
    """A classic group asked with the consumer APIs, then (a new group) a consumer group with DescribeGroups."""
    mid = c.join([topic]).member_id
    c.join([topic], mid)
    out = {"describe_cg": c.describe_cg()}
    for name, kw in {"heartbeat": dict(epoch=5), "leave": dict(epoch=-1), "static leave": dict(epoch=-2,
                                                                                              instance="i")}.items():
        r = c.cgh("m", rebalance=-1, **kw)
        out[name] = r.error_code, c.norm(r.error_message)
    c.group += "-cg"
    find_coordinator(c.bootstrap, c.group)
    c.consumer_member(topic)
    out["describe v6"] = c.describe(6)[:3]
    out["describe v5"] = c.describe(5)[:3]
    return out


def differ(kafka, kshim, new_topic, names, scenario, **kw) -> dict:
    topic = new_topic(partitions=2)
    probe = Client(kafka.bootstrap, names.group("probe"))   # the broker's coordinator sees a new topic a moment
    probe.consumer_member(topic)                           # after its metadata does: wait until it assigns it
    probe.w.close()
    answers = {}
    for side, bootstrap in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap)):
        c = Client(bootstrap, names.group(side))
        try:
            answers[side] = scenario(c, topic, **kw)
        finally:
            c.w.close()
    assert answers["kshim"] == answers["broker"]
    return answers["broker"]


def test_classic_static_member_replacing_the_only_consumer_member(kafka, kshim, new_topic, names):
    seen = differ(kafka, kshim, new_topic, names, replacement, new_subscription=False)
    assert seen["join"][1] == "the replaced member's epoch" and seen["describe"][2] == "Stable"
    seen = differ(kafka, kshim, new_topic, names, replacement, new_subscription=True)
    assert seen["join"][1] == 0 and seen["describe"][2] == "PreparingRebalance"


def test_classic_rejoin_with_rebalance_timeout_minus_one(kafka, kshim, new_topic, names):
    assert differ(kafka, kshim, new_topic, names, rejoin_minus_one)["sync after"] == 25     # UNKNOWN_MEMBER_ID


def test_join_errors_inside_a_consumer_group(kafka, kshim, new_topic, names):
    seen = differ(kafka, kshim, new_topic, names, join_errors)
    # a malformed subscription: INCONSISTENT_GROUP_PROTOCOL from Kafka 4.4 (KAFKA-20662; 4.3 failed inside: -1)
    assert seen["fenced"] == (82, -1, "", "") and seen["malformed 2"] == (23, -1, "", "")


def test_consumer_group_heartbeat_validation(kafka, kshim, new_topic, names):
    differ(kafka, kshim, new_topic, names, heartbeat_errors)


def test_groups_of_the_other_type(kafka, kshim, new_topic, names):
    seen = differ(kafka, kshim, new_topic, names, other_type)
    assert seen["describe v6"][1] == "Group G is not a classic group."
