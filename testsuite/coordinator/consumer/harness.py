"""Driver for KIP-848 consumer groups on the sans-IO coordinator: the classic Harness (virtual clock,
responses encoded at their request version) plus ConsumerGroupHeartbeat/Describe helpers and a
simulated client (`Client`) that acknowledges revocations the way a real consumer does."""

from __future__ import annotations

from kcodec.generated.consumer_group_describe import ConsumerGroupDescribeRequest
from kcodec.generated.consumer_group_heartbeat import (ConsumerGroupHeartbeatRequest,
                                                       ConsumerGroupHeartbeatRequestTopicPartitions)

from testsuite.coordinator.harness import Harness

CGH, CGD = 68, 69
KEEP = object()


class ConsumerHarness(Harness):
    def tid(self, topic: str):
        return self.topics.get(topic).topic_id

    def cg(self, gid: str = "g"):
        return self.c.consumer_groups.get(gid)

    def cgh(self, gid: str = "g", member_id: str = "m1", epoch: int = 0, *, v: int = 1, instance=None, rack=None,
            rebalance: int = 30_000, topics=("foo",), regex=None, assignor=None, owned=KEEP, client_id="client",
            topic_filter=None):
        """One heartbeat. `owned` is {topic name: partitions} (KEEP: [] on a join, None otherwise)."""
        if owned is KEEP:
            owned = {} if epoch == 0 else None
        tps = None if owned is None else [
            ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=self.tid(t), partitions=sorted(ps))
            for t, ps in owned.items()]
        req = ConsumerGroupHeartbeatRequest(
            group_id=gid, member_id=member_id, member_epoch=epoch, instance_id=instance, rack_id=rack,
            rebalance_timeout_ms=rebalance, subscribed_topic_names=None if topics is None else list(topics),
            subscribed_topic_regex=regex if v >= 1 else None, server_assignor=assignor, topic_partitions=tps)
        return self.immediate(CGH, v, req, client_id=client_id, topic_filter=topic_filter)

    def describe_cg(self, *gids: str, v: int = 1):
        return self.immediate(CGD, v, ConsumerGroupDescribeRequest(group_ids=list(gids)))

    def names(self, assignment) -> dict[str, list[int]]:
        """Response assignment -> {topic name: partitions}."""
        if assignment is None:
            return None
        return {self.topics.topic(tp.topic_id).name: sorted(tp.partitions) for tp in assignment.topic_partitions}


class Client:
    """A consumer of the new protocol: keeps its epoch and owned partitions, reports them on every
    heartbeat (so revoking = leaving them out), applies each assignment it receives."""

    def __init__(self, h: ConsumerHarness, member_id: str, gid: str = "g", topics=("foo",), instance=None):
        self.h, self.member_id, self.gid, self.topics, self.instance = h, member_id, gid, topics, instance
        self.epoch = 0
        self.owned: dict[str, list[int]] = {}
        self.last = None

    def beat(self, **kw):
        joining = self.epoch == 0
        r = self.h.cgh(self.gid, self.member_id, self.epoch, instance=self.instance,
                       topics=self.topics if joining else None, rebalance=30_000 if joining else -1,
                       owned={} if joining else self.owned, **kw)
        self.last = r
        if r.error_code == 0:
            self.epoch = r.member_epoch
            if r.assignment is not None:
                self.owned = self.h.names(r.assignment)
        return r


def stable_pair(h, instances: tuple[str | None, str | None] = (None, None)) -> tuple[Client, Client]:
    """Members a and b (static when given instance ids) join a second apart and heartbeat until
    the group is Stable."""
    a, b = Client(h, "a", instance=instances[0]), Client(h, "b", instance=instances[1])
    a.beat()
    h.advance(1000)
    b.beat()
    for _ in range(3):
        a.beat()
        b.beat()
    assert h.cg().state == "Stable"
    return a, b
