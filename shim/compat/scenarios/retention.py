"""Offset retention of a KIP-848 consumer group (Kafka 4.3: ConsumerGroup.offsetExpirationCondition is
the commit time, ModernGroup.isSubscribedToTopic keeps subscribed topics, an Empty group left without
offsets is deleted). Needs a target whose offsets.retention.minutes is 1 and whose
offsets.retention.check.interval.ms is a second or so (kshim: --offsets-retention-minutes 1
--offsets-retention-check-interval-ms 1000), so it runs only when named."""

from __future__ import annotations

import time

from kcodec.generated.consumer_group_describe import ConsumerGroupDescribeRequest
from kcodec.generated.list_groups import ListGroupsRequest
from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)
from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kcodec.protocol import ApiKey, error_name

from ..context import Ctx, ScenarioFailed
from .consumer import WireMember

WAIT_S = 150            # a one-minute retention, checked every second or so, with room to spare


def _commit(ctx: Ctx, m: WireMember, offsets: dict[str, dict[int, int]]) -> list[str]:
    req = OffsetCommitRequest(group_id=m.group, generation_id_or_member_epoch=m.epoch, member_id=m.member_id,
                              topics=[OffsetCommitRequestTopic(name=t, partitions=[
                                  OffsetCommitRequestPartition(partition_index=p, committed_offset=o)
                                  for p, o in sorted(ps.items())]) for t, ps in offsets.items()])
    resp = ctx.call(m.group, ApiKey.OFFSET_COMMIT, 9, req)
    return sorted({error_name(p.error_code) for t in resp.topics for p in t.partitions})


def _fetch(ctx: Ctx, group: str, topics: dict[str, int]) -> dict:
    """{topic: {partition: offset}} of the requested partitions (-1: none committed)."""
    req = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=[
        OffsetFetchRequestTopics(name=t, partition_indexes=list(range(n))) for t, n in topics.items()])])
    (g,) = ctx.call(group, ApiKey.OFFSET_FETCH, 9, req).groups
    return {t.name: {p.partition_index: p.committed_offset for p in t.partitions} for t in g.topics}


def _describe(ctx: Ctx, group: str) -> tuple[str, str]:
    (g,) = ctx.call(group, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, ConsumerGroupDescribeRequest(group_ids=[group])).groups
    return error_name(g.error_code), g.group_state


def _listed(ctx: Ctx, group: str) -> bool:
    resp = ctx.call(group, ApiKey.LIST_GROUPS, 5, ListGroupsRequest(states_filter=[], types_filter=[]))
    return any(g.group_id == group for g in resp.groups)


def _until(pred, what: str, beat=None) -> None:
    deadline = time.monotonic() + WAIT_S
    while not pred():
        if time.monotonic() > deadline:
            raise ScenarioFailed(f"timed out waiting for {what}")
        if beat is not None and beat().error_code:
            raise ScenarioFailed(f"heartbeat failed waiting for {what}")
        time.sleep(1.0)


def consumer_retention(ctx: Ctx, client: str, protocol: str) -> dict:
    """A member subscribed to one topic commits to it and to another: the other topic's offset expires
    by its commit time while the member stays; the subscribed one is kept; once the member leaves, the
    Empty group's offsets expire and the group is deleted."""
    sub, other = ctx.topic("cg-retention", 2), ctx.topic("cg-retention-other", 1)
    topics = {sub: 2, other: 1}
    m = WireMember(ctx, ctx.name("g", "cg-retention"), topics=[sub])
    try:
        m.heartbeat()
        m.until(lambda: m.count() == 2, 30, "the member assigned both partitions")
        facts = {"commit": _commit(ctx, m, {sub: {0: 5, 1: 6}, other: {0: 7}})}
        _until(lambda: _fetch(ctx, m.group, topics)[other][0] == -1, "the unsubscribed topic's offset to expire",
               beat=m.heartbeat)
        facts["while_member_active"] = {"offsets": list(_fetch(ctx, m.group, topics).values()),
                                        "describe": _describe(ctx, m.group)}
        facts["leave"] = error_name(m.leave().error_code)
        _until(lambda: _describe(ctx, m.group)[0] != "NONE", "the Empty group to be deleted")
        facts["after_empty"] = {"offsets": list(_fetch(ctx, m.group, topics).values()),
                                "describe": _describe(ctx, m.group)[0], "listed": _listed(ctx, m.group)}
        return facts
    finally:
        m.close()
