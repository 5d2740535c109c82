"""Removing consumer-group members and their timers (spec §D.5, §D.7).

Fencing a member (leave with epoch -1, session timeout, revocation not acknowledged within its
rebalance timeout) tombstones its current assignment, target assignment and subscription, frees its
partitions, drops regexes nobody uses any more, cancels its timers and bumps the group epoch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .group import UNREVOKED, ConsumerGroup, ConsumerMember
from .persist import write_member_removed
from .target import bump_epoch

if TYPE_CHECKING:
    from ..core import GroupCoordinator


def session_key(gid: str, mid: str) -> tuple:
    return ("cg-session", gid, mid)


def rebalance_key(gid: str, mid: str) -> tuple:
    return ("cg-rebalance", gid, mid)


def fence(c: "GroupCoordinator", g: ConsumerGroup, m: ConsumerMember, reason: str) -> None:
    g.remove(m.member_id)
    write_member_removed(c, g, m.member_id)
    c.timers.cancel(session_key(g.group_id, m.member_id))
    c.timers.cancel(rebalance_key(g.group_id, m.member_id))
    c.event("member_removed", g.group_id, member=m.member_id, instance=m.instance_id, reason=reason)
    bump_epoch(c, g, f"member {m.member_id} removed: {reason}")


def arm_session(c: "GroupCoordinator", g: ConsumerGroup, m: ConsumerMember) -> None:
    """Push the member's session deadline; one timer per member, re-armed lazily when it fires early."""
    m.session_deadline = c.now + c.cfg.consumer_session_timeout_ms
    if not m.session_armed:
        _schedule_session(c, g.group_id, m)


def _schedule_session(c: "GroupCoordinator", gid: str, m: ConsumerMember) -> None:
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


def arm_rebalance(c: "GroupCoordinator", g: ConsumerGroup, m: ConsumerMember) -> None:
    gid, mid, epoch = g.group_id, m.member_id, m.member_epoch

    def expired():
        grp = c.consumer_groups.get(gid)
        mm = grp.members.get(mid) if grp is not None else None
        if mm is not None and mm.member_epoch == epoch and mm.state == UNREVOKED:
            c.event("rebalance_timeout", gid, member=mid)
            fence(c, grp, mm, "revocation not acknowledged within the rebalance timeout")
    c.timers.schedule(rebalance_key(gid, mid), c.now + max(m.rebalance_timeout_ms, 0), expired)


def replace_static(c: "GroupCoordinator", g: ConsumerGroup, old: ConsumerMember, new_id: str) -> ConsumerMember:
    """§D.3 5: a static member that left with epoch -2 is replaced by a new member id, which takes its
    subscription, assignment (epoch 0, previous 0) and target; the old member's records go, no bump."""
    m = ConsumerMember(new_id, instance_id=old.instance_id, rack_id=old.rack_id, client_id=old.client_id,
                       client_host=old.client_host, rebalance_timeout_ms=old.rebalance_timeout_ms,
                       server_assignor=old.server_assignor, subscribed_topic_names=old.subscribed_topic_names,
                       subscribed_topic_regex=old.subscribed_topic_regex, member_epoch=0, previous_member_epoch=0,
                       state=old.state, assigned={t: dict(ps) for t, ps in old.assigned.items()},
                       pending_revocation=dict(old.pending_revocation), target=dict(old.target))
    g.remove(old.member_id)
    write_member_removed(c, g, old.member_id)
    c.timers.cancel(session_key(g.group_id, old.member_id))
    c.timers.cancel(rebalance_key(g.group_id, old.member_id))
    c.event("static_member_replaced", g.group_id, instance=old.instance_id, old=old.member_id, new=new_id)
    return m
