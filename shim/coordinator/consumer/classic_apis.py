"""Classic and admin APIs meeting a consumer group (spec §B.5-B.7, §D.9).

JoinGroup/SyncGroup/Heartbeat/LeaveGroup reach a consumer group here first. An empty consumer group
is recreated as classic by a JoinGroup (whatever the migration policy); on a non-empty one the classic
APIs serve members of the classic protocol inside the consumer group (classic_members.py; JoinGroup
answers INCONSISTENT_GROUP_PROTOCOL when `consumer_migration_policy` is `disabled`). ListGroups lists
consumer groups (type "consumer", protocol type "consumer"); DeleteGroups deletes empty ones;
OffsetDelete (offsets.delete_offsets) refuses topics some member subscribes to (`subscribed_to`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kcodec.generated.list_groups import ListedGroup

from .. import errors as E
from .group import G_EMPTY
from . import classic_members
from .membership import cancel_member_timers
from .persist import write_group_removed

if TYPE_CHECKING:
    from ..core import Ctx, GroupCoordinator

JOIN, HEARTBEAT, LEAVE, SYNC, LIST, DELETE = 11, 12, 13, 14, 16, 42


def wrap(c: "GroupCoordinator") -> None:
    h = c.handlers
    for key, fn in ((JOIN, _join), (SYNC, _sync), (HEARTBEAT, _heartbeat), (LEAVE, _leave),
                    (LIST, _list), (DELETE, _delete)):
        h[key] = _guarded(fn, h[key])


def _guarded(fn, classic: Callable):
    def handler(c: "GroupCoordinator", ctx: "Ctx", req) -> None:
        fn(c, ctx, req, classic)
    return handler


def delete_group(c: "GroupCoordinator", gid: str) -> None:
    """Drop a consumer group and its records (its offsets are the caller's business)."""
    g = c.consumer_groups.pop(gid)
    for mid in g.members:
        cancel_member_timers(c, gid, mid)
    write_group_removed(c, g)


def _join(c, ctx, req, classic) -> None:
    g = c.consumer_groups.get(req.group_id)
    if g is None:
        return classic(c, ctx, req)
    if not g.members:
        if not c.cfg.min_session_timeout_ms <= req.session_timeout_ms <= c.cfg.max_session_timeout_ms:
            return classic(c, ctx, req)      # refused by GroupCoordinatorService.joinGroup: the group stays
        if req.member_id:
            # GroupMetadataManager.classicGroupJoinToClassicGroup: maybeDeleteEmptyConsumerGroup removes
            # the group from the latest state, the member id then finds no classic group
            # (GroupIdNotFoundException -> UNKNOWN_MEMBER_ID) and the result drops the tombstones: gone
            # for writes, still seen by reads until a record reaches its partition (uncommitted.py)
            from ..responses import join_error
            g = c.consumer_groups.pop(req.group_id)
            c.uncommitted.remove_consumer_group(c, g)
            return c.respond(ctx.token, join_error(ctx.version, E.UNKNOWN_MEMBER_ID, req.member_id))
        delete_group(c, req.group_id)        # an empty consumer group becomes classic (§D.9)
        c.event("group_converted", req.group_id, to="classic")
        return classic(c, ctx, req)
    classic_members.join(c, ctx, req, g)


def _sync(c, ctx, req, classic) -> None:
    g = c.consumer_groups.get(req.group_id)
    if g is None:
        return classic(c, ctx, req)
    from ..core import sync_response
    if ctx.version >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return c.respond(ctx.token, sync_response(ctx.version, E.INCONSISTENT_GROUP_PROTOCOL))
    if not g.members:
        return c.respond(ctx.token, sync_response(ctx.version, E.UNKNOWN_MEMBER_ID))
    classic_members.sync(c, ctx, req, g)


def _heartbeat(c, ctx, req, classic) -> None:
    g = c.consumer_groups.get(req.group_id)
    if g is None:
        return classic(c, ctx, req)
    classic_members.heartbeat(c, ctx, req, g)


def _leave(c, ctx, req, classic) -> None:
    g = c.consumer_groups.get(req.group_id)
    if g is None:
        return classic(c, ctx, req)
    classic_members.leave(c, ctx, req, g)


def _list(c, ctx, req, classic) -> None:
    classic(c, ctx, req)
    body = c.out[-1].body                      # the classic handler's ListGroupsResponse
    v = ctx.version
    states = {s.lower() for s in (req.states_filter or [])} if v >= 4 else set()
    types = {t.lower() for t in (req.types_filter or [])} if v >= 5 else set()
    if types and "consumer" not in types:
        return
    groups = dict(c.consumer_groups)
    groups.update((gid, g) for gid, g in c.uncommitted.removed.items()
                  if c.uncommitted.consumer_group(c, gid) is g)    # still in the committed state
    for gid, g in groups.items():
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


def subscribed_to(g) -> Callable[[str], bool]:
    """ConsumerGroup.isSubscribedToTopic for OffsetDelete: a topic some member subscribes to, by name
    or resolved regex (an empty group subscribes to nothing)."""
    return (g.subscribed_names() if g.state != G_EMPTY else set()).__contains__
