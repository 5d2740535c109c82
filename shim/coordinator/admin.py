"""DescribeGroups v0-6, ListGroups v0-5, DeleteGroups v0-3 (GroupMetadataManager,
GroupCoordinatorService)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcodec.generated.delete_groups import DeletableGroupResult, DeleteGroupsResponse
from kcodec.generated.describe_groups import DescribedGroup, DescribedGroupMember, DescribeGroupsResponse
from kcodec.generated.list_groups import ListedGroup, ListGroupsResponse

from . import errors as E
from .result import Ctx
from .classic_group import DEAD, EMPTY, STABLE
from .state_records import GroupTombstone
from .releases import group_operations
from .scala_order import scala_string_order
from .txn_offsets import drop_group

if TYPE_CHECKING:
    from .coordinator_state import CoordinatorState

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def all_group_operations(release: str) -> int:
    """What a broker without an authorizer reports when asked (KIP-430): every operation a group
    supports in that release (releases.group_operations; authz/acl.py SUPPORTED_OPERATIONS[GROUP] holds
    the newest release's, the coordinator does not import authz)."""
    return sum(1 << op for op in group_operations(release))


def describe_groups(c: CoordinatorState, ctx: Ctx, req) -> None:
    v = ctx.version
    out = []
    # entries answered without error carry the bit field when asked (KafkaApis; authz/ patches it
    # with the caller's own operations when kshim runs with an authorizer)
    ops = all_group_operations(c.cfg.release) if v >= 3 and req.include_authorized_operations \
        else AUTHORIZED_OPERATIONS_OMITTED
    for gid in req.groups:
        if gid is None:
            out.append(DescribedGroup(error_code=E.INVALID_GROUP_ID, group_id="", group_state="",
                                      protocol_type="", protocol_data="", members=[]))
            continue
        g = None if c.uncommitted.hidden(c, gid) else c.groups.get(gid)   # a read: the committed state
        if g is None or g.state == DEAD:
            # GroupMetadataManager.classicGroup(groupId, committedOffset): its message names a group of the
            # other type
            msg = (f"Group {gid} is not a classic group." if c.uncommitted.consumer_group(c, gid) is not None
                   else f"Group {gid} not found.")
            out.append(DescribedGroup(
                error_code=E.GROUP_ID_NOT_FOUND if v >= 6 else E.NONE,
                error_message=msg if v >= 6 else None,
                group_id=gid, group_state="Dead", protocol_type="", protocol_data="", members=[],
                authorized_operations=ops if v < 6 else AUTHORIZED_OPERATIONS_OMITTED))
            continue
        stable = g.state == STABLE
        # Kafka 3.9's GroupMetadata.summary: outside Stable, members without metadata or assignment
        assigned = stable or not c.cfg.scala_coordinator()
        members = [DescribedGroupMember(
            member_id=m.member_id, group_instance_id=m.instance_id if v >= 4 else None,
            client_id=m.client_id, client_host=m.client_host,
            member_metadata=m.metadata(g.protocol_name) if stable else b"",
            member_assignment=m.assignment if assigned else b"") for m in g.member_order()]
        out.append(DescribedGroup(
            error_code=E.NONE, group_id=gid, group_state=g.state, protocol_type=g.protocol_type or "",
            protocol_data=(g.protocol_name or "") if stable else "", members=members,
            authorized_operations=ops))
    c.respond(ctx.token, DescribeGroupsResponse(groups=out))


def list_groups(c: CoordinatorState, ctx: Ctx, req) -> ListGroupsResponse:
    """The classic groups' answer (dispatch.list_groups adds the consumer groups, then responds)."""
    v = ctx.version
    states = {s.lower() for s in (req.states_filter or [])} if v >= 4 else set()
    types = {t.lower() for t in (req.types_filter or [])} if v >= 5 else set()
    out = []
    for gid, g in c.groups.items():
        if g.state == DEAD or c.uncommitted.hidden(c, gid):
            continue
        if states and g.state.lower() not in states:
            continue
        if types and "classic" not in types:
            continue
        out.append(ListedGroup(group_id=gid, protocol_type=g.protocol_type or "",
                               group_state=g.state if v >= 4 else "",
                               group_type="classic" if v >= 5 else ""))
    return ListGroupsResponse(error_code=E.NONE, groups=out)


def delete_groups(c: CoordinatorState, ctx: Ctx, req) -> DeleteGroupsResponse:
    """The classic groups' answer (dispatch.delete_groups answers the consumer groups, then responds)."""
    results, seen = [], set()
    for gid in req.groups_names:
        if gid in seen:
            continue
        seen.add(gid)
        if gid is None:
            results.append(DeletableGroupResult(group_id=gid, error_code=E.INVALID_GROUP_ID))
            continue
        g = c.groups.get(gid)
        if g is None or g.state == DEAD:
            err = E.GROUP_ID_NOT_FOUND
        elif g.state != EMPTY:
            err = E.NON_EMPTY_GROUP
        else:
            remove_empty_classic_group(c, gid)
            c.event("group_deleted", gid)
            err = E.NONE
        results.append(DeletableGroupResult(group_id=gid, error_code=err))
    if c.cfg.scala_coordinator() and len(results) > 1:
        # Kafka 3.9's GroupCoordinator.handleDeleteGroups answers from a Scala mutable.Map of group ids
        # (the errors first, the deleted groups added after: one map, one order)
        by_id = {r.group_id: r for r in results if r.group_id is not None}
        results = [r for r in results if r.group_id is None] + [by_id[g] for g in scala_string_order(by_id)]
    return DeleteGroupsResponse(results=results)


def remove_empty_classic_group(c: CoordinatorState, gid: str) -> None:
    """An Empty classic group goes with its offsets and pending transactional offsets
    (GroupCoordinatorShard.deleteGroups; also the hand-over of adoption.py)."""
    drop_group(c, gid)
    c.offsets.delete_group(c, gid)
    c.records.append(GroupTombstone(gid))
    c.groups[gid].state = DEAD
    del c.groups[gid]
