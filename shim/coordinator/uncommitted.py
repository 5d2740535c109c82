"""Groups that exist in the coordinator's latest state but not yet in its committed state.

Kafka's group coordinator keeps its groups in timeline structures (TimelineHashMap over a
SnapshotRegistry). Write operations (OffsetCommit, OffsetDelete, DeleteGroups, JoinGroup, ...) run on
the latest state; reads (DescribeGroups, ListGroups, OffsetFetch, ConsumerGroupDescribe) on the
state as of the last committed offset of the group's __consumer_offsets partition
(CoordinatorRuntime.scheduleReadOperation).

A simple OffsetCommit (generation < 0) on a missing group creates the group
(OffsetMetadataManager.validateOffsetCommit -> GroupMetadataManager.getOrMaybeCreateClassicGroup).
When every partition is then refused (e.g. metadata too large) no record is written, and
CoordinatorRuntime.append handles the empty result as a read: no snapshot covers the new group. So
the group is found by later writes (OffsetDelete answers NONE, DeleteGroups deletes it) while reads
do not see it (DescribeGroups: Dead). It becomes visible to reads once a later write to the same
__consumer_offsets partition, for any group, is committed: the runtime snapshots the whole state at
each written offset (SnapshottableCoordinator.updateLastWrittenOffset / updateLastCommittedOffset).
kshim writes records synchronously, so "committed" is "some record was written".

The other way round: a JoinGroup with a member id meeting an empty consumer group removes it from the
latest state (GroupMetadataManager.classicGroupJoinToClassicGroup -> maybeDeleteEmptyConsumerGroup ->
removeGroup) and answers UNKNOWN_MEMBER_ID; Kafka drops the tombstones with the empty result. Writes no
longer find the group (OffsetCommit v<9: ILLEGAL_GENERATION; a ConsumerGroupHeartbeat starts a new
group); reads still see it until a record reaches its partition. kshim writes the tombstones (its
state is what its records say; a restart does not bring the group back as a broker reload does), and
they do not end the read view (`remove_consumer_group` settles them first)."""

from __future__ import annotations

from .assignors.javaorder import java_string_hash

OFFSETS_TOPIC = "__consumer_offsets"


def offsets_partition(group_id: str, partitions: int) -> int:
    """GroupCoordinatorService.partitionFor: Utils.abs(groupId.hashCode()) % partitions."""
    h = java_string_hash(group_id)
    if h >= 1 << 31:
        h -= 1 << 32
    return (0 if h == -(1 << 31) else abs(h)) % partitions


class Uncommitted:
    """The groups created by a write that wrote no record, until a record reaches their partition."""

    def __init__(self) -> None:
        self.groups: dict[str, object] = {}
        self.removed: dict[str, object] = {}               # consumer groups gone from the latest state only
        self._seen: tuple[list | None, int] = (None, 0)     # (records list, records already looked at)

    def add(self, c, g) -> None:
        self.settle(c)
        self.groups[g.group_id] = g

    def remove_consumer_group(self, c, g) -> None:
        self.settle(c)
        self.removed[g.group_id] = g

    def consumer_group(self, c, group_id: str | None):
        """The consumer group reads see under `group_id` (the committed state), or None."""
        g = c.consumer_groups.get(group_id)
        if g is not None:
            return g
        g = self.removed.get(group_id)
        return g if g is not None and group_id not in c.groups else None

    def hidden(self, c, group_id: str | None) -> bool:
        """True when reads must not see `group_id` (its group exists only in the latest state)."""
        g = self.groups.get(group_id)
        return g is not None and c.groups.get(group_id) is g

    def settle(self, c) -> None:
        """After each input: the records written since the last call commit the uncommitted groups of
        their __consumer_offsets partitions (only the same group when the partition count is unknown)."""
        records = c.records
        seen_list, seen = self._seen
        new = records[seen:] if records is seen_list else records
        self._seen = (records, len(records))
        if not (self.groups or self.removed) or not new:
            return
        n = c.topics.partitions(OFFSETS_TOPIC)
        key = (lambda gid: offsets_partition(gid, n)) if n else (lambda gid: gid)
        written = {key(r.group_id) for r in new if getattr(r, "group_id", None) is not None}
        for gid, g in list(self.groups.items()):
            if c.groups.get(gid) is not g or key(gid) in written:
                del self.groups[gid]
        for gid in [gid for gid in self.removed if key(gid) in written]:
            del self.removed[gid]
