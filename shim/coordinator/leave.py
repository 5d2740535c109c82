"""LeaveGroup v0-5 (GroupMetadataManager.classicGroupLeave): v0-2 carry one member id; v3+ a batch of
members identified by member id and/or group.instance.id (KIP-345 admin removal uses member id "" +
instance id), with per-member errors. KIP-800 leave reasons (v5+) are reported as events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcodec.generated.leave_group import LeaveGroupResponse, MemberResponse

from . import classic_rebalance, errors as E
from .result import Ctx
from .classic_group import COMPLETING, DEAD, PREPARING, STABLE

if TYPE_CHECKING:
    from .coordinator_state import CoordinatorState


def handle_leave(c: CoordinatorState, ctx: Ctx, req) -> None:
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
    scala = c.cfg.scala_coordinator()    # Kafka 3.9: a pending member's leave starts no rebalance
    pending_left = False
    for member_id, instance_id, reason in identities:
        member_id = member_id or ""
        if member_id == "":
            target = g.static_member_id(instance_id)
            if target is None:
                results.append((member_id, instance_id, E.UNKNOWN_MEMBER_ID))
                continue
        elif member_id in g.pending_members:
            g.pending_members.discard(member_id)
            classic_rebalance.cancel_heartbeat(c, g, member_id)
            c.event("member_left", g.group_id, member=member_id, pending=True, reason=reason or "not provided")
            results.append((member_id, instance_id, E.NONE))
            if scala:        # GroupCoordinator.removePendingMemberAndUpdateGroup: only a join may complete
                pending_left = True
            else:
                removed += 1
            continue
        else:
            err = g.validate_member(member_id, instance_id)
            if err:
                results.append((member_id, instance_id, err))
                continue
            target = member_id
        m = g.members[target]
        classic_rebalance.answer_parked_of_removed(c, g, m, E.REBALANCE_IN_PROGRESS)
        g.remove(target)
        c.event("member_left", g.group_id, member=target, instance=m.instance_id, reason=reason or "not provided")
        results.append((member_id, instance_id, E.NONE))
        removed += 1
    if removed:
        if g.state in (STABLE, COMPLETING):
            classic_rebalance.prepare_rebalance(c, g, f"{removed} member(s) left the group")
        elif g.state == PREPARING:
            classic_rebalance.maybe_complete_join(c, g)   # via maybePrepareRebalanceOrCompleteJoin: respects the initial delay
    elif pending_left and g.state == PREPARING:
        classic_rebalance.maybe_complete_join(c, g)
    reply(E.NONE, results)
