"""The classic group's rebalance mechanics, the one owner of its state transitions
(GroupMetadataManager's prepareRebalance, completeClassicGroupJoin, the join/sync/heartbeat timers
and expirePendingSync, removeMemberAndUpdateClassicGroup), and the records that persist a classic
group. join.py, sync.py and leave.py decide per request; the transitions they cause happen here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcodec.generated.join_group import JoinGroupResponseMember

from . import errors as E
from .classic_group import COMPLETING, DEAD, EMPTY, PREPARING, STABLE, ClassicGroup, ClassicMember
from .state_records import GroupMetadataRecord, MemberRecord
from .responses import _for_version, join_error, join_response, sync_response
from .timers import cancel_classic_group_timers, classic_heartbeat_key, classic_join_key, classic_sync_key

if TYPE_CHECKING:
    from .coordinator_state import CoordinatorState


def poll_joins(c: "CoordinatorState") -> None:
    # groups whose join completion the broker retries with a 0 ms timer (complete_join): try once
    # after each event; complete_join puts a group back while it still cannot complete
    if c.join_polling:
        for gid in sorted(c.join_polling):
            c.join_polling.discard(gid)
            g = c.groups.get(gid)
            if g is not None and g.state == PREPARING:
                complete_join(c, g)


def write_empty_group(c: "CoordinatorState", g: ClassicGroup) -> None:
    """The record that persists a group's creation: type and generation, no members
    (GroupCoordinatorRecordHelpers.newGroupMetadataRecord of an empty group)."""
    c.records.append(GroupMetadataRecord(g.group_id, g.protocol_type, g.generation_id, None, None,
                                         g.state_timestamp_ms, ()))


def write_group(c: "CoordinatorState", g: ClassicGroup) -> None:
    c.records.append(GroupMetadataRecord(
        g.group_id, g.protocol_type, g.generation_id, g.protocol_name, g.leader_id, g.state_timestamp_ms,
        tuple(MemberRecord(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                           m.session_timeout_ms, m.metadata(g.protocol_name), m.assignment)
              for m in g.members.values())))


def transition(c: "CoordinatorState", g: ClassicGroup, to: str) -> None:
    before = g.state
    g.transition(to, c.now)
    c.event("state", g.group_id, frm=before, to=to, generation=g.generation_id)


def schedule_heartbeat(c: "CoordinatorState", g: ClassicGroup, member_id: str, timeout_ms: int) -> None:
    gid = g.group_id
    c.timers.schedule(classic_heartbeat_key(gid, member_id), c.now + timeout_ms,
                      lambda: _heartbeat_expired(c, gid, member_id))


def cancel_heartbeat(c: "CoordinatorState", g: ClassicGroup, member_id: str) -> None:
    c.timers.cancel(classic_heartbeat_key(g.group_id, member_id))


def _heartbeat_expired(c: "CoordinatorState", gid: str, member_id: str) -> None:
    g = c.groups.get(gid)
    if g is None or g.state == DEAD:
        return
    if member_id in g.pending_members:
        g.pending_members.discard(member_id)
        c.event("pending_member_expired", gid, member=member_id)
        if g.state == PREPARING:
            complete_join_if_all_joined(c, g)   # after a removal: even during the initial delay
        return
    m = g.members.get(member_id)
    if m is not None and not m.has_satisfied_heartbeat():
        c.event("session_timeout", gid, member=member_id, instance=m.instance_id)
        remove_member_and_update(c, g, m, "session timeout expired")


def answer_parked_of_removed(c: "CoordinatorState", g: ClassicGroup, m: ClassicMember, sync_error: int) -> None:
    """A member leaves the group: its parked JoinGroup gets UNKNOWN_MEMBER_ID, its parked SyncGroup
    `sync_error`, and its heartbeat timer goes."""
    if m.awaiting_join is not None:
        c.respond(m.awaiting_join.token, join_error(m.awaiting_join.version, E.UNKNOWN_MEMBER_ID, ""))
        g.set_awaiting_join(m, None)
    if m.awaiting_sync is not None:
        c.respond(m.awaiting_sync.token, sync_response(m.awaiting_sync.version, sync_error))
        m.awaiting_sync = None
    cancel_heartbeat(c, g, m.member_id)


def remove_member_and_update(c: "CoordinatorState", g: ClassicGroup, m: ClassicMember, reason: str) -> None:
    answer_parked_of_removed(c, g, m, E.UNKNOWN_MEMBER_ID)
    g.remove(m.member_id)
    c.event("member_removed", g.group_id, member=m.member_id, instance=m.instance_id, reason=reason)
    if g.state in (STABLE, COMPLETING):
        prepare_rebalance(c, g, f"removing member {m.member_id} on {reason}")
    elif g.state == PREPARING:
        complete_join_if_all_joined(c, g)   # after a removal: even during the initial delay


def prepare_rebalance(c: "CoordinatorState", g: ClassicGroup, reason: str) -> None:
    if g.state == COMPLETING:
        reset_and_propagate_error(c, g, E.REBALANCE_IN_PROGRESS)
    c.timers.cancel(classic_sync_key(g.group_id))
    initial = g.state == EMPTY
    transition(c, g, PREPARING)
    c.event("rebalance", g.group_id, reason=reason, generation=g.generation_id)
    if initial:
        delay = c.cfg.initial_rebalance_delay_ms
        remaining = max(g.rebalance_timeout_ms() - delay, 0)
        _schedule_initial(c, g, delay, remaining)
    else:
        maybe_complete_join_else_schedule(c, g)


def _schedule_initial(c: "CoordinatorState", g: ClassicGroup, delay: int, remaining: int) -> None:
    gid = g.group_id

    def fire():
        grp = c.groups.get(gid)
        if grp is None or grp.state != PREPARING:
            return
        if grp.new_member_added and remaining != 0:
            grp.new_member_added = False
            _schedule_initial(c, grp, min(delay, remaining), max(remaining - delay, 0))
        else:
            complete_join(c, grp)
    c.timers.schedule(classic_join_key(gid), c.now + delay, fire)


def maybe_complete_join_else_schedule(c: "CoordinatorState", g: ClassicGroup) -> None:
    if g.has_all_members_joined():
        complete_join(c, g)
    else:
        _schedule_join(c, g)


def _schedule_join(c: "CoordinatorState", g: ClassicGroup) -> None:
    gid = g.group_id

    def fire():
        grp = c.groups.get(gid)
        if grp is not None and grp.state == PREPARING:
            complete_join(c, grp)
    c.timers.schedule(classic_join_key(gid), c.now + g.rebalance_timeout_ms(), fire)


def maybe_complete_join(c: "CoordinatorState", g: ClassicGroup) -> None:
    """Complete the join early when everyone has joined, except during the initial delay."""
    if g.state == PREPARING and g.has_all_members_joined() and g.previous_state != EMPTY:
        c.timers.cancel(classic_join_key(g.group_id))
        complete_join(c, g)


def complete_join_if_all_joined(c: "CoordinatorState", g: ClassicGroup) -> None:
    """After a member is removed (session/pending expiry, leave), Kafka completes the join as soon
    as everyone left has joined - unlike a join, this applies during the initial delay too."""
    if g.state == PREPARING and g.has_all_members_joined():
        complete_join(c, g)


def complete_join(c: "CoordinatorState", g: ClassicGroup) -> None:
    c.join_polling.discard(g.group_id)
    if g.state == DEAD:
        return
    c.timers.cancel(classic_join_key(g.group_id))
    for m in list(g.members.values()):
        if m.awaiting_join is None and not m.is_static:
            cancel_heartbeat(c, g, m.member_id)
            g.remove(m.member_id)
            c.event("member_removed", g.group_id, member=m.member_id, reason="did not rejoin")
    if not g.maybe_elect_joined_leader() and g.members:
        # nobody rejoined but static members remain: GroupMetadataManager.completeClassicGroupJoin
        # waits another rebalance timeout. With a timeout of 0 (members joined with
        # rebalanceTimeoutMs <= 0) the broker's timer fires again at once, over and over, so the join
        # completes right after the first event that lets it (a member rejoins, or the last static
        # member goes): the group is polled after each request and timer instead (_poll_joins)
        if g.rebalance_timeout_ms() > 0:
            _schedule_join(c, g)
        else:
            c.join_polling.add(g.group_id)
        return
    g.generation_id += 1
    g.protocol_name = g.select_protocol() if g.members else None
    g.subscribed = g.compute_subscribed_topics()       # ClassicGroup.initNextGeneration
    if not g.members:
        # protocol_type is kept: Kafka keeps the type of an emptied group
        transition(c, g, EMPTY)
        write_group(c, g)
        c.event("generation", g.group_id, generation=g.generation_id, members=0)
        return
    transition(c, g, COMPLETING)
    c.event("generation", g.group_id, generation=g.generation_id, members=len(g.members),
               leader=g.leader_id, protocol=g.protocol_name)
    leader_members = [JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.instance_id,
                                              metadata=m.metadata(g.protocol_name))
                      for m in g.member_order()]
    for m in g.member_order():      # completeClassicGroupJoin: allMembers(), the broker's HashMap order
        parked = m.awaiting_join
        if parked is not None:
            is_leader = m.member_id == g.leader_id
            c.respond(parked.token, join_response(
                parked.version, E.NONE, generation_id=g.generation_id, protocol_type=g.protocol_type,
                protocol_name=g.protocol_name, leader=g.leader_id or "", member_id=m.member_id,
                members=_for_version(leader_members, parked.version) if is_leader else []))
            g.set_awaiting_join(m, None)
        m.is_new = False
        schedule_heartbeat(c, g, m.member_id, m.session_timeout_ms)
    g.pending_sync = set(g.members)
    _schedule_sync(c, g)


def _schedule_sync(c: "CoordinatorState", g: ClassicGroup) -> None:
    gid, gen = g.group_id, g.generation_id

    def fire():
        grp = c.groups.get(gid)
        if grp is None or grp.generation_id != gen or grp.state not in (COMPLETING, STABLE):
            return
        laggards = [grp.members[mid] for mid in list(grp.pending_sync) if mid in grp.members]
        for m in laggards:
            if m.awaiting_sync is not None:
                continue
            cancel_heartbeat(c, grp, m.member_id)
            grp.remove(m.member_id)
            c.event("member_removed", gid, member=m.member_id, reason="did not sync in time")
        grp.pending_sync.clear()
        if laggards:
            prepare_rebalance(c, grp, "members failed to sync within the rebalance timeout")
    c.timers.schedule(classic_sync_key(gid), c.now + g.rebalance_timeout_ms(), fire)


def reset_and_propagate_error(c: "CoordinatorState", g: ClassicGroup, error: int) -> None:
    for m in g.members.values():
        m.assignment = b""
        if m.awaiting_sync is not None:
            c.respond(m.awaiting_sync.token, sync_response(m.awaiting_sync.version, error))
            m.awaiting_sync = None
            # as for a successful propagation: a session that expired while parked was ignored
            # and left the member without a heartbeat timer
            schedule_heartbeat(c, g, m.member_id, m.session_timeout_ms)


def propagate_assignment(c: "CoordinatorState", g: ClassicGroup) -> None:
    for m in g.members.values():
        if m.awaiting_sync is not None:
            c.respond(m.awaiting_sync.token, sync_response(
                m.awaiting_sync.version, E.NONE, g.protocol_type, g.protocol_name, m.assignment))
            m.awaiting_sync = None
            schedule_heartbeat(c, g, m.member_id, m.session_timeout_ms)


def unload_group(c: "CoordinatorState", g: ClassicGroup, error: int) -> None:
    """The group's state partition moved to another kshim (GroupCoordinator.unload): parked joins and
    syncs are answered `error`; its timers go."""
    gid = g.group_id
    for m in g.members.values():
        if m.awaiting_join is not None:
            c.respond(m.awaiting_join.token, join_error(m.awaiting_join.version, error, m.member_id))
        if m.awaiting_sync is not None:
            c.respond(m.awaiting_sync.token, sync_response(m.awaiting_sync.version, error))
    cancel_classic_group_timers(c.timers, gid, [*g.members, *g.pending_members])
    c.join_polling.discard(gid)
