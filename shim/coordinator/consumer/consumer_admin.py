"""The admin APIs' consumer-group step (dispatch.py runs it after the classic one): ListGroups lists
consumer groups (type "consumer", protocol type "consumer"); DeleteGroups deletes empty ones
(ConsumerGroup.validateDeleteGroup); OffsetDelete refuses topics some member subscribes to
(`validate_offset_delete`, for offsets.delete_offsets)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kcodec.generated.list_groups import ListedGroup

from .. import errors as E
from ..state_records import GroupTombstone
from ..txn_offsets import drop_group
from .consumer_group import G_EMPTY
from .fencing import delete_group

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState
    from ..result import Ctx


def list_consumer_groups(c: "CoordinatorState", ctx: "Ctx", req, body) -> None:
    """Append the consumer groups the request's filters keep to the classic answer `body`."""
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


def delete_consumer_groups(c: "CoordinatorState", body) -> None:
    """Answer the consumer groups among the classic answer's results (`body`, a DeleteGroupsResponse
    that found no classic group of those ids): a group with members is NON_EMPTY_GROUP; an empty one
    goes with its offsets and pending transactional offsets."""
    for r in body.results:
        g = c.consumer_groups.get(r.group_id) if r.group_id is not None else None
        if g is None:
            continue
        if g.members:
            r.error_code = E.NON_EMPTY_GROUP
            continue
        remove_empty_group(c, r.group_id)
        c.event("group_deleted", r.group_id)
        r.error_code = E.NONE


def remove_empty_group(c: "CoordinatorState", group_id: str) -> None:
    """An empty consumer group goes with its offsets and pending transactional offsets: DeleteGroups
    (GroupMetadataManager.deleteGroups) and the retention cleanup (maybeDeleteGroup) both end in
    createGroupTombstoneRecordsAndCancelTimers. Records: offset and pending-offset tombstones, the
    group's own (persist.write_group_removed), then key 2's so a stale classic record of this id
    does not come back at replay."""
    drop_group(c, group_id)
    c.offsets.delete_group(c, group_id)
    delete_group(c, group_id)
    c.records.append(GroupTombstone(group_id))


def validate_offset_delete(c: "CoordinatorState", group_id: str) -> tuple[int, Callable[[str], bool]]:
    """ConsumerGroup.validateOffsetDelete checks nothing; topics some member subscribes to are refused."""
    return E.NONE, subscribed_to(c.consumer_groups[group_id])


def subscribed_to(g) -> Callable[[str], bool]:
    """ConsumerGroup.isSubscribedToTopic for OffsetDelete: a topic some member subscribes to, by name
    or resolved regex (an empty group subscribes to nothing)."""
    return (g.subscribed_names() if g.state != G_EMPTY else set()).__contains__
