"""KIP-848 consumer groups (group.protocol=consumer): join and leave with the Java consumer; the
member epochs, assignments and errors a raw ConsumerGroupHeartbeat member sees (join, a second member
joining, revocation acknowledged, fenced epoch, unknown member, leave); server-side regex
subscription; static membership under the new protocol."""

from __future__ import annotations

import time
import uuid

from kcodec.generated.consumer_group_heartbeat import (ConsumerGroupHeartbeatRequest,
                                                       ConsumerGroupHeartbeatRequestTopicPartitions)
from kcodec.protocol import ApiKey, Error, error_name

from ..context import Ctx, ScenarioFailed, create_topic, start_member, wait
from .static import static_bounce


class WireMember:
    """A consumer-protocol member speaking ConsumerGroupHeartbeat v1 itself; it adopts every
    assignment at once and reports what it owns on the next heartbeat."""

    def __init__(self, ctx: Ctx, group: str, topics: list[str] | None = None, regex: str | None = None,
                 instance_id: str | None = None):
        self.ctx, self.group, self.topics, self.regex, self.instance_id = ctx, group, topics, regex, instance_id
        self.member_id, self.epoch, self.owned = uuid.uuid4().hex[:22], 0, {}
        self.wire = ctx.coordinator(group)
        self.epochs: list[int] = []

    def heartbeat(self, epoch: int | None = None, member_id: str | None = None):
        first = self.epoch == 0
        req = ConsumerGroupHeartbeatRequest(
            group_id=self.group, member_id=member_id or self.member_id,
            member_epoch=self.epoch if epoch is None else epoch, instance_id=self.instance_id,
            rebalance_timeout_ms=30000 if first else -1,
            subscribed_topic_names=self.topics if first and self.topics else ([] if first else None),
            subscribed_topic_regex=self.regex if first else None,
            topic_partitions=[ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t, partitions=sorted(p))
                              for t, p in sorted(self.owned.items())])
        self.wire.send(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, req)
        resp = self.wire.read_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)[1]
        if epoch is None and member_id is None and resp.error_code == Error.NONE:
            if resp.member_epoch != self.epoch:
                self.epochs.append(resp.member_epoch)
            self.epoch = resp.member_epoch
            if resp.assignment is not None:
                self.owned = {t.topic_id: set(t.partitions) for t in resp.assignment.topic_partitions}
        return resp

    def count(self) -> int:
        return sum(len(p) for p in self.owned.values())

    def until(self, pred, timeout: float, what: str, others=()) -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                raise ScenarioFailed(f"timed out waiting for {what}")
            for m in (self, *others):
                r = m.heartbeat()
                if r.error_code:
                    raise ScenarioFailed(f"heartbeat answered {error_name(r.error_code)} waiting for {what}")
            time.sleep(0.2)

    def leave(self):
        return self.heartbeat(epoch=-2 if self.instance_id else -1)

    def close(self) -> None:
        self.wire.close()


def consumer_join_leave(ctx: Ctx, client: str, protocol: str) -> dict:
    """Java consumers: two share 4 partitions, one leaves, the other owns all."""
    topic, group = ctx.topic("cg-join-leave", 4), ctx.name("g", "cg-join-leave")
    a = start_member(ctx, client, topic, group, protocol="consumer", name=f"{group}-a")
    b = None
    try:
        wait(lambda: len(a.current) == 4, 60, "a owns all")
        b = start_member(ctx, client, topic, group, protocol="consumer", name=f"{group}-b")
        wait(lambda: len(a.current) == 2 and len(b.current) == 2, 60, "a and b share")
        b.close()
        wait(lambda: len(a.current) == 4, 60, "a owns all after b left")
        return {"shared": [2, 2], "after_leave": len(a.current), "a_revocation_events": a.revocations}
    finally:
        a.close()
        if b is not None:
            b.close()


def consumer_wire_epochs(ctx: Ctx, client: str, protocol: str) -> dict:
    """The epochs and errors of raw ConsumerGroupHeartbeat members, step by step."""
    topic, group = ctx.topic("cg-wire", 4), ctx.name("g", "cg-wire")
    a = WireMember(ctx, group, topics=[topic])
    b = WireMember(ctx, group, topics=[topic])
    try:
        first = a.heartbeat()
        facts = {"join_error": error_name(first.error_code), "join_epoch_positive": first.member_epoch > 0}
        a.until(lambda: a.count() == 4, 30, "a assigned all")
        b.heartbeat()
        a.until(lambda: a.count() == 2 and b.count() == 2, 30, "a and b share", others=(b,))
        # epoch numbers depend on when each heartbeat lands; what does not: they only grow, and
        # two reconciled members sit at the same epoch
        facts["same_epoch_when_reconciled"] = a.epoch == b.epoch
        before_leave = a.epoch
        facts["stale_epoch"] = error_name(a.heartbeat(epoch=a.epoch + 5).error_code)
        facts["unknown_member"] = error_name(a.heartbeat(member_id=uuid.uuid4().hex[:22]).error_code)
        left = b.leave()
        facts.update(leave_error=error_name(left.error_code), leave_epoch=left.member_epoch)
        a.until(lambda: a.count() == 4, 30, "a owns all after the leave")
        facts["epoch_bumped_by_leave"] = a.epoch > before_leave
        facts["epochs_only_grow"] = all(x < y for m in (a, b) for x, y in zip(m.epochs, m.epochs[1:]))
        facts["heartbeat_after_leave"] = error_name(b.heartbeat(epoch=b.epoch).error_code)
        return facts
    finally:
        a.close()
        b.close()


def consumer_regex(ctx: Ctx, client: str, protocol: str) -> dict:
    """SubscribedTopicRegex (KIP-848 server-side regex, RE2/J): two matching topics, one not, which the
    member subscribes to by name as well. The broker resolves a new regex after the heartbeat that
    brings it: the first answer assigns only the named topic, a later one the matches too."""
    # the broker's coordinator sees a new topic a moment after its metadata does: a probe member of
    # another group waits until the named topic is assignable, so the first heartbeat below is not a race
    other = ctx.topic("regex-other", 1)
    probe = WireMember(ctx, ctx.name("g", "regex-probe"), topics=[other])
    try:
        probe.heartbeat()
        probe.until(lambda: probe.count() == 1, 30, "the coordinator to assign the named topic")
    finally:
        probe.close()
    prefix = ctx.name("rx", "regex")
    for suffix, partitions in (("a", 2), ("b", 1)):
        create_topic(ctx.bootstrap, f"{prefix}-{suffix}", partitions)
    m = WireMember(ctx, ctx.name("g", "regex"), topics=[other], regex=f"{prefix}-.*")
    try:
        first = m.heartbeat()
        named_first = m.count()
        m.until(lambda: m.count() == 4, 45, "the regex to resolve to both matching topics")
        return {"join_error": error_name(first.error_code), "first_heartbeat_partitions": named_first,
                "assigned_partitions": m.count(),
                "topics_assigned": len(m.owned),
                "epochs_only_grow": all(x < y for x, y in zip(m.epochs, m.epochs[1:]))}
    finally:
        m.close()


def consumer_static(ctx: Ctx, client: str, protocol: str) -> dict:
    """Static membership under the consumer protocol: a bounced static member gets its partitions back."""
    return static_bounce(ctx, client, "consumer", bouncee=1, scenario="cg-static")
