"""Offset retention and the periodic group cleanup (Kafka's
GroupCoordinatorShard.cleanupGroupMetadata every offsets.retention.check.interval.ms).

An offset expires when `now >= expire_timestamp` if its commit carried one (OffsetCommit v2-4
RetentionTimeMs), else when `now - base >= offsets.retention.minutes`, where base is:
- a classic group with a protocol type that is Empty: the time it became Empty;
- a classic consumer-protocol group that is Stable: the commit time, for topics nobody subscribes to;
- a simple group (no protocol type: admin / manual-assignment commits): the commit time;
- any other state: nothing expires. Offsets of subscribed topics never expire, nor do partitions with
  a pending transactional offset.
A group left Empty with no offset (all expired, or none ever) is deleted. Consumer-protocol
(KIP-848) groups plug in through `expiration_base` (none: their offsets are kept).

The adapter calls `GroupCoordinator.expire_offsets(now_ms)` on its own schedule; nothing here reads
a clock.
"""

from __future__ import annotations

from typing import Callable

from .classic_group import DEAD, EMPTY, STABLE, ClassicGroup
from .state_records import GroupTombstone, OffsetRecord

Base = Callable[[OffsetRecord], int]


def expiration_base(g, now: int) -> tuple[Base | None, set[str]]:
    """(offset -> base timestamp | None when nothing of this group expires, subscribed topics)."""
    if not isinstance(g, ClassicGroup):
        hook = getattr(g, "offset_expiration", None)       # consumer groups may define their own
        return hook() if hook is not None else (None, set())
    if g.protocol_type:
        if g.state == EMPTY:
            return (lambda rec: g.state_timestamp_ms), set()
        if g.protocol_type == "consumer" and g.state == STABLE:
            subscribed = g.subscribed                      # the last generation's (ClassicGroup.subscribedTopics)
            if subscribed is not None:
                return (lambda rec: rec.commit_timestamp_ms), subscribed
        return None, set()
    return (lambda rec: rec.commit_timestamp_ms), set()


def expire_offsets(c) -> int:
    """Tombstone expired offsets, delete Empty groups left without offsets. Returns how many offsets went."""
    expired = 0
    retention = c.cfg.offsets_retention_ms
    for gid in sorted(c.groups):
        g = c.groups[gid]
        if getattr(g, "state", None) == DEAD:
            continue
        offsets = c.offsets.get(gid)
        if offsets:
            base, subscribed = expiration_base(g, c.now)
            if base is None:
                continue
            pending = c.txns.partitions(gid)
            before = expired
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
            if expired > before:
                c.event("offsets_expired", gid, remaining=len(c.offsets.get(gid)))
        if not c.offsets.get(gid) and not c.txns.partitions(gid) and _is_empty(g):
            del c.groups[gid]
            c.offsets.by_group.pop(gid, None)
            c.records.append(GroupTombstone(gid))
            c.event("group_deleted", gid, reason="empty group without offsets (retention cleanup)")
    return expired


def _is_empty(g) -> bool:
    if isinstance(g, ClassicGroup):
        return g.state == EMPTY
    check = getattr(g, "is_empty", None)
    return bool(check()) if callable(check) else False
