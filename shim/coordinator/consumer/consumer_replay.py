"""Rebuilding consumer groups from their records (state-topic keys 5-8), as the broker does when it
loads a __consumer_offsets partition: last value per key wins, tombstones delete. A consumer-group
record replaces a classic group of the same id (a simple group created by offsets, an empty classic
group the consumer group replaced, or the classic group it was upgraded from by an online upgrade); classic-protocol
members come back with their protocols and session timeout. Every member gets a session timer from the load, and a member
pending revocation its rebalance timer, so members that do not come back are fenced (GroupMetadataManager.onLoaded schedules the session timeouts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import classic_rebalance
from ..state_records import (ConsumerCurrentRecord, ConsumerCurrentTombstone, ConsumerGroupRecord, ConsumerGroupTombstone,
                       ConsumerMemberRecord, ConsumerMemberTombstone, ConsumerTargetRecord, ConsumerTargetTombstone)
from ..releases import at_least
from .consumer_group import UNREVOKED, ClassicMeta, ConsumerGroup, ConsumerMember
from .fencing import arm_rebalance, arm_session
from .timer_keys import cancel_member_timers, rebalance_key
from .regex_resolution import InvalidRegex, resolve

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState


def replay_consumer(c: "CoordinatorState", rec) -> None:
    gid = rec.group_id
    g = c.consumer_groups.get(gid)
    if isinstance(rec, ConsumerGroupRecord):
        if g is None:
            old = c.groups.pop(gid, None)
            if old is not None:
                for mid in old.members:
                    classic_rebalance.cancel_heartbeat(c, old, mid)
            g = c.consumer_groups[gid] = ConsumerGroup(gid)
        g.group_epoch, g.assignment_epoch = rec.group_epoch, rec.assignment_epoch
        g.assignment_timestamp_ms = rec.assignment_timestamp_ms
        return
    if isinstance(rec, ConsumerGroupTombstone):
        if g is not None:
            for mid in g.members:
                cancel_member_timers(c, gid, mid)
            del c.consumer_groups[gid]
        return
    if g is None:
        return                                 # member records of a group deleted later in the log
    m = g.members.get(rec.member_id)
    if isinstance(rec, ConsumerMemberRecord):
        classic = None if rec.classic is None else ClassicMeta(rec.classic[0], tuple(rec.classic[1]))
        if m is None:
            m = ConsumerMember(rec.member_id, classic=classic)
            g.add(m)
            arm_session(c, g, m)
        m.classic = classic
        if rec.instance_id is not None:
            g.set_instance_id(m, rec.instance_id, drop_old=at_least(c.cfg.release, "4.4"))
        m.rack_id, m.client_id, m.client_host = rec.rack_id, rec.client_id, rec.client_host
        m.rebalance_timeout_ms = rec.rebalance_timeout_ms
        g.set_subscription(m, tuple(rec.subscribed_topic_names), rec.subscribed_topic_regex, rec.server_assignor)
        m.recorded_assignor = rec.server_assignor
        if rec.subscribed_topic_regex and rec.subscribed_topic_regex not in g.regex_topics:
            try:
                g.regex_topics[rec.subscribed_topic_regex] = resolve(rec.subscribed_topic_regex, c.topics)
            except InvalidRegex:
                g.regex_topics[rec.subscribed_topic_regex] = frozenset()
        return
    if isinstance(rec, ConsumerMemberTombstone):
        if m is not None:
            g.remove(m.member_id)
            cancel_member_timers(c, gid, m.member_id)
        return
    if m is None:
        return
    if isinstance(rec, ConsumerTargetRecord):
        m.target = {t: frozenset(ps) for t, ps in rec.assignment}
    elif isinstance(rec, ConsumerTargetTombstone):
        m.target = {}
    elif isinstance(rec, ConsumerCurrentRecord):
        g.set_current(m, rec.member_epoch, rec.previous_member_epoch, rec.state,
                      {t: dict(ps) for t, ps in rec.assigned}, {t: dict(ps) for t, ps in rec.pending_revocation})
        if m.state == UNREVOKED and m.classic is None:     # classic members have join/sync timers only
            arm_rebalance(c, g, m)
        else:
            c.timers.cancel(rebalance_key(gid, m.member_id))
    elif isinstance(rec, ConsumerCurrentTombstone):
        g.set_current(m, 0, -1, m.state, {}, {})
