"""OffsetCommit v2-9, OffsetFetch v1-9 and OffsetDelete v0 for classic groups (spec §C.1, C.2,
C.4, B.7; RequireStable sees the pending transactional offsets of txn_offsets.py). Offsets live in
memory here and are expressed as OffsetRecord/OffsetTombstone records (the durability issue
persists them). Topic existence is checked against live metadata, as the
broker's KafkaApis does before its coordinator sees a commit."""

from __future__ import annotations

from kcodec.generated.offset_commit import OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic
from kcodec.generated.offset_delete import (OffsetDeleteResponse, OffsetDeleteResponsePartition,
                                            OffsetDeleteResponseTopic)
from kcodec.generated.offset_fetch import (OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition,
                                           OffsetFetchResponsePartitions, OffsetFetchResponseTopic,
                                           OffsetFetchResponseTopics)

from . import errors as E
from .core import Ctx, GroupCoordinator
from .group import COMPLETING, DEAD, EMPTY, PREPARING, STABLE, ClassicGroup
from .join import validate_member
from .records import OffsetRecord, OffsetTombstone
from .txn_offsets import drop_partition


class OffsetStore:
    def __init__(self) -> None:
        self.by_group: dict[str, dict[tuple[str, int], OffsetRecord]] = {}

    def put(self, c: GroupCoordinator, rec: OffsetRecord) -> None:
        c.records.append(rec)
        self.by_group.setdefault(rec.group_id, {})[(rec.topic, rec.partition)] = rec

    def get(self, group_id: str) -> dict[tuple[str, int], OffsetRecord]:
        return self.by_group.get(group_id, {})

    def delete(self, c: GroupCoordinator, group_id: str, topic: str, partition: int) -> None:
        offsets = self.by_group.get(group_id)
        if offsets and offsets.pop((topic, partition), None) is not None:
            c.records.append(OffsetTombstone(group_id, topic, partition))

    def delete_group(self, c: GroupCoordinator, group_id: str) -> None:
        for topic, partition in list(self.get(group_id)):
            self.delete(c, group_id, topic, partition)
        self.by_group.pop(group_id, None)


