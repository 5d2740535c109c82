"""Kafka 4.3.1's server-side `uniform` assignor (org.apache.kafka.coordinator.group.assignor.UniformAssignor):
balance first (member sizes differ by at most one where subscriptions allow), then stickiness to the
current target assignment. Not rack-aware (4.3's builders never read racks).

Homogeneous groups (UniformHomogeneousAssignmentBuilder): quota = P // M and the first members that
can keep an extra partition do (P % M of them); each member keeps its current partitions up to its
quota, the excess is released, and the released plus never-assigned partitions fill the members
below quota in member order.

Heterogeneous groups (UniformHeterogeneousAssignmentBuilder): partitions of topics a member no
longer subscribes to are dropped; unassigned partitions go, topic by topic (most partitions per
subscriber first), to the least-loaded subscriber; then partitions move from the most to the least
loaded subscribers of each topic until every topic is balanced (at most 16 rounds).

What Kafka's result depends on, and the order used here:
- member order (`groupSpec.memberIds()`, the key set of the HashMap TargetAssignmentBuilder.build
  fills): the caller passes it (consumer/target.py: `javaorder.java_hashmap_order` of the member
  ids), else sorted member-id order;
- homogeneous: the order of the subscribed topics (a `HashSet<Uuid>` inside the builder) decides
  which unfilled member gets which released partition; it is reproduced by `javaorder.hash_set_order`;
- homogeneous: the iteration order of a member's current assignment decides which partitions an
  over-quota member keeps; here topics in Uuid order, partitions ascending (on the broker: the
  HashMap/HashSet order of the stored assignment).
The heterogeneous builder sorts with explicit tie-breaks, so it depends only on member order.
"""

from __future__ import annotations

import uuid
from typing import Mapping

from shim.coordinator.assignors.spec import AssignorError, MemberSubscription, TopicMetadata
from shim.coordinator.assignors.javaorder import hash_set_order, uuid_key

MAX_ITERATION_COUNT = 16

Result = dict[str, dict[uuid.UUID, frozenset[int]]]


def assign(members: Mapping[str, MemberSubscription], topics: Mapping[uuid.UUID, TopicMetadata],
           homogeneous: bool, member_order: list[str] | None = None) -> Result:
    order = sorted(members) if member_order is None else list(member_order)
    if homogeneous:
        return _homogeneous(order, members, topics)
    return _Heterogeneous(order, members, topics).build()


def _partition_count(topics: Mapping[uuid.UUID, TopicMetadata], tid: uuid.UUID) -> int:
    meta = topics.get(tid)
    if meta is None:
        raise AssignorError(f"Members are subscribed to topic {tid} which doesn't exist in the topic metadata.")
    return meta.partitions


def _sorted_topics(assignment: Mapping[uuid.UUID, frozenset[int]]):
    if len(assignment) < 2:
        return assignment.items()
    return [(t, assignment[t]) for t in sorted(assignment, key=uuid_key)]


# --- homogeneous -------------------------------------------------------------------------------

def _homogeneous(order: list[str], members: Mapping[str, MemberSubscription],
                 topics: Mapping[uuid.UUID, TopicMetadata]) -> Result:
    subscribed = members[order[0]].topic_ids
    if not subscribed:
        return {m: {} for m in order}

    # partitions held by any member's current target (Kafka: groupSpec.isPartitionAssigned)
    held: dict[uuid.UUID, set[int]] = {}
    for m in order:
        for tid, parts in members[m].assignment.items():
            if parts:
                s = held.get(tid)
                if s is None:
                    held[tid] = set(parts)
                else:
                    s.update(parts)

    unassigned: list[tuple[uuid.UUID, int]] = []
    total = 0
    for tid in hash_set_order(subscribed):
        n = _partition_count(topics, tid)
        taken = held.get(tid)
        if taken:
            unassigned.extend([(tid, p) for p in range(n) if p not in taken])
        else:
            unassigned.extend([(tid, p) for p in range(n)])
        total += n

    count = len(order)
    min_quota, extra_left = divmod(total, count)
    target: Result = {}
    unfilled: list[tuple[str, int]] = []
    index = -1
    for m in order:
        index += 1
        old = members[m].assignment
        new: dict[uuid.UUID, frozenset[int]] | None = None
        quota = min_quota
        has_extra = False
        if extra_left > 0:
            quota += 1
            has_extra = True
        for tid, parts in _sorted_topics(old):
            if tid in subscribed:
                if len(parts) <= quota:
                    quota -= len(parts)
                else:
                    keep = []
                    for p in sorted(parts):
                        if quota > 0:
                            quota -= 1
                            keep.append(p)
                        else:
                            unassigned.append((tid, p))
                    if new is None:
                        new = dict(old)
                    if keep:
                        new[tid] = frozenset(keep)
                    else:
                        del new[tid]
            else:
                if new is None:
                    new = dict(old)
                del new[tid]
        if quota > 0 and has_extra and count - index > extra_left:
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled.append((m, quota))
        if has_extra:
            extra_left -= 1
        target[m] = new if new is not None else dict(old)

    pos = 0
    end = len(unassigned)
    for m, quota in unfilled:
        if pos >= end:
            break
        chunk = unassigned[pos:pos + quota]
        pos += len(chunk)
        assignment = target[m]
        grouped: dict[uuid.UUID, list[int]] = {}
        for tid, p in chunk:
            lst = grouped.get(tid)
            if lst is None:
                grouped[tid] = [p]
            else:
                lst.append(p)
        for tid, ps in grouped.items():
            cur = assignment.get(tid)
            assignment[tid] = frozenset(ps) if cur is None else cur.union(ps)
    if pos < end:
        raise AssignorError("Partitions were left unassigned")
    return target


