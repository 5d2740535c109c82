"""Offset retention and the periodic group cleanup (Kafka's
GroupCoordinatorShard.cleanupGroupMetadata every offsets.retention.check.interval.ms), for classic and
KIP-848 consumer groups alike.

Per group, OffsetMetadataManager.cleanupExpiredOffsets: the group's OffsetExpirationCondition gives the
base timestamp of an offset; an offset expires when `now >= expire_timestamp` if its commit carried
one (OffsetCommit v2-4 RetentionTimeMs), else when `now - base >= offsets.retention.minutes`
(OffsetExpirationConditionImpl.isOffsetExpired). Offsets of topics the group subscribes to
(Group.isSubscribedToTopic) and partitions with a pending transactional offset never expire.
- classic group with a protocol type (ClassicGroup.offsetExpirationCondition): Empty -> base = when it
  became Empty; a consumer-protocol group that is Stable -> the commit time, subscribed = the last
  generation's topics; any other state -> nothing expires;
- simple classic group (no protocol type: admin / manual-assignment commits): the commit time;
- KIP-848 consumer group (ConsumerGroup.offsetExpirationCondition): always the commit time, in every
  state; subscribed = the topics its members subscribe to by name or by a resolved regex
  (ModernGroup.isSubscribedToTopic), so an Empty consumer group subscribes to nothing and all its
  offsets expire by commit time.
When every offset of the group is gone (or it had none) and no transactional offset is pending, an
Empty group is deleted (GroupMetadataManager.maybeDeleteGroup): a classic group with its key-2
tombstone, a consumer group with its records' tombstones (consumer_admin.remove_empty_group, as
DeleteGroups).

The adapter calls `GroupCoordinator.expire_offsets(now_ms)` on its own schedule; nothing here reads
a clock.
"""

from __future__ import annotations

from typing import Callable

from .classic_group import DEAD, EMPTY, STABLE, ClassicGroup
from .consumer.consumer_admin import remove_empty_group
from .consumer.consumer_group import G_EMPTY, ConsumerGroup
from .state_records import GroupTombstone, OffsetRecord

Base = Callable[[OffsetRecord], int]


def _commit_time(rec: OffsetRecord) -> int:
    return rec.commit_timestamp_ms


def expiration_base(g: ClassicGroup | ConsumerGroup) -> tuple[Base | None, set[str]]:
    """(offset -> base timestamp | None when nothing of this group expires, subscribed topics):
    the group's offsetExpirationCondition and the topics isSubscribedToTopic keeps."""
    if isinstance(g, ConsumerGroup):
        return _commit_time, g.subscribed_names()          # ConsumerGroup / ModernGroup
    if g.protocol_type:
        if g.state == EMPTY:
            return (lambda rec: g.state_timestamp_ms), set()
        if g.protocol_type == "consumer" and g.state == STABLE:
            subscribed = g.subscribed                      # the last generation's (ClassicGroup.subscribedTopics)
            if subscribed is not None:
                return _commit_time, set(subscribed)
        return None, set()
    return _commit_time, set()


def expire_offsets(c) -> int:
    """Tombstone expired offsets, delete Empty groups left without offsets. Returns how many offsets went."""
    expired = 0
    for gid in sorted({*c.groups, *c.consumer_groups}):
        g = c.groups[gid] if gid in c.groups else c.consumer_groups[gid]
        if isinstance(g, ClassicGroup) and g.state == DEAD:
            continue
        if c.offsets.get(gid):
            gone = _expire_group_offsets(c, gid, g)
            if gone is None:
                continue                                   # no expiration condition: nothing expires
            expired += gone
        if not c.offsets.get(gid) and not c.txns.partitions(gid) and _is_empty(g):
            _delete(c, gid, g)
    return expired


def _expire_group_offsets(c, gid: str, g) -> int | None:
    """OffsetMetadataManager.cleanupExpiredOffsets for one group: the offsets tombstoned (None when
    the group has no expiration condition)."""
    base, subscribed = expiration_base(g)
    if base is None:
        return None
    retention = c.cfg.offsets_retention_ms
    pending = c.txns.partitions(gid)
    offsets = c.offsets.get(gid)
    expired = 0
    for key in sorted(offsets):
        rec = offsets[key]
        if key[0] in subscribed or key in pending:
            continue
        if rec.expire_timestamp_ms is not None:
            gone = c.now >= rec.expire_timestamp_ms
        else:
            gone = c.now - base(rec) >= retention
        if gone:
            c.offsets.delete(c, gid, key[0], key[1])
            expired += 1
    if expired:
        c.event("offsets_expired", gid, remaining=len(c.offsets.get(gid)))
    return expired


def _is_empty(g) -> bool:
    """Group.isEmpty: ClassicGroup in state Empty; ConsumerGroup without members (state Empty)."""
    return g.state == (G_EMPTY if isinstance(g, ConsumerGroup) else EMPTY)


def _delete(c, gid: str, g) -> None:
    """GroupMetadataManager.maybeDeleteGroup -> createGroupTombstoneRecordsAndCancelTimers."""
    if isinstance(g, ConsumerGroup):
        remove_empty_group(c, gid)
    else:
        del c.groups[gid]
        c.offsets.by_group.pop(gid, None)
        c.records.append(GroupTombstone(gid))
    c.event("group_deleted", gid, reason="empty group without offsets (retention cleanup)")
