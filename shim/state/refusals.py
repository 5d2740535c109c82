"""Answers for group requests this kshim instance does not serve (scale-out): the group's state
partition is owned by another instance (NOT_COORDINATOR) or still being loaded here
(COORDINATOR_LOAD_IN_PROGRESS). Shapes as the broker's coordinator answers them (spec §0; per group
for the batched APIs DescribeGroups, DeleteGroups and OffsetFetch v8+, per partition for
(Txn)OffsetCommit, top level otherwise; a classic Heartbeat answers NONE while the group loads).
"""

from __future__ import annotations

from kcodec import api
from kcodec.generated.heartbeat import HeartbeatResponse
from kcodec.generated.leave_group import LeaveGroupResponse
from kcodec.generated.list_groups import ListGroupsResponse
from kcodec.generated.offset_commit import (OffsetCommitResponse, OffsetCommitResponsePartition,
                                            OffsetCommitResponseTopic)
from kcodec.generated.offset_delete import OffsetDeleteResponse
from kcodec.generated.offset_fetch import OffsetFetchResponse, OffsetFetchResponsePartition, OffsetFetchResponseTopic
from kcodec.generated.txn_offset_commit import (TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition,
                                                TxnOffsetCommitResponseTopic)

from ..coordinator.responses import join_error, sync_response

OFFSET_COMMIT, OFFSET_FETCH, JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, LIST = 8, 9, 11, 12, 13, 14, 15, 16
TXN_OFFSET_COMMIT, DELETE_GROUPS, OFFSET_DELETE = 28, 42, 47
COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR = 14, 16
BATCHED = (DESCRIBE, DELETE_GROUPS)


def groups_of(api_key: int, version: int, req) -> tuple[list[str], bool] | None:
    """(group ids, batched) a request is about; None for requests not keyed by group (ListGroups)."""
    if api_key == DESCRIBE:
        return list(req.groups), True
    if api_key == DELETE_GROUPS:
        return list(req.groups_names), True
    if api_key == OFFSET_FETCH and version >= 8:
        return [g.group_id for g in req.groups], True
    gid = getattr(req, "group_id", None)
    if isinstance(gid, str):
        return [gid], False
    return None


def refuse(api_key: int, version: int, req, err: int):
    """The whole answer to a single-group request refused with `err`."""
    if api_key == HEARTBEAT:
        return HeartbeatResponse(error_code=0 if err == COORDINATOR_LOAD_IN_PROGRESS else err)
    if api_key == JOIN:
        return join_error(version, err, req.member_id or "")
    if api_key == SYNC:
        return sync_response(version, err)
    if api_key == LEAVE:
        return LeaveGroupResponse(error_code=err, members=[])
    if api_key == OFFSET_COMMIT:
        return OffsetCommitResponse(topics=[OffsetCommitResponseTopic(
            name=t.name, topic_id=getattr(t, "topic_id", None), partitions=[
                OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=err)
                for p in t.partitions]) for t in req.topics])
    if api_key == TXN_OFFSET_COMMIT:
        return TxnOffsetCommitResponse(topics=[TxnOffsetCommitResponseTopic(name=t.name, partitions=[
            TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=err)
            for p in t.partitions]) for t in req.topics])
    if api_key == OFFSET_DELETE:
        return OffsetDeleteResponse(error_code=err, topics=[])
    if api_key == OFFSET_FETCH:          # v1-7 (v8+ is batched)
        if version >= 2:
            return OffsetFetchResponse(error_code=err, topics=[])
        return OffsetFetchResponse(topics=[OffsetFetchResponseTopic(name=t.name, partitions=[
            OffsetFetchResponsePartition(partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
                                         metadata="", error_code=err) for p in t.partition_indexes])
            for t in req.topics or []])
    if api_key == LIST:
        return ListGroupsResponse(error_code=err, groups=[])
    body = api.RESPONSES[api_key]()     # a group API added later: its top-level error code
    body.error_code = err
    return body


def patch(api_key: int, body, errors: dict[str, int]) -> None:
    """Overwrite the entries of a batched answer whose group this instance does not serve."""
    if api_key == DESCRIBE:
        for g in body.groups:
            err = errors.get(g.group_id)
            if err:
                g.error_code, g.group_state, g.protocol_type, g.protocol_data, g.members = err, "", "", "", []
                if hasattr(g, "error_message"):
                    g.error_message = None
    elif api_key == DELETE_GROUPS:
        for r in body.results:
            if errors.get(r.group_id):
                r.error_code = errors[r.group_id]
    elif api_key == OFFSET_FETCH:
        for g in body.groups:
            if errors.get(g.group_id):
                g.error_code, g.topics = errors[g.group_id], []
