"""OffsetCommit v2-10, OffsetFetch v1-10 (v10: topics by id) and OffsetDelete v0 for classic groups (OffsetMetadataManager
.commitOffset, fetchOffsets, deleteOffsets; RequireStable sees the pending transactional offsets of txn_offsets.py). Offsets live in
memory here and are expressed as OffsetRecord/OffsetTombstone records (with a state topic,
groupservice/runtime.py appends them to shim/state/log.py). Topic existence is checked against live metadata, as the
broker's KafkaApis does before its coordinator sees a commit or an OffsetDelete. The empty group id
"" is a group like any other for OffsetCommit and OffsetFetch (GroupCoordinatorService refuses only
a null id there), not for OffsetDelete."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kcodec.generated.offset_commit import OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic
from kcodec.generated.offset_delete import (OffsetDeleteResponse, OffsetDeleteResponsePartition,
                                            OffsetDeleteResponseTopic)
from kcodec.generated.offset_fetch import (OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition,
                                           OffsetFetchResponsePartitions, OffsetFetchResponseTopic,
                                           OffsetFetchResponseTopics)

from . import classic_rebalance, errors as E
from .commit_answer import CommitAnswer
from .result import Ctx
from .scala_order import immutable_map_order, scala_commit_topics, topic_partition_hash
from .classic_group import DEAD, EMPTY, PREPARING, STABLE, ClassicGroup, validate_offset_commit
from .admin import remove_empty_classic_group
from .metadata_size import metadata_too_large
from .state_records import OffsetRecord, OffsetTombstone
from .txn_offsets import drop_partition

if TYPE_CHECKING:
    from .coordinator_state import CoordinatorState


class OffsetStore:
    def __init__(self) -> None:
        self.by_group: dict[str, dict[tuple[str, int], OffsetRecord]] = {}

    def put(self, c: "CoordinatorState", rec: OffsetRecord) -> None:
        self.put_all(c, rec.group_id, [rec])

    def put_all(self, c: "CoordinatorState", group_id: str, recs: list[OffsetRecord]) -> None:
        """Store `recs`, all of `group_id`, and append them to the step's records (one call per
        OffsetCommit, not per partition)."""
        c.records += recs
        offsets = self.by_group.setdefault(group_id, {})
        for rec in recs:
            offsets[(rec.topic, rec.partition)] = rec
        if group_id in c.txns.by_group:     # (the order a transaction's commit compares with)
            c.txns.committed(group_id, recs)

    def get(self, group_id: str) -> dict[tuple[str, int], OffsetRecord]:
        return self.by_group.get(group_id, {})

    def delete(self, c: "CoordinatorState", group_id: str, topic: str, partition: int) -> None:
        offsets = self.by_group.get(group_id)
        if offsets and offsets.pop((topic, partition), None) is not None:
            c.records.append(OffsetTombstone(group_id, topic, partition))

    def delete_group(self, c: "CoordinatorState", group_id: str) -> None:
        for topic, partition in list(self.get(group_id)):
            self.delete(c, group_id, topic, partition)
        self.by_group.pop(group_id, None)


def offset_commit(c: "CoordinatorState", ctx: Ctx, req, validate_group: Callable[..., int]) -> None:
    """`validate_group(c, ctx, req, checked)`: the group's validateOffsetCommit by its type (dispatch.py:
    validate_classic_commit here, or consumer/offsets_check.validate_commit)."""
    v = ctx.version
    catalog = c.topics
    by_id = v >= 10
    checked = []     # per request topic: (topic, its TopicInfo or None, [(partition, error or None)])
    valid = refused = False
    for t in req.topics:
        # v10 names topics by id (unknown id: UNKNOWN_TOPIC_ID), older versions by name (KafkaApis.handleOffsetCommitRequest)
        info = catalog.topic(t.topic_id) if by_id else catalog.get(t.name)
        if info is None:
            bad = E.UNKNOWN_TOPIC_ID if by_id else E.UNKNOWN_TOPIC_OR_PARTITION
            checked.append((t, None, [(p, bad) for p in t.partitions]))
            refused = refused or bool(t.partitions)
            continue
        count = info.partitions
        parts = []
        for p in t.partitions:
            if 0 <= p.partition_index < count:
                parts.append((p, None))
                valid = True
            else:
                parts.append((p, E.UNKNOWN_TOPIC_OR_PARTITION))
                refused = True
        checked.append((t, info, parts))
    if not valid:
        err = E.NONE
    elif req.group_id is None:
        err = E.INVALID_GROUP_ID
    else:
        err = validate_group(c, ctx, req, checked)
    too_large: dict[tuple[str, int], int] = {}   # the last word per partition (a request may repeat one)
    if valid and err == E.NONE:
        group_id, now, max_md = req.group_id, c.now, c.cfg.offset_metadata_max_bytes
        expire = now + req.retention_time_ms if 2 <= v <= 4 and req.retention_time_ms != -1 else None
        epochs = v >= 6
        recs = []
        for _, info, parts in checked:
            if info is None:
                continue
            name, topic_id = info.name, info.topic_id
            for p, e in parts:
                if e is not None:
                    continue
                metadata = p.committed_metadata or ""
                if metadata and metadata_too_large(metadata, max_md):
                    too_large[(name, p.partition_index)] = E.OFFSET_METADATA_TOO_LARGE
                    continue
                recs.append(OffsetRecord(group_id, name, p.partition_index, p.committed_offset,
                                         p.committed_leader_epoch if epochs else -1, metadata, now, expire, topic_id))
                if too_large:
                    too_large.pop((name, p.partition_index), None)
        if recs:
            c.offsets.put_all(c, group_id, recs)
    if c.cfg.scala_coordinator():
        accepted = _scala_commit_answer(checked, err, too_large)
    else:
        accepted = []
        for t, info, parts in checked:       # (a partition without error has its topic's info)
            if info is None:
                continue
            if too_large:
                name = info.name
                ok = [OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                    error_code=err or too_large.get((name, p.partition_index), E.NONE))
                      for p, e in parts if e is None]
            else:
                ok = [OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=err)
                      for p, e in parts if e is None]
            if ok:
                accepted.append(OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=ok))
    if refused:      # KafkaApis answers the partitions it refused first, then merges the coordinator's answer
        answer = CommitAnswer(lambda t: OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[]),
                              lambda idx, e: OffsetCommitResponsePartition(partition_index=idx, error_code=e))
        key_of = (lambda t: t.topic_id) if by_id else (lambda t: t.name)
        for t, _, parts in checked:
            for p, e in parts:
                if e is not None:
                    answer.refuse(key_of(t), t, p.partition_index, e)
        accepted = answer.merge(accepted, key_of)
    c.respond(ctx.token, OffsetCommitResponse(topics=accepted))


def _scala_commit_answer(checked, err: int, too_large: dict) -> list:
    """Kafka 3.9's Scala coordinator answers each partition once, in its maps' order (scala_order.py)."""
    names = [(info.name, p.partition_index) for _, info, parts in checked for p, e in parts if e is None]
    return [OffsetCommitResponseTopic(name=name, partitions=[
                OffsetCommitResponsePartition(partition_index=i, error_code=err or too_large.get((name, i), E.NONE))
                for i in indexes])
            for name, indexes in scala_commit_topics(names)]


def validate_classic_commit(c: "CoordinatorState", ctx: Ctx, req, checked) -> int:
    """classic_group.validate_offset_commit (ClassicGroup.validateOffsetCommit); a group that does not
    exist is created by a commit without generation, and a member's commit reschedules its heartbeat,
    as OffsetMetadataManager.commitOffset does."""
    member_id = req.member_id or ""
    g = c.groups.get(req.group_id)
    scala = c.cfg.scala_coordinator()
    err = validate_offset_commit(g, member_id, req.group_instance_id, req.generation_id_or_member_epoch,
                                 False, ctx.version, scala)
    if err:
        return err
    if g is None:
        max_md = c.cfg.offset_metadata_max_bytes
        g = ClassicGroup(req.group_id, state_timestamp_ms=c.now)
        c.groups[req.group_id] = g
        if any(e is None and not metadata_too_large(p.committed_metadata, max_md)
               for _, _, parts in checked for p, e in parts):
            classic_rebalance.write_group(c, g)
        elif not scala:    # nothing to store: no record, the group exists for writes only (uncommitted.py)
            c.uncommitted.add(c, g)
        return E.NONE
    m = g.members.get(member_id)
    if m is not None and g.state in (STABLE, PREPARING):
        classic_rebalance.schedule_heartbeat(c, g, member_id, m.session_timeout_ms)
    return E.NONE


def offset_fetch(c: "CoordinatorState", ctx: Ctx, req) -> OffsetFetchResponse:
    """The answer from the stored offsets (the caller responds: dispatch.offset_fetch)."""
    v = ctx.version
    stable = v >= 7 and req.require_stable
    if v >= 8:
        groups = []
        for rg in req.groups:
            topics = None if rg.topics is None else [_requested(c, t, v) for t in rg.topics]
            found, err = _fetch_group(c, rg.group_id, topics, stable)
            if v >= 10 and rg.topics is None:
                found = [(name, parts) for name, parts in found if c.topics.get(name) is not None]
            groups.append(OffsetFetchResponseGroup(group_id=rg.group_id, error_code=err, topics=[
                OffsetFetchResponseTopics(name=name, topic_id=_topic_id(c, name, rg.topics, i, v), partitions=[
                    OffsetFetchResponsePartitions(partition_index=p, committed_offset=o, committed_leader_epoch=le,
                                                  metadata=md, error_code=pe)
                    for p, o, le, md, pe in parts]) for i, (name, parts) in enumerate(found)]))
        return OffsetFetchResponse(groups=groups)
    topics = None if req.topics is None else [(t.name, list(t.partition_indexes), None) for t in req.topics]
    found, err = _fetch_group(c, req.group_id, topics, stable)
    per_partition_error = err if v == 1 else E.NONE
    return OffsetFetchResponse(error_code=err if v >= 2 else E.NONE, topics=[
        OffsetFetchResponseTopic(name=name, partitions=[
            OffsetFetchResponsePartition(partition_index=i, committed_offset=o,
                                         committed_leader_epoch=le if v >= 5 else -1, metadata=md,
                                         error_code=pe or per_partition_error)
            for i, o, le, md, pe in parts]) for name, parts in found])


def _requested(c: "CoordinatorState", t, v: int):
    """(name, partitions, topic id the client expects | None) of one requested topic; v10 names
    topics by id: an unknown id has no name (its partitions answer UNKNOWN_TOPIC_ID)."""
    if v < 10:
        return t.name, list(t.partition_indexes), None
    info = c.topics.topic(t.topic_id)
    return (None if info is None else info.name), list(t.partition_indexes), t.topic_id


def _topic_id(c: "CoordinatorState", name, requested, i: int, v: int):
    if v < 10:
        return None
    if requested is not None:
        return requested[i].topic_id
    info = c.topics.get(name)
    return info.topic_id if info is not None else None


def _fetch_group(c: "CoordinatorState", group_id: str, topics, require_stable: bool = False):
    """([(topic, [(partition, offset, leader epoch, metadata, error)])], group error). With
    RequireStable, a partition with a pending transactional offset is UNSTABLE_OFFSET_COMMIT, -1.
    `topics`: None (all) or [(name | None when the requested id is unknown, partitions, expected id)]."""
    if group_id is None:
        return [], E.INVALID_GROUP_ID
    g = c.consumer_groups.get(group_id) if c.uncommitted.hidden(c, group_id) else (
        c.groups.get(group_id) or c.consumer_groups.get(group_id))     # a read: the committed state
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
    for name, partitions, expected_id in topics:
        parts = []
        for i in partitions:
            if name is None:
                parts.append((i, -1, -1, "", E.UNKNOWN_TOPIC_ID))
                continue
            rec = stored.get((name, i))
            if rec is not None and expected_id is not None and rec.topic_id is not None \
                    and rec.topic_id != expected_id:
                rec = None          # committed for an earlier topic of that name (deleted, created again)
            if (name, i) in unstable:
                parts.append((i, -1, -1, "", E.UNSTABLE_OFFSET_COMMIT))
            else:
                parts.append((i, rec.offset, rec.leader_epoch, rec.metadata, E.NONE) if rec
                             else (i, -1, -1, "", E.NONE))
        found.append((name or "", parts))
    return found, E.NONE


def drop_deleted_topics(c: "CoordinatorState", names: set[str]) -> None:
    """Offsets (and pending transactional offsets) of deleted topics go, as when the broker's
    coordinator sees a topic deletion in the metadata image (OffsetMetadataManager.onMetadataUpdate)."""
    for group_id in sorted(set(c.offsets.by_group) | set(c.txns.by_group)):
        gone = {k for k in c.offsets.get(group_id) if k[0] in names}
        gone |= {k for k in c.txns.partitions(group_id) if k[0] in names}
        for topic, partition in sorted(gone):
            c.offsets.delete(c, group_id, topic, partition)
            drop_partition(c, group_id, topic, partition)
        if group_id in c.offsets.by_group and not c.offsets.by_group[group_id]:
            del c.offsets.by_group[group_id]


def offset_delete(c: "CoordinatorState", ctx: Ctx, req, validate_group: Callable[..., tuple]) -> None:
    """KafkaApis.handleOffsetDeleteRequest: partitions of topics or partitions missing from the
    metadata answer UNKNOWN_TOPIC_OR_PARTITION without reaching the coordinator, which judges the
    group (even with nothing left to delete); its answer is merged into theirs as
    OffsetDeleteResponse.Builder.merge does: a group error replaces everything. `validate_group`:
    the type's validateOffsetDelete (dispatch.py), see delete_offsets."""
    early: list[OffsetDeleteResponseTopic] = []
    known = []
    for t in req.topics:
        count = c.topics.partitions(t.name)
        if count is None:
            _add_topic(early, t.name, [p.partition_index for p in t.partitions], E.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        ok = [p.partition_index for p in t.partitions if 0 <= p.partition_index < count]
        for p in t.partitions:
            if not 0 <= p.partition_index < count:
                _add_topic(early, t.name, [p.partition_index], E.UNKNOWN_TOPIC_OR_PARTITION)
        if ok:
            known.append((t.name, ok))
    body = delete_offsets(c, req.group_id, known, validate_group)
    if body.error_code == E.NONE and early:
        for t in body.topics:
            _add_topic(early, t.name, [p.partition_index for p in t.partitions], None, t.partitions)
        body.topics = early
    c.respond(ctx.token, body)


def _add_topic(out: list, name: str, partitions: list[int], err: int | None, parts=None) -> None:
    """The response builder's getOrCreateTopic: partitions join the first entry of that name."""
    entry = next((t for t in out if t.name == name), None)
    if entry is None:
        entry = OffsetDeleteResponseTopic(name=name, partitions=[])
        out.append(entry)
    entry.partitions.extend(parts if parts is not None else [
        OffsetDeleteResponsePartition(partition_index=i, error_code=err) for i in partitions])


def delete_offsets(c: "CoordinatorState", group_id: str, topics: list[tuple[str, list[int]]],
                   validate_group: Callable[..., tuple]) -> OffsetDeleteResponse:
    """GroupCoordinatorService.deleteOffsets + OffsetMetadataManager.deleteOffsets for the topics that
    passed KafkaApis' checks: the group's error, or per topic GROUP_SUBSCRIBED_TO_TOPIC when the
    group subscribes to it, else its offsets (and pending transactional offsets) deleted.
    `validate_group(c, group_id)` -> (error, is subscribed to topic) by the group's type."""
    if not group_id:
        return OffsetDeleteResponse(error_code=E.INVALID_GROUP_ID, topics=[])
    err, subscribed = validate_group(c, group_id)
    if err:
        return OffsetDeleteResponse(error_code=err, topics=[])
    if c.cfg.scala_coordinator():
        return _scala_delete_offsets(c, group_id, topics, subscribed)
    out = []
    for name, partitions in topics:
        parts = []
        for i in partitions:
            if subscribed(name):
                parts.append(OffsetDeleteResponsePartition(partition_index=i, error_code=E.GROUP_SUBSCRIBED_TO_TOPIC))
            else:
                c.offsets.delete(c, group_id, name, i)
                drop_partition(c, group_id, name, i)
                parts.append(OffsetDeleteResponsePartition(partition_index=i, error_code=E.NONE))
        out.append(OffsetDeleteResponseTopic(name=name, partitions=parts))
    return OffsetDeleteResponse(error_code=E.NONE, topics=out)


def _scala_delete_offsets(c: "CoordinatorState", group_id: str, topics, subscribed) -> OffsetDeleteResponse:
    """Kafka 3.9's GroupCoordinator.handleDeleteOffsets: the answer is a Scala map (the subscribed
    partitions' errors, then the deleted ones: scala_order.py), grouped by topic by the adapter; the
    deletion runs GroupMetadataManager.cleanupGroupMetadata, which ends an Empty group left without
    offsets (Dead, removed)."""
    pairs = [(name, i) for name, partitions in topics for i in partitions]
    consumed = [k for k in pairs if subscribed(k[0])]
    eligible = [k for k in pairs if not subscribed(k[0])]
    for name, i in eligible:
        c.offsets.delete(c, group_id, name, i)
        drop_partition(c, group_id, name, i)
    g = c.groups.get(group_id)
    if eligible and g is not None and g.state == EMPTY and not c.offsets.get(group_id) \
            and not c.txns.partitions(group_id):
        remove_empty_classic_group(c, group_id)
        c.event("group_deleted", group_id, reason="offsets deleted from an empty group (Kafka 3.9)")
    errors = {**{k: E.GROUP_SUBSCRIBED_TO_TOPIC for k in consumed}, **{k: E.NONE for k in eligible}}
    out: list = []
    for name, i in immutable_map_order([(k, topic_partition_hash(*k)) for k in consumed + eligible]):
        _add_topic(out, name, [i], errors[(name, i)])
    return OffsetDeleteResponse(error_code=E.NONE, topics=out)


def validate_classic_offset_delete(c: "CoordinatorState", group_id: str) -> tuple[int, Callable[[str], bool] | None]:
    """ClassicGroup.validateOffsetDelete: a group that exists, Empty unless it uses the consumer
    protocol (then its subscribed topics are refused one by one)."""
    g = c.groups.get(group_id)
    if g is None or g.state == DEAD:
        return E.GROUP_ID_NOT_FOUND, None
    if g.state != EMPTY and g.protocol_type != "consumer":
        return E.NON_EMPTY_GROUP, None
    return E.NONE, g.is_subscribed_to_topic
