"""Classic and admin APIs meeting a consumer group (spec §B.5-B.7, §D.9 without migration).

JoinGroup/SyncGroup/Heartbeat/LeaveGroup reach a consumer group here first. kshim does not run
online migration: an empty consumer group is recreated as classic by a JoinGroup (the broker does this
whatever its policy); on a non-empty one JoinGroup answers INCONSISTENT_GROUP_PROTOCOL (the broker's
answer with `group.consumer.migration.policy=disabled`), SyncGroup and Heartbeat UNKNOWN_MEMBER_ID (no
member uses the classic protocol). LeaveGroup removes consumer-protocol members only by the admin form
(member id "" and their instance id), as the broker does. ListGroups lists consumer groups (type
"consumer", protocol type "consumer"); DeleteGroups deletes empty ones; OffsetDelete refuses topics
some member subscribes to (by name or resolved regex).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kcodec.generated.heartbeat import HeartbeatResponse
from kcodec.generated.leave_group import LeaveGroupResponse, MemberResponse
from kcodec.generated.list_groups import ListedGroup
from kcodec.generated.offset_delete import (OffsetDeleteResponse, OffsetDeleteResponsePartition,
                                            OffsetDeleteResponseTopic)

from .. import errors as E
from .group import G_EMPTY
from .membership import rebalance_key, session_key
from .persist import write_group_removed, write_member_removed
from .target import bump_epoch

if TYPE_CHECKING:
    from ..core import Ctx, GroupCoordinator

JOIN, HEARTBEAT, LEAVE, SYNC, LIST, DELETE, OFFSET_DELETE = 11, 12, 13, 14, 16, 42, 47


def wrap(c: "GroupCoordinator") -> None:
    h = c.handlers
    for key, fn in ((JOIN, _join), (SYNC, _sync), (HEARTBEAT, _heartbeat), (LEAVE, _leave),
                    (LIST, _list), (DELETE, _delete), (OFFSET_DELETE, _offset_delete)):
        h[key] = _guarded(fn, h[key])


def _guarded(fn, classic: Callable):
    def handler(c: "GroupCoordinator", ctx: "Ctx", req) -> None:
        fn(c, ctx, req, classic)
    return handler


def delete_group(c: "GroupCoordinator", gid: str) -> None:
    """Drop a consumer group and its records (its offsets are the caller's business)."""
    g = c.consumer_groups.pop(gid)
    for mid in g.members:
        c.timers.cancel(session_key(gid, mid))
        c.timers.cancel(rebalance_key(gid, mid))
    write_group_removed(c, g)


def _join(c, ctx, req, classic) -> None:
    g = c.consumer_groups.get(req.group_id)
    if g is None:
        return classic(c, ctx, req)
    if not g.members:
        delete_group(c, req.group_id)        # an empty consumer group becomes classic (§D.9)
        c.event("group_converted", req.group_id, to="classic")
        return classic(c, ctx, req)
    from ..core import join_error
    c.respond(ctx.token, join_error(ctx.version, E.INCONSISTENT_GROUP_PROTOCOL, req.member_id or ""))


def _sync(c, ctx, req, classic) -> None:
    if req.group_id not in c.consumer_groups:
        return classic(c, ctx, req)
    from ..core import sync_response
    c.respond(ctx.token, sync_response(ctx.version, E.UNKNOWN_MEMBER_ID))


def _heartbeat(c, ctx, req, classic) -> None:
    if req.group_id not in c.consumer_groups:
        return classic(c, ctx, req)
    c.respond(ctx.token, HeartbeatResponse(error_code=E.UNKNOWN_MEMBER_ID))


def _leave(c, ctx, req, classic) -> None:
    g = c.consumer_groups.get(req.group_id)
    if g is None:
        return classic(c, ctx, req)
    v = ctx.version
    ids = [(req.member_id, None)] if v <= 2 else [(m.member_id, m.group_instance_id) for m in req.members]
    results, leaving = [], []
    for member_id, instance_id in ids:
        member_id = member_id or ""
        if instance_id is None:
            err = E.UNKNOWN_MEMBER_ID           # unknown, or a member of the consumer protocol
            results.append((member_id, instance_id, err))
            continue
        mid = g.static_members.get(instance_id)
        if mid is None:
            results.append((member_id, instance_id, E.UNKNOWN_MEMBER_ID))
        elif member_id:
            results.append((member_id, instance_id, E.FENCED_INSTANCE_ID if member_id != mid
                            else E.UNKNOWN_MEMBER_ID))
        else:
            results.append((mid, instance_id, E.NONE))
            if mid not in leaving:
                leaving.append(mid)
    for mid in leaving:
        m = g.remove(mid)
        write_member_removed(c, g, mid)
        c.timers.cancel(session_key(g.group_id, mid))
        c.timers.cancel(rebalance_key(g.group_id, mid))
        c.event("member_removed", g.group_id, member=mid, instance=m.instance_id, reason="removed by LeaveGroup")
    if leaving:
        bump_epoch(c, g, f"{len(leaving)} member(s) removed by LeaveGroup")
    if v <= 2:
        return c.respond(ctx.token, LeaveGroupResponse(error_code=results[0][2], members=[]))
    c.respond(ctx.token, LeaveGroupResponse(error_code=E.NONE, members=[
        MemberResponse(member_id=mid, group_instance_id=iid, error_code=e) for mid, iid, e in results]))


def _list(c, ctx, req, classic) -> None:
    classic(c, ctx, req)
    body = c.out[-1].body                      # the classic handler's ListGroupsResponse
    v = ctx.version
    states = {s.lower() for s in (req.states_filter or [])} if v >= 4 else set()
    types = {t.lower() for t in (req.types_filter or [])} if v >= 5 else set()
    if types and "consumer" not in types:
        return
    for gid, g in c.consumer_groups.items():
        state = g.state
        if states and state.lower() not in states:
            continue
        body.groups.append(ListedGroup(group_id=gid, protocol_type="consumer", group_state=state if v >= 4 else "",
                                       group_type="consumer" if v >= 5 else ""))


def _delete(c, ctx, req, classic) -> None:
    mine = [gid for gid in (req.groups_names or []) if gid in c.consumer_groups]
    classic(c, ctx, req)
    if not mine:
        return
    from ..txn_offsets import drop_group
    from ..records import GroupTombstone
    body = c.out[-1].body
    for r in body.results:
        g = c.consumer_groups.get(r.group_id) if r.group_id is not None else None
        if g is None:
            continue
        if g.members:
            r.error_code = E.NON_EMPTY_GROUP
            continue
        drop_group(c, r.group_id)
        c.offsets.delete_group(c, r.group_id)
        delete_group(c, r.group_id)
        c.records.append(GroupTombstone(r.group_id))   # a stale classic record of this id must not come back
        c.event("group_deleted", r.group_id)
        r.error_code = E.NONE


def _offset_delete(c, ctx, req, classic) -> None:
    g = c.consumer_groups.get(req.group_id)
    if g is None:
        return classic(c, ctx, req)
    from ..txn_offsets import drop_partition
    subscribed = g.subscribed_names() if g.state != G_EMPTY else set()
    out = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            if t.name in subscribed:
                err = E.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                c.offsets.delete(c, req.group_id, t.name, p.partition_index)
                drop_partition(c, req.group_id, t.name, p.partition_index)
                err = E.NONE
            parts.append(OffsetDeleteResponsePartition(partition_index=p.partition_index, error_code=err))
        out.append(OffsetDeleteResponseTopic(name=t.name, partitions=parts))
    c.respond(ctx.token, OffsetDeleteResponse(error_code=E.NONE, topics=out))
