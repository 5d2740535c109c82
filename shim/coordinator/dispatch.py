"""One entry point per group API, each branching on the type of the group it names, as Kafka's
GroupMetadataManager does (classicGroupJoin: a consumer group's JoinGroup goes to
classicGroupJoinToConsumerGroup, any other to classicGroupJoinToClassicGroup).

This is where a request is decided to be a classic group's (join.py, sync.py, leave.py, admin.py,
offsets.py, txn_offsets.py) or a KIP-848 consumer group's (consumer/). Where the consumer path adds
to an answer the classic path built (ListGroups, DeleteGroups, OffsetFetch v9+), the entry point
takes the answer, runs that step, then responds. `HANDLERS` maps each API key to its entry point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from . import admin, errors as E, join, leave, offsets, sync, txn_offsets
from .api_keys import (CONSUMER_GROUP_DESCRIBE, CONSUMER_GROUP_HEARTBEAT, DELETE_GROUPS, DESCRIBE_GROUPS, HEARTBEAT,
                       JOIN_GROUP, LEAVE_GROUP, LIST_GROUPS, OFFSET_COMMIT, OFFSET_DELETE, OFFSET_FETCH,
                       SYNC_GROUP, TXN_OFFSET_COMMIT)
from .consumer import classic_members, consumer_admin, describe, heartbeat, offsets_check
from .responses import sync_response
from .result import Ctx

if TYPE_CHECKING:
    from .coordinator_state import CoordinatorState

# api key -> versions kshim's coordinator answers
VERSIONS: dict[int, tuple[int, int]] = {
    JOIN_GROUP: (0, 9),
    SYNC_GROUP: (0, 5),
    HEARTBEAT: (0, 4),
    LEAVE_GROUP: (0, 5),
    DESCRIBE_GROUPS: (0, 6),
    LIST_GROUPS: (0, 5),
    DELETE_GROUPS: (0, 3),              # v3: a per-group ErrorMessage (KIP-1331)
    OFFSET_COMMIT: (2, 10),              # v10: topics by id
    OFFSET_FETCH: (1, 10),
    OFFSET_DELETE: (0, 0),
    TXN_OFFSET_COMMIT: (0, 6),           # v6: topics by id (KIP-1319); completed by EndTxn or markers: txn_offsets.py
    CONSUMER_GROUP_HEARTBEAT: (0, 1),    # KIP-848: consumer/heartbeat.py
    CONSUMER_GROUP_DESCRIBE: (0, 1),     # consumer/describe.py
}


# ---------------------------------------------------------------------- the classic protocol's APIs
def join_group(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """GroupMetadataManager.classicGroupJoin."""
    cg = c.consumer_groups.get(req.group_id)
    if cg is None:
        return join.handle_join(c, ctx, req)                  # classicGroupJoinToClassicGroup
    if cg.members:
        return classic_members.join(c, ctx, req, cg)          # classicGroupJoinToConsumerGroup
    return join.join_empty_consumer_group(c, ctx, req, cg)    # classicGroupJoinToClassicGroup converts it


def sync_group(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """GroupMetadataManager.classicGroupSync."""
    cg = c.consumer_groups.get(req.group_id)
    if cg is None:
        return sync.handle_sync(c, ctx, req)                  # classicGroupSyncToClassicGroup
    if ctx.version >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return c.respond(ctx.token, sync_response(ctx.version, E.INCONSISTENT_GROUP_PROTOCOL))
    if not cg.members:
        return c.respond(ctx.token, sync_response(ctx.version, E.UNKNOWN_MEMBER_ID))
    return classic_members.sync(c, ctx, req, cg)              # classicGroupSyncToConsumerGroup


def heartbeat_group(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """GroupMetadataManager.classicGroupHeartbeat."""
    cg = c.consumer_groups.get(req.group_id)
    if cg is None:
        return sync.handle_heartbeat(c, ctx, req)             # classicGroupHeartbeatToClassicGroup
    return classic_members.heartbeat(c, ctx, req, cg)         # classicGroupHeartbeatToConsumerGroup


def leave_group(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """GroupMetadataManager.classicGroupLeave."""
    cg = c.consumer_groups.get(req.group_id)
    if cg is None:
        return leave.handle_leave(c, ctx, req)                # classicGroupLeaveToClassicGroup
    return classic_members.leave(c, ctx, req, cg)             # classicGroupLeaveToConsumerGroup


# ---------------------------------------------------------------------- the consumer protocol's APIs
def consumer_group_heartbeat(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """GroupMetadataManager.consumerGroupHeartbeat (it upgrades a classic group: consumer/upgrade.py).
    Without the consumer protocol, KafkaApis.handleConsumerGroupHeartbeat answers UNSUPPORTED_VERSION."""
    if not c.cfg.consumer_protocol:
        return c.respond(ctx.token, heartbeat.error_response(E.UNSUPPORTED_VERSION, None))
    heartbeat.consumer_group_heartbeat(c, ctx, req)


def consumer_group_describe(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """Without the consumer protocol, KafkaApis.handleConsumerGroupDescribe answers every group
    UNSUPPORTED_VERSION (ConsumerGroupDescribeRequest.getErrorDescribedGroupList)."""
    if not c.cfg.consumer_protocol:
        return c.respond(ctx.token, describe.unsupported(req))
    describe.consumer_group_describe(c, ctx, req)


# ---------------------------------------------------------------------- admin APIs, every type
def describe_groups(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """Classic groups only (GroupMetadataManager.describeGroups; a consumer group is 'not a classic group')."""
    admin.describe_groups(c, ctx, req)


def list_groups(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """Classic groups, then consumer groups (GroupCoordinatorShard.listGroups over every type)."""
    body = admin.list_groups(c, ctx, req)
    consumer_admin.list_consumer_groups(c, ctx, req, body)
    c.respond(ctx.token, body)


def delete_groups(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """Each group by its type: the classic answer first; the consumer groups named then get theirs
    (GroupCoordinatorShard.deleteGroups: group.validateDeleteGroup per type)."""
    named_consumer_groups = [gid for gid in (req.groups_names or []) if gid in c.consumer_groups]
    body = admin.delete_groups(c, ctx, req)
    if named_consumer_groups:
        consumer_admin.delete_consumer_groups(c, body)
    c.respond(ctx.token, body)


# ---------------------------------------------------------------------- offsets, every type
def offset_commit(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """OffsetMetadataManager.commitOffset: the group's validateOffsetCommit by its type."""
    if req.group_id in c.consumer_groups:
        return offsets.offset_commit(c, ctx, req, offsets_check.validate_commit)    # ConsumerGroup
    return offsets.offset_commit(c, ctx, req, offsets.validate_classic_commit)      # ClassicGroup


