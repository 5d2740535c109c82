"""Kafka 4.3.1's server-side `range` assignor (org.apache.kafka.coordinator.group.assignor.RangeAssignor).

Members are ordered static first (by instance id), then dynamic (by member id), both with Java's
String order. For each topic, the subscribers in that order take contiguous ranges: P // S
partitions each, one more for the first P % S subscribers. In a homogeneous group with equal
partition counts this is co-partitioned (the same partition numbers from every topic). The current
assignment is not read: the only stickiness is the instance-id order of static members. Kafka's
result does not depend on any map order (ties between equal instance ids, which the coordinator
never has, keep the sorted member-id order).
"""

from __future__ import annotations

import uuid
from typing import Mapping

from shim.coordinator.assignors.spec import AssignorError, MemberSubscription, TopicMetadata
from shim.coordinator.assignors.javaorder import string_keys

Result = dict[str, dict[uuid.UUID, frozenset[int]]]


def _member_order(members: Mapping[str, MemberSubscription]) -> list[str]:
    ids = sorted(members)
    key = string_keys([*ids, *(m.instance_id for m in members.values() if m.instance_id is not None)])
    static = [m for m in ids if members[m].instance_id is not None]
    dynamic = [m for m in ids if members[m].instance_id is None]
    static.sort(key=lambda m: key(members[m].instance_id))
    dynamic.sort(key=key)
    return static + dynamic


def assign(members: Mapping[str, MemberSubscription], topics: Mapping[uuid.UUID, TopicMetadata],
           homogeneous: bool, member_order: list[str] | None = None) -> Result:
    # member_order is not used: RangeAssignor sorts the members itself
    order = _member_order(members)
    result: Result = {m: {} for m in order}
    if homogeneous:
        subscribers = {tid: order for tid in members[order[0]].topic_ids}
    else:
        subscribers = {}
        for m in order:
            for tid in members[m].topic_ids:
                lst = subscribers.get(tid)
                if lst is None:
                    subscribers[tid] = [m]
                else:
                    lst.append(m)
    ranges: dict[tuple[int, int], frozenset[int]] = {}   # shared: frozensets are immutable
    for tid, subs in subscribers.items():
        meta = topics.get(tid)
        if meta is None:
            raise AssignorError("Member is subscribed to a non-existent topic")
        quota, extra = divmod(meta.partitions, len(subs))
        start = 0
        # the k-th subscriber takes `quota` partitions, one more if k < extra; past the partition
        # count (quota 0) the rest take nothing
        for k in range(len(subs) if quota else extra):
            end = start + quota + (1 if k < extra else 0)
            part = ranges.get((start, end))
            if part is None:
                part = ranges[(start, end)] = frozenset(range(start, end))
            result[subs[k]][tid] = part
            start = end
    return result