# --- heterogeneous -----------------------------------------------------------------------------

class _Heterogeneous:
    def __init__(self, order: list[str], members: Mapping[str, MemberSubscription],
                 topics: Mapping[uuid.UUID, TopicMetadata]):
        self.order = order
        self.members = members
        self.sizes = [0] * len(order)
        self.subscribers: dict[uuid.UUID, list[int]] = {}
        self.num_partitions: dict[uuid.UUID, int] = {}
        for i, m in enumerate(order):
            for tid in members[m].topic_ids:
                if tid not in self.num_partitions:
                    self.num_partitions[tid] = _partition_count(topics, tid)
                    self.subscribers[tid] = [i]
                else:
                    self.subscribers[tid].append(i)
        self.owners = {tid: [-1] * n for tid, n in self.num_partitions.items()}

    def _topic_order(self, tids) -> list[uuid.UUID]:
        # partitions per subscriber descending, then subscriber count ascending, then Uuid ascending
        num, subs = self.num_partitions, self.subscribers
        return sorted(tids, key=lambda t: (-(num[t] / len(subs[t])), len(subs[t]), uuid_key(t)))

    def build(self) -> Result:
        if not self.num_partitions:
            return {m: {} for m in self.order}
        sizes, owners, members = self.sizes, self.owners, self.members
        for i, m in enumerate(self.order):
            sub = members[m].topic_ids
            for tid, parts in members[m].assignment.items():
                if tid in sub:
                    row = owners[tid]
                    n = len(row)
                    for p in parts:
                        if p < n:
                            row[p] = i
                            sizes[i] += 1
        unassigned = {}
        for tid, row in owners.items():
            free = [p for p, o in enumerate(row) if o == -1]
            if free:
                unassigned[tid] = free
        balancer = _Balancer(sizes)
        for tid in self._topic_order(unassigned):
            balancer.initialize(self.subscribers[tid])
            row = owners[tid]
            for p in unassigned[tid]:
                i = balancer.next_least_loaded()
                row[p] = i
                sizes[i] += 1
        movable = [t for t in self.num_partitions if len(self.subscribers[t]) >= 2]
        if movable:
            self._balance_topics(self._topic_order(movable), balancer)
        result: Result = {m: {} for m in self.order}
        order = self.order
        for tid, row in owners.items():
            per: dict[int, list[int]] = {}
            for p, o in enumerate(row):
                if o >= 0:
                    lst = per.get(o)
                    if lst is None:
                        per[o] = [p]
                    else:
                        lst.append(p)
            for o, ps in per.items():
                result[order[o]][tid] = frozenset(ps)
        return result

    def _balance_topics(self, sorted_topics: list[uuid.UUID], balancer: "_Balancer") -> None:
        last = -1
        for _ in range(MAX_ITERATION_COUNT):
            for index, tid in enumerate(sorted_topics):
                if index == last:
                    return
                moved = self._balance_topic(tid, balancer)
                if moved > 0 or last == -1:
                    last = index

    def _balance_topic(self, tid: uuid.UUID, balancer: "_Balancer") -> int:
        subs = self.subscribers[tid]
        sizes = self.sizes
        # cheap pre-check of Kafka's `initialize(...) <= 1` (the sort is only needed past it)
        lo = hi = sizes[subs[0]]
        for i in subs:
            s = sizes[i]
            if s < lo:
                lo = s
            elif s > hi:
                hi = s
        if hi - lo <= 1:
            return 0
        balancer.initialize(subs)
        row = self.owners[tid]
        partitions = sorted(range(len(row)), key=row.__getitem__)  # stable: by owner, then partition
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            o = row[p]
            if o not in start:
                start[o] = i
            end[o] = i + 1
        moved = 0
        while not balancer.is_balanced():
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            end[most] -= 1
            p = partitions[end[most]]
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            old = row[p]
            if old != -1:
                sizes[old] -= 1
            row[p] = least
            sizes[least] += 1
            moved += 1
        return moved


class _Balancer:
    """Kafka's MemberAssignmentBalancer: a least-loaded range growing right and a most-loaded range
    growing left over the subscribers sorted by (size, member index)."""

    def __init__(self, sizes: list[int]):
        self.sizes = sizes
        self.sorted: list[int] = []

    def initialize(self, subs: list[int]) -> int:
        sizes = self.sizes
        # subs are in ascending member index, so a stable sort by size is Kafka's memberComparator
        self.sorted = s = sorted(subs, key=sizes.__getitem__)
        n = len(s)
        self.least_end = 0
        self.least_count = sizes[s[0]] - 1
        self.next_least = 0
        self.most_start = n
        self.most_end = n
        self.most_count = sizes[s[-1]] + 1
        self.next_most = n - 1
        return sizes[s[-1]] - sizes[s[0]]

    def next_least_loaded(self) -> int:
        s, sizes = self.sorted, self.sizes
        if self.next_least >= self.least_end:
            self.least_count += 1
            n = len(s)
            end = self.least_end
            c = self.least_count
            while end < n and sizes[s[end]] == c:
                end += 1
            self.least_end = end
            self.next_least = 0
        i = s[self.next_least]
        self.next_least += 1
        return i

    def next_most_loaded(self) -> int:
        s, sizes = self.sorted, self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[s[self.most_start - 1]]
            else:
                self.most_count -= 1
            start = self.most_start
            c = self.most_count
            while start > 0 and sizes[s[start - 1]] == c:
                start -= 1
            self.most_start = start
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        i = s[self.next_most]
        self.next_most -= 1
        return i

    def exclude_most_loaded(self) -> None:
        s = self.sorted
        k = self.next_most + 1
        i = s[k]
        s[k] = s[self.most_end - 1]
        s[self.most_end - 1] = i
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1