def txn_offset_commit(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """OffsetMetadataManager.commitTransactionalOffset: validateOffsetCommit by the group's type."""
    if req.group_id in c.consumer_groups:
        return txn_offsets.txn_offset_commit(c, ctx, req, offsets_check.validate_txn_commit)
    return txn_offsets.txn_offset_commit(c, ctx, req, txn_offsets.validate_classic_commit)


def offset_fetch(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """OffsetMetadataManager.fetchOffsets; from v9 a consumer group's member epoch is checked
    (ConsumerGroup.validateOffsetFetch): a failed check replaces that group's answer."""
    body = offsets.offset_fetch(c, ctx, req)
    if ctx.version >= 9 and c.consumer_groups:
        offsets_check.apply_fetch_errors(c, req, body)
    c.respond(ctx.token, body)


def offset_delete(c: "CoordinatorState", ctx: Ctx, req) -> None:
    """KafkaApis + OffsetMetadataManager.deleteOffsets: the group's validateOffsetDelete by its type."""
    if req.group_id in c.consumer_groups:
        return offsets.offset_delete(c, ctx, req, consumer_admin.validate_offset_delete)    # ConsumerGroup
    return offsets.offset_delete(c, ctx, req, offsets.validate_classic_offset_delete)       # ClassicGroup


HANDLERS: dict[int, Callable[["CoordinatorState", Ctx, object], None]] = {
    JOIN_GROUP: join_group,
    SYNC_GROUP: sync_group,
    HEARTBEAT: heartbeat_group,
    LEAVE_GROUP: leave_group,
    CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat,
    CONSUMER_GROUP_DESCRIBE: consumer_group_describe,
    DESCRIBE_GROUPS: describe_groups,
    LIST_GROUPS: list_groups,
    DELETE_GROUPS: delete_groups,
    OFFSET_COMMIT: offset_commit,
    TXN_OFFSET_COMMIT: txn_offset_commit,
    OFFSET_FETCH: offset_fetch,
    OFFSET_DELETE: offset_delete,
}
