"""Removing consumer-group members and their timers (GroupMetadataManager's
scheduleConsumerGroupSessionTimeout / RebalanceTimeout / JoinTimeout / SyncTimeout and
consumerGroupFenceMember(s)).

Fencing members (leave with epoch -1, LeaveGroup, session timeout, revocation not acknowledged within
the rebalance timeout, a classic member missing its join or sync deadline) tombstones their current
assignment, target assignment and subscription, frees their partitions, drops regexes nobody uses any
more, cancels their timers and bumps the group epoch once - unless only classic-protocol members
would remain and the migration policy allows a downgrade: then the group becomes a classic group
(downgrade.py). Classic members' session timers use their JoinGroup session timeout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .downgrade import downgrade, downgrade_allowed
from .consumer_group import UNREVOKED, ConsumerGroup, ConsumerMember
from ..releases import at_least
from .persist import write_group, write_group_removed, write_member_removed
from .target import bump_epoch
from .timer_keys import cancel_member_timers, rebalance_key, session_key

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState


def delete_group(c: "CoordinatorState", gid: str) -> None:
    """Drop a consumer group and its records (its offsets are the caller's business)."""
    g = c.consumer_groups.pop(gid)
    for mid in g.members:
        cancel_member_timers(c, gid, mid)
    write_group_removed(c, g)


def fence(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember, reason: str) -> None:
    fence_members(c, g, [m], reason)


def fence_members(c: "CoordinatorState", g: ConsumerGroup, members: list, reason: str) -> None:
    if not members:
        return
    leaving = {m.member_id for m in members}
    if downgrade_allowed(c, g, leaving):
        return downgrade(c, g, leaving, f"{reason}; only classic members remain")
    everyone = len(leaving) == len(g.members)
    for m in members:
        g.remove(m.member_id)
        write_member_removed(c, g, m.member_id)
        cancel_member_timers(c, g.group_id, m.member_id)
        c.event("member_removed", g.group_id, member=m.member_id, instance=m.instance_id, reason=reason)
    bump_epoch(c, g, f"{len(members)} member(s) removed: {reason}" if len(members) > 1
               else f"member {members[0].member_id} removed: {reason}")
    if everyone and at_least(c.cfg.release, "4.4"):
        # consumerGroupFenceMembers (Kafka 4.4, KAFKA-20442): with no member left the target assignment
        # is the new epoch's (assignment epoch = group epoch, timestamp 0)
        g.assignment_epoch, g.assignment_timestamp_ms = g.group_epoch, 0
        write_group(c, g)


def session_timeout_ms(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember) -> int:
    """A classic member's own timeout, else the group's (GroupMetadataManager.scheduleConsumerGroupSessionTimeout
    with consumerGroupSessionTimeoutMs(groupId): the group config if it has one)."""
    return (m.classic.session_timeout_ms if m.classic is not None
            else c.group_configs.consumer_session_timeout_ms(g.group_id, c.cfg))


def arm_session(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember) -> None:
    """Push the member's session deadline; one timer per member, re-armed lazily when it fires early."""
    m.session_deadline = c.now + session_timeout_ms(c, g, m)
    if not m.session_armed:
        _schedule_session(c, g.group_id, m)
        return
    key = session_key(g.group_id, m.member_id)
    due = c.timers.deadline(key)
    if due is not None and due > m.session_deadline:      # a shorter timeout than the armed one
        _schedule_session(c, g.group_id, m)


def arm_classic_timer(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember, key, timeout_ms: int,
                      reason: str, if_absent: bool = False) -> None:
    """A classic member's join or sync deadline (scheduleConsumerGroupJoinTimeout / SyncTimeout): when it passes the member is fenced."""
    gid, mid = g.group_id, m.member_id
    k = key(gid, mid)
    if if_absent and c.timers.active(k):
        return

    def expired():
        grp = c.consumer_groups.get(gid)
        mm = grp.members.get(mid) if grp is not None else None
        if mm is not None:
            c.event("classic_member_timeout", gid, member=mid, reason=reason)
            fence(c, grp, mm, reason)
    c.timers.schedule(k, c.now + max(timeout_ms, 0), expired)


def _schedule_session(c: "CoordinatorState", gid: str, m: ConsumerMember) -> None:
    mid = m.member_id

    def expired():
        grp = c.consumer_groups.get(gid)
        mm = grp.members.get(mid) if grp is not None else None
        if mm is not m:
            return
        m.session_armed = False
        if m.session_deadline > c.now:
            _schedule_session(c, gid, m)
            return
        c.event("session_timeout", gid, member=mid, instance=m.instance_id)
        fence(c, grp, m, "session timeout expired")
    m.session_armed = True
    c.timers.schedule(session_key(gid, mid), m.session_deadline, expired)


def arm_rebalance(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember) -> None:
    gid, mid, epoch = g.group_id, m.member_id, m.member_epoch

    def expired():
        grp = c.consumer_groups.get(gid)
        mm = grp.members.get(mid) if grp is not None else None
        if mm is not None and mm.member_epoch == epoch and mm.state == UNREVOKED:
            c.event("rebalance_timeout", gid, member=mid)
            fence(c, grp, mm, "revocation not acknowledged within the rebalance timeout")
    c.timers.schedule(rebalance_key(gid, mid), c.now + max(m.rebalance_timeout_ms, 0), expired)


def replace_static(c: "CoordinatorState", g: ConsumerGroup, old: ConsumerMember, new_id: str) -> ConsumerMember:
    """A static member that left with epoch -2 is replaced by a new member id, which takes its
    subscription, assignment (epoch 0, previous 0) and target; the old member's records go, no bump."""
    m = static_successor(old, new_id)
    retire_static(c, g, old, new_id)
    return m


def static_successor(old: ConsumerMember, new_id: str) -> ConsumerMember:
    """The member that takes over `old`'s instance id (GroupMetadataManager
    .getOrMaybeSubscribeStaticConsumerGroupMember copies it with the new id); the group is not touched,
    so a request refused later (e.g. for its regex) leaves the old member in place."""
    m = ConsumerMember(new_id, instance_id=old.instance_id, rack_id=old.rack_id, client_id=old.client_id,
                       client_host=old.client_host, rebalance_timeout_ms=old.rebalance_timeout_ms,
                       server_assignor=old.server_assignor, recorded_assignor=old.server_assignor,
                       subscribed_topic_names=old.subscribed_topic_names,
                       subscribed_topic_regex=old.subscribed_topic_regex, member_epoch=0, previous_member_epoch=0,
                       state=old.state, assigned={t: dict(ps) for t, ps in old.assigned.items()},
                       pending_revocation=dict(old.pending_revocation), target=dict(old.target))
    m.classic = old.classic
    return m


def retire_static(c: "CoordinatorState", g: ConsumerGroup, old: ConsumerMember, new_id: str) -> None:
    """GroupMetadataManager.replaceMember: the replaced static member's records go, no epoch bump.
    Its regex keeps its resolution: the successor (added next) copied it, and only a change of the
    successor's own subscription drops it (maybeUpdateRegularExpressions)."""
    g.remove(old.member_id, keep_regexes=True)
    write_member_removed(c, g, old.member_id)
    cancel_member_timers(c, g.group_id, old.member_id)
    c.event("static_member_replaced", g.group_id, instance=old.instance_id, old=old.member_id, new=new_id)
