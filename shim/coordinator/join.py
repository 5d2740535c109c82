"""JoinGroup v0-9, as Apache Kafka 4.3 answers it (GroupMetadataManager.classicGroupJoin).

New dynamic members at v4+ get MEMBER_ID_REQUIRED with their id and must rejoin (KIP-394); static
members (group.instance.id, v5+) join at once, and a known instance id replaces its old member id
(the old one is fenced). A static member rejoining a Stable group whose protocol would not change
causes no rebalance; at v9 a rejoining static leader gets SkipAssignment=true and the member list
(KIP-814). KIP-800 join reasons (v8+) are kept on the member and reported as events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcodec.generated.join_group import JoinGroupResponseMember

from . import classic_rebalance, errors as E
from .result import Ctx
from .responses import _for_version, join_error, join_response, sync_response
from .classic_group import COMPLETING, DEAD, EMPTY, PREPARING, STABLE, ClassicGroup, ClassicMember, Parked
from .consumer.fencing import delete_group as delete_consumer_group

if TYPE_CHECKING:
    from .consumer.consumer_group import ConsumerGroup
    from .coordinator_state import CoordinatorState


def handle_join(c: CoordinatorState, ctx: Ctx, req) -> None:
    v = ctx.version
    member_id = req.member_id or ""
    instance_id = req.group_instance_id if v >= 5 else None
    if not req.group_id:
        return c.respond(ctx.token, join_error(v, E.INVALID_GROUP_ID, member_id))
    if not c.cfg.session_timeout_valid(req.session_timeout_ms):
        return c.respond(ctx.token, join_error(v, E.INVALID_SESSION_TIMEOUT, member_id))
    g = c.groups.get(req.group_id)
    created = False
    if g is None:
        if member_id:
            return c.respond(ctx.token, join_error(v, E.UNKNOWN_MEMBER_ID, member_id))
        g = ClassicGroup(req.group_id, state_timestamp_ms=c.now)
        c.groups[req.group_id] = g
        created = True
    records_before = len(c.records)
    if not _accept_joining_member(g, member_id, c.cfg.max_size):
        if member_id in g.members or member_id in g.pending_members:
            classic_rebalance.cancel_heartbeat(c, g, member_id)
            g.remove(member_id)
            g.pending_members.discard(member_id)
        c.respond(ctx.token, join_error(v, E.GROUP_MAX_SIZE_REACHED, ""))
    elif not member_id:
        _join_new_member(c, ctx, req, g, instance_id)
    else:
        _join_existing_member(c, ctx, req, g, member_id, instance_id)
    if created and len(c.records) == records_before:
        classic_rebalance.write_empty_group(c, g)


def join_empty_consumer_group(c: CoordinatorState, ctx: Ctx, req, cg: "ConsumerGroup") -> None:
    """A JoinGroup to the empty consumer group `cg`: GroupMetadataManager.classicGroupJoinToClassicGroup
    converts it into a classic group first (maybeDeleteEmptyConsumerGroup), then joins as handle_join."""
    if not c.cfg.session_timeout_valid(req.session_timeout_ms):
        return handle_join(c, ctx, req)   # refused by GroupCoordinatorService.joinGroup: the group stays
    if req.member_id:
        # maybeDeleteEmptyConsumerGroup removes the group from the latest state, the member id then finds
        # no classic group (GroupIdNotFoundException -> UNKNOWN_MEMBER_ID): gone for writes, still seen
        # by reads until a record reaches its partition (uncommitted.py). Kafka drops the tombstones
        # with the empty result (a reload brings the group back); kshim writes them, so its state is
        # what its records say, and they do not end the read view
        delete_consumer_group(c, req.group_id)
        c.uncommitted.remove_consumer_group(c, cg)
        return c.respond(ctx.token, join_error(ctx.version, E.UNKNOWN_MEMBER_ID, req.member_id))
    delete_consumer_group(c, req.group_id)
    c.event("group_converted", req.group_id, to="classic")
    return handle_join(c, ctx, req)


def _rebalance_timeout(req, v: int) -> int:
    return req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms


def _protocols(req) -> list[tuple[str, bytes]]:
    return [(p.name, bytes(p.metadata)) for p in req.protocols]


def _accept_joining_member(g: ClassicGroup, member_id: str, max_size: int) -> bool:
    if g.state in (EMPTY, DEAD):
        return True
    if g.state == PREPARING:
        m = g.members.get(member_id)
        return (m is not None and m.awaiting_join is not None) or g.awaiting_join_count < max_size
    return member_id in g.members or len(g.members) < max_size


def _join_new_member(c: CoordinatorState, ctx: Ctx, req, g: ClassicGroup, instance_id: str | None) -> None:
    v = ctx.version
    if g.state == DEAD:
        return c.respond(ctx.token, join_error(v, E.COORDINATOR_NOT_AVAILABLE, ""))
    if not g.supports_protocols(req.protocol_type, [p.name for p in req.protocols]):
        return c.respond(ctx.token, join_error(v, E.INCONSISTENT_GROUP_PROTOCOL, ""))
    new_id = c.new_member_id(instance_id if instance_id is not None else ctx.client_id)
    if instance_id is None:
        if v >= 4:
            g.pending_members.add(new_id)
            classic_rebalance.schedule_heartbeat(c, g, new_id, req.session_timeout_ms)
            c.event("member_id_required", g.group_id, member=new_id, client_id=ctx.client_id)
            return c.respond(ctx.token, join_error(v, E.MEMBER_ID_REQUIRED, new_id))
        return _add_member(c, ctx, req, g, new_id, None)
    old_id = g.static_members.get(instance_id)
    if old_id is None:
        return _add_member(c, ctx, req, g, new_id, instance_id)
    _replace_static_member(c, ctx, req, g, instance_id, old_id, new_id)


def _add_member(c: CoordinatorState, ctx: Ctx, req, g: ClassicGroup, member_id: str,
                instance_id: str | None) -> None:
    v = ctx.version
    m = ClassicMember(member_id=member_id, instance_id=instance_id, client_id=ctx.client_id,
                      client_host=ctx.client_host, rebalance_timeout_ms=_rebalance_timeout(req, v),
                      session_timeout_ms=req.session_timeout_ms, protocol_type=req.protocol_type,
                      protocols=_protocols(req), awaiting_join=Parked(ctx.token, v), is_new=True,
                      join_reason=req.reason if v >= 8 else None)
    if g.state == PREPARING and g.previous_state == EMPTY:
        g.new_member_added = True
    g.add(m)
    classic_rebalance.schedule_heartbeat(c, g, member_id, c.cfg.new_member_join_timeout_ms)
    c.event("member_joined", g.group_id, member=member_id, instance=instance_id, client_id=ctx.client_id,
            reason=m.join_reason, new=True)
    _rebalance_or_complete(c, g, f"adding new member {member_id} with group instance id {instance_id}; "
                                 f"client reason: {m.join_reason or 'not provided'}")


def _rebalance_or_complete(c: CoordinatorState, g: ClassicGroup, reason: str) -> None:
    if g.state in (STABLE, COMPLETING, EMPTY):
        classic_rebalance.prepare_rebalance(c, g, reason)
    elif g.state == PREPARING:
        classic_rebalance.maybe_complete_join(c, g)


def _update_member(g: ClassicGroup, m: ClassicMember, ctx: Ctx, req, parked: bool) -> None:
    v = ctx.version
    g.set_protocols(m, _protocols(req))
    m.rebalance_timeout_ms = _rebalance_timeout(req, v)
    m.session_timeout_ms = req.session_timeout_ms
    if v >= 8:
        m.join_reason = req.reason
    g.set_awaiting_join(m, Parked(ctx.token, v) if parked else None)


def _replace_static_member(c: CoordinatorState, ctx: Ctx, req, g: ClassicGroup, instance_id: str,
                           old_id: str, new_id: str) -> None:
    v = ctx.version
    old = g.members[old_id]
    old_leader = g.leader_id
    if old.awaiting_join is not None:
        c.respond(old.awaiting_join.token, join_error(old.awaiting_join.version, E.FENCED_INSTANCE_ID, old_id))
        g.set_awaiting_join(old, None)
    if old.awaiting_sync is not None:
        c.respond(old.awaiting_sync.token, sync_response(old.awaiting_sync.version, E.FENCED_INSTANCE_ID))
        old.awaiting_sync = None
    classic_rebalance.cancel_heartbeat(c, g, old_id)
    # ClassicGroup.replaceStaticMember: a new member object (not new to the group) with the old one's
    # client id, host and timeouts; its heartbeat is rescheduled before updateMember applies the
    # request's timeouts (GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin)
    m = g.replace_static_member(instance_id, old_id, new_id)
    m.is_new = False
    classic_rebalance.schedule_heartbeat(c, g, new_id, m.session_timeout_ms)
    c.event("static_member_replaced", g.group_id, instance=instance_id, old_member=old_id, member=new_id,
            reason=req.reason if v >= 8 else None)
    if g.state == STABLE:
        _update_member(g, m, ctx, req, parked=False)
        if g.select_protocol() == g.protocol_name:
            classic_rebalance.write_group(c, g)
            is_leader = g.leader_id == new_id
            if v >= 9:
                members = [JoinGroupResponseMember(member_id=x.member_id, group_instance_id=x.instance_id,
                                                   metadata=x.metadata(g.protocol_name))
                           for x in g.member_order()] if is_leader else []
                c.respond(ctx.token, join_response(
                    v, E.NONE, generation_id=g.generation_id, protocol_type=g.protocol_type,
                    protocol_name=g.protocol_name, leader=g.leader_id or "", member_id=new_id,
                    members=members, skip_assignment=is_leader))
            else:
                c.respond(ctx.token, join_response(
                    v, E.NONE, generation_id=g.generation_id, protocol_type=g.protocol_type,
                    protocol_name=g.protocol_name, leader=old_leader or "", member_id=new_id, members=[]))
            c.event("static_rejoin_without_rebalance", g.group_id, instance=instance_id, member=new_id,
                    leader=is_leader, skip_assignment=is_leader and v >= 9, generation=g.generation_id)
            return
        g.set_awaiting_join(m, Parked(ctx.token, v))
        _rebalance_or_complete(c, g, f"group's selected protocol will change because static member "
                                     f"{new_id} with instance id {instance_id} joined with changed metadata")
    elif g.state == COMPLETING:
        _update_member(g, m, ctx, req, parked=True)
        classic_rebalance.prepare_rebalance(c, g, f"updating metadata for static member {new_id} with instance id {instance_id}")
    elif g.state == PREPARING:
        _update_member(g, m, ctx, req, parked=True)
        classic_rebalance.maybe_complete_join(c, g)
    else:
        raise RuntimeError(f"static member {instance_id} in group {g.group_id} in state {g.state}")


def _join_existing_member(c: CoordinatorState, ctx: Ctx, req, g: ClassicGroup, member_id: str,
                          instance_id: str | None) -> None:
    v = ctx.version
    if g.state == DEAD:
        return c.respond(ctx.token, join_error(v, E.COORDINATOR_NOT_AVAILABLE, member_id))
    if not g.supports_protocols(req.protocol_type, [p.name for p in req.protocols]):
        return c.respond(ctx.token, join_error(v, E.INCONSISTENT_GROUP_PROTOCOL, member_id))
    if member_id in g.pending_members:
        if instance_id is not None:
            # classicGroupJoinExistingMember: "pending member cannot be a static member", an IllegalStateException:
            # GroupCoordinatorService.joinGroup answers UNKNOWN_SERVER_ERROR (no member id) and nothing changes
            return c.respond(ctx.token, join_error(v, E.UNKNOWN_SERVER_ERROR, ""))
        g.pending_members.discard(member_id)
        classic_rebalance.cancel_heartbeat(c, g, member_id)
        return _add_member(c, ctx, req, g, member_id, instance_id)
    err = g.validate_member(member_id, instance_id)
    if err:
        return c.respond(ctx.token, join_error(v, err, member_id))
    m = g.members[member_id]
    reason = f"updating metadata for member {member_id}; client reason: {(req.reason if v >= 8 else None) or 'not provided'}"
    if g.state == PREPARING:
        _update_member(g, m, ctx, req, parked=True)
        c.event("member_joined", g.group_id, member=member_id, instance=instance_id, reason=m.join_reason)
        classic_rebalance.maybe_complete_join(c, g)
    elif g.state == COMPLETING:
        if m.protocols == _protocols(req):
            is_leader = g.leader_id == member_id
            members = [JoinGroupResponseMember(member_id=x.member_id, group_instance_id=x.instance_id,
                                               metadata=x.metadata(g.protocol_name))
                       for x in g.member_order()] if is_leader else []
            c.respond(ctx.token, join_response(
                v, E.NONE, generation_id=g.generation_id, protocol_type=g.protocol_type,
                protocol_name=g.protocol_name, leader=g.leader_id or "", member_id=member_id,
                members=_for_version(members, v)))
        else:
            _update_member(g, m, ctx, req, parked=True)
            classic_rebalance.prepare_rebalance(c, g, reason)
    elif g.state == STABLE:
        if g.leader_id == member_id or m.protocols != _protocols(req):
            _update_member(g, m, ctx, req, parked=True)
            c.event("member_joined", g.group_id, member=member_id, instance=instance_id, reason=m.join_reason)
            classic_rebalance.prepare_rebalance(c, g, ("leader " if g.leader_id == member_id else "") + reason)
        else:
            c.respond(ctx.token, join_response(
                v, E.NONE, generation_id=g.generation_id, protocol_type=g.protocol_type,
                protocol_name=g.protocol_name, leader=g.leader_id or "", member_id=member_id, members=[]))
    else:
        c.respond(ctx.token, join_error(v, E.UNKNOWN_MEMBER_ID, member_id))
