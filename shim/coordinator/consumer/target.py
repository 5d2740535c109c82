"""The target assignment of a consumer group (Kafka's TargetAssignmentBuilder).

Subscriptions are resolved against live metadata (`c.topics`): names that exist and the topics
matched by the group's resolved regexes. The metadata snapshot (topic id -> partition count of the
subscribed topics) stands for Kafka's metadata hash: a change bumps the group epoch. The target is
recomputed when the group epoch is ahead of the assignment epoch and the last computation is at least
`consumer_assignment_interval_ms` old (from Kafka 4.3; before, no interval); only members whose target
changed get a record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..assignors.javaorder import java_hashmap_order
from .consumer_group import ConsumerGroup, ConsumerMember
from .persist import write_current, write_group, write_member, write_target
from .reconcile import FencedEpoch, next_state
from ..assignors import AssignorError, MemberSubscription, TopicMetadata, assign, is_homogeneous
from ..assignors.topic_regex import resolve as resolve_regex
from ..releases import at_least
from .assignor_choice import for_target

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState


def resolve(pattern: str, names, allowed: Callable[[str], bool] | None = None) -> frozenset[str]:
    """The topic names among `names` a SubscribedTopicRegex matches in full (RE2J semantics:
    assignors/topic_regex.py), of those `allowed` when given (the member's TOPIC DESCRIBE right)."""
    matched = resolve_regex(pattern, list(names))
    return matched if allowed is None else frozenset(n for n in matched if allowed(n))


def subscribed_ids(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember) -> frozenset:
    """The topic ids a member's subscription resolves to (cached per subscription and catalog version)."""
    key = (m.subscribed_topic_names, m.subscribed_topic_regex)
    cache = g.resolved_cache
    if cache.get("version") != (c.topics.version, len(g.regex_topics)):
        cache.clear()
        cache["version"] = (c.topics.version, len(g.regex_topics))
    ids = cache.get(key)
    if ids is None:
        topics = c.topics
        ids = cache[key] = frozenset(info.topic_id for info in map(topics.get, g.member_topic_names(m))
                                     if info is not None)
    return ids


def metadata_snapshot(c: "CoordinatorState", g: ConsumerGroup) -> dict:
    topics = c.topics
    snap = {}
    for name in g.subscribed_names():
        info = topics.get(name)
        if info is not None:
            snap[info.topic_id] = (name, info.partitions)
    return snap


def bump_epoch(c: "CoordinatorState", g: ConsumerGroup, reason: str) -> None:
    g.group_epoch += 1
    g.metadata_snapshot = metadata_snapshot(c, g)
    write_group(c, g)
    c.event("group_epoch", g.group_id, epoch=g.group_epoch, reason=reason)


def member_updated(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember, *, changed: bool, new: bool,
                   replaced: bool, sub_changed: bool, who: str = "member") -> None:
    """Records and epoch after a member joined or changed (the rest of consumerGroupHeartbeat, also a classic JoinGroup):
    its subscription record, the target it inherited from a replaced static member, the epoch bump
    when its subscription changed, then the target assignment if due (the assignor chosen with this
    member's server assignor before and after, as `GroupMetadataManager.maybeUpdateTargetAssignment`)."""
    trigger = (m.recorded_assignor, m.server_assignor)
    if changed or new:
        write_member(c, g, m)
    if replaced:
        write_target(c, g, m)
    if sub_changed:
        bump_epoch(c, g, f"{who} {m.member_id} subscription changed")
    maybe_compute_target(c, g, trigger)


def maybe_refresh_metadata(c: "CoordinatorState", g: ConsumerGroup) -> bool:
    """Bump the group epoch when the subscribed topics' metadata changed since the last bump."""
    snap = metadata_snapshot(c, g)
    if g.metadata_snapshot is not None and snap == g.metadata_snapshot:
        return False
    if g.metadata_snapshot is None:            # first look after a replay: the baseline
        g.metadata_snapshot = snap
        return False
    bump_epoch(c, g, "metadata changed")
    return True


def refresh_group_metadata(c: "CoordinatorState", g: ConsumerGroup) -> None:
    """When the topic catalog moved since this group last looked: re-resolve its regexes, then bump
    the group epoch if the subscribed topics' metadata changed (consumerGroupHeartbeat: hasMetadataExpired, updateSubscriptionMetadata)."""
    version = c.topics.version
    if g.topics_version == version:
        return
    g.topics_version = version
    if g.regex_topics:
        for rx in list(g.regex_topics):
            g.regex_topics[rx] = resolve(rx, c.topics, g.regex_filters.get(rx))
        g.resolved_cache.clear()
    maybe_refresh_metadata(c, g)


def maybe_compute_target(c: "CoordinatorState", g: ConsumerGroup, trigger: tuple = (None, None)) -> None:
    if g.group_epoch <= g.assignment_epoch:
        return
    # GroupMetadataManager.maybeUpdateTargetAssignment: at most one every group.consumer.assignment
    # .interval.ms, from Kafka 4.3; before, every heartbeat that finds the group epoch ahead updates it
    interval = c.group_configs.consumer_assignment_interval_ms(g.group_id, c.cfg) if at_least(c.cfg.release, "4.3") else 0
    if g.assignment_timestamp_ms >= 0 and interval > 0 and c.now - g.assignment_timestamp_ms < interval:
        return
    compute_target(c, g, trigger)


def compute_target(c: "CoordinatorState", g: ConsumerGroup, trigger: tuple = (None, None)) -> None:
    """`trigger`: the server assignor of the member whose request computes it, before and after."""
    topics = {}
    for tid, (name, parts) in (g.metadata_snapshot or metadata_snapshot(c, g)).items():
        topics[tid] = TopicMetadata(tid, name, parts)
    subs = {}
    for mid, m in g.members.items():
        ids = frozenset(t for t in subscribed_ids(c, g, m) if t in topics)
        subs[mid] = MemberSubscription(mid, m.instance_id, m.rack_id, ids,
                                       {t: ps for t, ps in m.target.items() if t in ids})
    name = for_target(g.assignor_counts, *trigger, c.cfg.consumer_assignors[0])
    homogeneous = is_homogeneous((m.subscribed_topic_names, m.subscribed_topic_regex) for m in g.members.values())
    # TargetAssignmentBuilder.build puts the members into a java.util.HashMap whose key order the
    # assignor iterates (UniformAssignor: who keeps an extra partition, who fills first)
    try:
        result = assign(name, subs, topics, homogeneous=homogeneous, member_order=java_hashmap_order(list(subs)))
    except AssignorError:
        raise
    for mid, m in g.members.items():
        new = {t: frozenset(ps) for t, ps in result.get(mid, {}).items() if ps}
        if new != m.target:
            m.target = new
            write_target(c, g, m)
    g.assignment_epoch = g.group_epoch
    g.assignment_timestamp_ms = c.now
    write_group(c, g)
    c.event("target_assignment", g.group_id, epoch=g.assignment_epoch, assignor=name, members=len(g.members))


def reconcile_member(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember, reported, sub_changed: bool,
                     *, keep: bool, fenced_ok: bool = False, no_target: bool = False) -> None:
    """CurrentAssignmentBuilder for one member: its next assignment state toward its target (topics it no longer
    subscribes to count as empty), written when it changed; `keep` writes the current state even when
    nothing changed (a new or replacing member). A member in UNKNOWN state raises FencedEpoch unless
    `fenced_ok` (classic members: nothing changes). `no_target`: reconcile toward an empty target (the
    broker found none for the member's instance id)."""
    ids = subscribed_ids(c, g, m)
    before_4_2 = not at_least(c.cfg.release, "4.2")    # no subscription check in the builder before 4.2
    target = {} if no_target else m.target if before_4_2 else {t: ps for t, ps in m.target.items() if t in ids}
    try:
        nxt = next_state(m, g.assignment_epoch, target, reported, g.owners, ids, sub_changed, before_4_2)
    except FencedEpoch:
        if not fenced_ok:
            raise
        nxt = None
    if nxt is None and keep:
        nxt = (m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.pending_revocation)
    if nxt is not None:
        g.set_current(m, *nxt)
        write_current(c, g, m)
