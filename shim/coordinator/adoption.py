"""Adoption: a group the broker's coordinator held (committed offsets, no live members) becomes
kshim's with its committed offsets, so a consumer moved from the broker to kshim resumes where it
stopped. The proxy reads the offsets from the broker (OffsetFetch: offset, leader epoch, metadata)
and feeds them here before the group's first request; the group is kept as Kafka keeps a group that
only has committed offsets: an Empty classic group (OffsetMetadataManager.commitOffset creates one
for a commit without generation), its records written with the offsets, so the adoption is durable
before any answer about the group (the runtime holds later answers until the append is done).
A group kshim already holds is never overwritten.

The other way (`hand_over`): a streams member joining an Empty classic group makes it a streams group
on the broker (GroupMetadataManager.getOrCreateStreamsGroup: maybeDeleteEmptyClassicGroup, the
offsets kept, pending transactional ones too); the proxy writes the group's offsets to the broker
(its pending ones as the producer's TxnOffsetCommit), then kshim forgets the group with the records
of a deletion, then the join goes to the broker."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from . import classic_rebalance
from .admin import remove_empty_classic_group
from .classic_group import EMPTY, ClassicGroup
from .state_records import OffsetRecord

if TYPE_CHECKING:
    from .coordinator_state import CoordinatorState


class AdoptedOffset(NamedTuple):
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    topic_id: object = None


def adopt_offsets(c: "CoordinatorState", group_id: str, offsets: list[AdoptedOffset]) -> bool:
    """Take the broker's committed offsets of `group_id`; False when kshim already holds the group."""
    if group_id in c.groups or group_id in c.consumer_groups or c.offsets.get(group_id) or not offsets:
        return False
    g = ClassicGroup(group_id, state_timestamp_ms=c.now)
    c.groups[group_id] = g
    classic_rebalance.write_group(c, g)
    for o in offsets:
        c.offsets.put(c, OffsetRecord(group_id, o.topic, o.partition, o.offset, o.leader_epoch, o.metadata or "",
                                      c.now, None, o.topic_id))
    c.event("group_adopted", group_id, offsets=len(offsets))
    return True


def can_hand_over(c: "CoordinatorState", group_id: str) -> bool:
    """An Empty classic group (not a consumer group) whose pending transactional offsets, if any, can be
    handed over too (their transactional id is known: records written before kshim kept it lack it)."""
    g = c.groups.get(group_id)
    return (g is not None and g.state == EMPTY and group_id not in c.consumer_groups
            and all(r.transactional_id for r in c.txns.of_group(group_id)))


def hand_over(c: "CoordinatorState", group_id: str) -> bool:
    """Forget an Empty classic group the broker now holds (records as DeleteGroups writes them)."""
    if not can_hand_over(c, group_id):
        return False
    remove_empty_classic_group(c, group_id)
    c.event("group_handed_over", group_id)
    return True