def offset_commit(c: GroupCoordinator, ctx: Ctx, req) -> None:
    v = ctx.version
    topics = c.topics()
    results: list[tuple[str, list[tuple[int, int]]]] = []
    valid: list[tuple[str, object]] = []
    for t in req.topics:
        count = topics.get(t.name)
        parts = []
        for p in t.partitions:
            if count is None or not 0 <= p.partition_index < count:
                parts.append((p.partition_index, E.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                parts.append((p.partition_index, None))
                valid.append((t.name, p))
        results.append((t.name, parts))
    err = _validate_commit(c, ctx, req) if valid else E.NONE
    stored: dict[tuple[str, int], int] = {}
    if err == E.NONE:
        for topic, p in valid:
            metadata = p.committed_metadata or ""
            if len(metadata) > c.cfg.offset_metadata_max_bytes:   # Java counts chars
                stored[(topic, p.partition_index)] = E.OFFSET_METADATA_TOO_LARGE
                continue
            expire = None
            if 2 <= v <= 4 and req.retention_time_ms != -1:
                expire = c.now + req.retention_time_ms
            c.offsets.put(c, OffsetRecord(req.group_id, topic, p.partition_index, p.committed_offset,
                                          p.committed_leader_epoch if v >= 6 else -1, metadata, c.now, expire))
            stored[(topic, p.partition_index)] = E.NONE
    c.respond(ctx.token, OffsetCommitResponse(topics=[
        OffsetCommitResponseTopic(name=name, partitions=[
            OffsetCommitResponsePartition(partition_index=idx, error_code=e if e is not None
                                          else (err or stored.get((name, idx), E.NONE)))
            for idx, e in parts])
        for name, parts in results]))


def _validate_commit(c: GroupCoordinator, ctx: Ctx, req) -> int:
    v = ctx.version
    if not req.group_id:
        return E.INVALID_GROUP_ID
    gen = req.generation_id_or_member_epoch
    member_id = req.member_id or ""
    instance_id = req.group_instance_id if v >= 7 else None
    g = c.groups.get(req.group_id)
    if g is None:
        if gen < 0:
            g = ClassicGroup(req.group_id, state_timestamp_ms=c.now)
            c.groups[req.group_id] = g
            c.write_group(g)
            return E.NONE
        return E.GROUP_ID_NOT_FOUND if v >= 9 else E.ILLEGAL_GENERATION
    if g.state == DEAD:
        return E.COORDINATOR_NOT_AVAILABLE
    if gen < 0 and g.state == EMPTY:
        return E.NONE
    if gen >= 0 or member_id or instance_id is not None:
        err = validate_member(g, member_id, instance_id)
        if err:
            return err
        if gen != g.generation_id:
            return E.ILLEGAL_GENERATION
    elif g.state != EMPTY:
        return E.UNKNOWN_MEMBER_ID
    if g.state == COMPLETING:
        return E.REBALANCE_IN_PROGRESS
    m = g.members.get(member_id)
    if m is not None and g.state in (STABLE, PREPARING):
        c.schedule_heartbeat(g, member_id, m.session_timeout_ms)
    return E.NONE


def offset_fetch(c: GroupCoordinator, ctx: Ctx, req) -> None:
    v = ctx.version
    stable = v >= 7 and req.require_stable
    if v >= 8:
        groups = []
        for rg in req.groups:
            topics = None if rg.topics is None else [(t.name, list(t.partition_indexes)) for t in rg.topics]
            found, err = _fetch_group(c, rg.group_id, topics, stable)
            groups.append(OffsetFetchResponseGroup(group_id=rg.group_id, error_code=err, topics=[
                OffsetFetchResponseTopics(name=name, partitions=[
                    OffsetFetchResponsePartitions(partition_index=i, committed_offset=o, committed_leader_epoch=le,
                                                  metadata=md, error_code=pe)
                    for i, o, le, md, pe in parts]) for name, parts in found]))
        return c.respond(ctx.token, OffsetFetchResponse(groups=groups))
    topics = None if req.topics is None else [(t.name, list(t.partition_indexes)) for t in req.topics]
    found, err = _fetch_group(c, req.group_id, topics, stable)
    per_partition_error = err if v == 1 else E.NONE
    c.respond(ctx.token, OffsetFetchResponse(error_code=err if v >= 2 else E.NONE, topics=[
        OffsetFetchResponseTopic(name=name, partitions=[
            OffsetFetchResponsePartition(partition_index=i, committed_offset=o,
                                         committed_leader_epoch=le if v >= 5 else -1, metadata=md,
                                         error_code=pe or per_partition_error)
            for i, o, le, md, pe in parts]) for name, parts in found]))


def _fetch_group(c: GroupCoordinator, group_id: str, topics, require_stable: bool = False):
    """([(topic, [(partition, offset, leader epoch, metadata, error)])], group error). With
    RequireStable, a partition with a pending transactional offset is UNSTABLE_OFFSET_COMMIT, -1."""
    if not group_id:
        return [], E.INVALID_GROUP_ID
    g = c.groups.get(group_id)
    stored = c.offsets.get(group_id) if g is not None and g.state != DEAD else {}
    unstable = c.txns.partitions(group_id) if require_stable and g is not None else ()
    if topics is None:
        by_topic: dict[str, list] = {}
        for (topic, partition), rec in sorted(stored.items()):
            by_topic.setdefault(topic, []).append(
                (partition, -1, -1, "", E.UNSTABLE_OFFSET_COMMIT) if (topic, partition) in unstable
                else (partition, rec.offset, rec.leader_epoch, rec.metadata, E.NONE))
        return list(by_topic.items()), E.NONE
    found = []
    for name, partitions in topics:
        parts = []
        for i in partitions:
            rec = stored.get((name, i))
            if (name, i) in unstable:
                parts.append((i, -1, -1, "", E.UNSTABLE_OFFSET_COMMIT))
            else:
                parts.append((i, rec.offset, rec.leader_epoch, rec.metadata, E.NONE) if rec
                             else (i, -1, -1, "", E.NONE))
        found.append((name, parts))
    return found, E.NONE


def offset_delete(c: GroupCoordinator, ctx: Ctx, req) -> None:
    def top(err: int) -> None:
        c.respond(ctx.token, OffsetDeleteResponse(error_code=err, topics=[]))

    if not req.group_id:
        return top(E.INVALID_GROUP_ID)
    g = c.groups.get(req.group_id)
    if g is None or g.state == DEAD:
        return top(E.GROUP_ID_NOT_FOUND)
    if g.state != EMPTY and g.protocol_type != "consumer":
        return top(E.NON_EMPTY_GROUP)
    subscribed = set() if g.state == EMPTY else g.subscribed_topics()
    out = []
    for t in req.topics:
        is_sub = subscribed is None or t.name in subscribed
        parts = []
        for p in t.partitions:
            if is_sub:
                parts.append(OffsetDeleteResponsePartition(partition_index=p.partition_index,
                                                           error_code=E.GROUP_SUBSCRIBED_TO_TOPIC))
            else:
                c.offsets.delete(c, req.group_id, t.name, p.partition_index)
                drop_partition(c, req.group_id, t.name, p.partition_index)
                parts.append(OffsetDeleteResponsePartition(partition_index=p.partition_index, error_code=E.NONE))
        out.append(OffsetDeleteResponseTopic(name=t.name, partitions=parts))
    c.respond(ctx.token, OffsetDeleteResponse(error_code=E.NONE, topics=out))
