"""LeaveGroup v0-5 (GroupMetadataManager.classicGroupLeave): v0-2 carry one member id; v3+ a batch of
members identified by member id and/or group.instance.id (KIP-345 admin removal uses member id "" +
instance id), with per-member errors. KIP-800 leave reasons (v5+) are reported as events."""

from __future__ import annotations

from kcodec.generated.leave_group import LeaveGroupResponse, MemberResponse

from . import errors as E
from .core import Ctx, GroupCoordinator, join_error, sync_response
from .group import COMPLETING, DEAD, PREPARING, STABLE
from .join import validate_member


def handle_leave(c: GroupCoordinator, ctx: Ctx, req) -> None:
    v = ctx.version
    if v <= 2:
        identities = [(req.member_id, None, None)]
    else:
        identities = [(m.member_id, m.group_instance_id, m.reason if v >= 5 else None) for m in req.members]

    def reply(top: int, results: list[tuple[str, str | None, int]]) -> None:
        if v <= 2:
            err = top or (results[0][2] if results else E.NONE)
            return c.respond(ctx.token, LeaveGroupResponse(error_code=err, members=[]))
        c.respond(ctx.token, LeaveGroupResponse(error_code=top, members=[
            MemberResponse(member_id=mid, group_instance_id=iid, error_code=e) for mid, iid, e in results]))

    if not req.group_id:
        return reply(E.INVALID_GROUP_ID, [])
    g = c.groups.get(req.group_id)
    if g is None:
        return reply(E.NONE, [(mid, iid, E.UNKNOWN_MEMBER_ID) for mid, iid, _ in identities])
    if g.state == DEAD:
        return reply(E.COORDINATOR_NOT_AVAILABLE, [])
    results, removed = [], 0
    for member_id, instance_id, reason in identities:
        member_id = member_id or ""
        if member_id == "":
            target = g.static_member_id(instance_id)
            if target is None:
                results.append((member_id, instance_id, E.UNKNOWN_MEMBER_ID))
                continue
        elif member_id in g.pending_members:
            g.pending_members.discard(member_id)
            c.cancel_heartbeat(g, member_id)
            c.event("member_left", g.group_id, member=member_id, pending=True, reason=reason or "not provided")
            results.append((member_id, instance_id, E.NONE))
            removed += 1
            continue
        else:
            err = validate_member(g, member_id, instance_id)
            if err:
                results.append((member_id, instance_id, err))
                continue
            target = member_id
        m = g.members[target]
        if m.awaiting_join is not None:
            c.respond(m.awaiting_join.token, join_error(m.awaiting_join.version, E.UNKNOWN_MEMBER_ID, ""))
            g.set_awaiting_join(m, None)
        if m.awaiting_sync is not None:
            c.respond(m.awaiting_sync.token, sync_response(m.awaiting_sync.version, E.REBALANCE_IN_PROGRESS))
            m.awaiting_sync = None
        c.cancel_heartbeat(g, target)
        g.remove(target)
        c.event("member_left", g.group_id, member=target, instance=m.instance_id, reason=reason or "not provided")
        results.append((member_id, instance_id, E.NONE))
        removed += 1
    if removed:
        if g.state in (STABLE, COMPLETING):
            c.prepare_rebalance(g, f"{removed} member(s) left the group")
        elif g.state == PREPARING:
            c.maybe_complete_join(g)   # via maybePrepareRebalanceOrCompleteJoin: respects the initial delay
    reply(E.NONE, results)
