"""Server-side assignors of KIP-848 consumer groups (KIP-848; Kafka's UniformAssignor and RangeAssignor): `uniform` and `range`.

Pure functions of the group spec: no clock, no I/O, no randomness. `assign(name, members, topics)`
returns the new target assignment of every member (empty dicts included), computed the way
Kafka 4.3.1's `UniformAssignor` / `RangeAssignor` compute it for the same input and the same member
order (see uniform.py and range.py for what Kafka's result depends on and how it is ordered here).

The caller (the consumer-group state machine) resolves subscriptions to topic ids first and passes
each member's current *target* assignment as the stickiness input. Kafka picks the homogeneous or the
heterogeneous algorithm from the group's subscription *type*, which it derives from the subscribed
names and regexes, not from the resolved ids (`ConsumerGroup.subscriptionType`); `is_homogeneous`
computes it and `assign(..., homogeneous=...)` takes it. Without it, a group is homogeneous when every
member's resolved topic ids are equal (the two differ only when, e.g., one member names a topic
that does not exist and another does not).

Input contract (what the coordinator guarantees): current assignments are disjoint across members
and within each topic's partition count; a subscribed topic id missing from `topics` raises
`AssignorError` (Kafka's PartitionAssignorException, answered UNKNOWN_SERVER_ERROR by the handler).
"""

from __future__ import annotations

import uuid
from typing import Callable, Iterable, Mapping

from . import range as range_assignor, uniform
from .spec import Assignment, AssignorError, MemberSubscription, TopicMetadata

__all__ = ["ASSIGNORS", "AssignorError", "MemberSubscription", "TopicMetadata", "assign",
           "is_homogeneous"]

def is_homogeneous(subscriptions: Iterable[tuple[Iterable[str], str | None]]) -> bool:
    """Kafka's `ConsumerGroup.subscriptionType` from each member's (subscribed names, regex):
    homogeneous when no member uses a regex and all name sets are equal, or when every member
    uses the same regex and none subscribes by name. An empty regex counts as none."""
    names: set[frozenset[str]] = set()
    regexes: set[str | None] = set()
    count = 0
    for topic_names, regex in subscriptions:
        count += 1
        names.add(frozenset(topic_names))
        regexes.add(regex or None)
    if count == 0:
        return True
    if regexes == {None}:
        return len(names) == 1
    return len(regexes) == 1 and names == {frozenset()}


ASSIGNORS: dict[str, Callable[..., Assignment]] = {"uniform": uniform.assign, "range": range_assignor.assign}


def assign(assignor: str, members: Mapping[str, MemberSubscription],
           topics: Mapping[uuid.UUID, TopicMetadata], *,
           homogeneous: bool | None = None, member_order: list[str] | None = None) -> Assignment:
    """member id -> new target assignment (topic id -> partitions), every member present.
    `member_order`: the order of `groupSpec.memberIds()` the broker's assignor sees (default: sorted)."""
    try:
        fn = ASSIGNORS[assignor]
    except KeyError:
        raise AssignorError(f"unsupported assignor {assignor!r}; known: {sorted(ASSIGNORS)}") from None
    if not members:
        return {}
    if homogeneous is None:
        first = None
        homogeneous = True
        for m in members.values():
            if first is None:
                first = m.topic_ids
            elif m.topic_ids != first:
                homogeneous = False
                break
    return fn(members, topics, homogeneous, member_order)
