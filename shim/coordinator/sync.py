"""SyncGroup v0-5 and Heartbeat v0-4 for classic groups (GroupMetadataManager.classicGroupSync,
classicGroupHeartbeat).

SyncGroup parks followers until the leader's assignment arrives; the leader's SyncGroup records the
assignment (one group record), answers every parked member and makes the group Stable. In Stable a
SyncGroup is answered at once with the stored assignment. Heartbeat keeps a member's session alive
and tells it REBALANCE_IN_PROGRESS while the group prepares a rebalance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcodec.generated.heartbeat import HeartbeatResponse

from . import classic_rebalance, errors as E
from .result import Ctx
from .responses import sync_response
from .classic_group import COMPLETING, DEAD, EMPTY, PREPARING, STABLE, Parked
from .timers import classic_sync_key

if TYPE_CHECKING:
    from .coordinator_state import CoordinatorState


def handle_sync(c: CoordinatorState, ctx: Ctx, req) -> None:
    v = ctx.version
    instance_id = req.group_instance_id if v >= 3 else None

    def fail(err: int) -> None:
        c.respond(ctx.token, sync_response(v, err))

    if v >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return fail(E.INCONSISTENT_GROUP_PROTOCOL)   # mandatory from v5 (KafkaApis)
    if not req.group_id:
        return fail(E.INVALID_GROUP_ID)
    g = c.groups.get(req.group_id)
    if g is None or g.state == EMPTY:
        return fail(E.UNKNOWN_MEMBER_ID)
    if g.state == DEAD:
        return fail(E.COORDINATOR_NOT_AVAILABLE)
    err = g.validate_member(req.member_id, instance_id)
    if err:
        return fail(err)
    if req.generation_id != g.generation_id:
        return fail(E.ILLEGAL_GENERATION)
    if v >= 5 and ((req.protocol_type is not None and req.protocol_type != g.protocol_type)
                   or (req.protocol_name is not None and req.protocol_name != g.protocol_name)):
        return fail(E.INCONSISTENT_GROUP_PROTOCOL)
    if g.state == PREPARING:
        return fail(E.REBALANCE_IN_PROGRESS)
    m = g.members[req.member_id]
    if g.state == COMPLETING:
        m.awaiting_sync = Parked(ctx.token, v)
        _sync_done(c, g, req.member_id)
        if req.member_id == g.leader_id:
            given = {a.member_id: bytes(a.assignment) for a in req.assignments}
            for mid, member in g.members.items():
                member.assignment = given.get(mid, b"")
            classic_rebalance.write_group(c, g)
            classic_rebalance.transition(c, g, STABLE)
            c.event("assignment", g.group_id, generation=g.generation_id, leader=g.leader_id,
                    assignments={mid: member.assignment.hex() for mid, member in g.members.items()})
            classic_rebalance.propagate_assignment(c, g)
        return
    if g.state == STABLE:
        _sync_done(c, g, req.member_id)
        c.respond(ctx.token, sync_response(v, E.NONE, g.protocol_type, g.protocol_name, m.assignment))


def _sync_done(c: CoordinatorState, g, member_id: str) -> None:
    g.pending_sync.discard(member_id)
    if not g.pending_sync:
        c.timers.cancel(classic_sync_key(g.group_id))


def handle_heartbeat(c: CoordinatorState, ctx: Ctx, req) -> None:
    v = ctx.version
    instance_id = req.group_instance_id if v >= 3 else None

    def answer(err: int) -> None:
        c.respond(ctx.token, HeartbeatResponse(error_code=err))

    if not req.group_id:
        return answer(E.INVALID_GROUP_ID)
    g = c.groups.get(req.group_id)
    if g is None:
        return answer(E.UNKNOWN_MEMBER_ID)
    if g.state == DEAD:
        return answer(E.COORDINATOR_NOT_AVAILABLE)
    err = g.validate_member(req.member_id, instance_id)
    if err:
        return answer(err)
    if req.generation_id != g.generation_id:
        return answer(E.ILLEGAL_GENERATION)
    if g.state == EMPTY:
        return answer(E.UNKNOWN_MEMBER_ID)
    m = g.members[req.member_id]
    classic_rebalance.schedule_heartbeat(c, g, m.member_id, m.session_timeout_ms)
    answer(E.REBALANCE_IN_PROGRESS if g.state == PREPARING else E.NONE)
