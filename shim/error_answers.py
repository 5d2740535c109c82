"""Error-shaped answers: every answer kshim builds to refuse or fail a request, in the real response
shape of its API/version (kcodec's generated classes). One module for every layer that needs one:
fault injection (proxy/faults.py), authorization (authz/apis.py), scale-out (state/ownership.py) and
the group service (a failed state append). The coordinator's own answers stay in the coordinator
(coordinator/responses.py: JoinGroup/SyncGroup answers, used here too).

- A request failed as a whole (`error_body`, `error_frame`): as `AbstractRequest.getErrorResponse`
  in the Kafka clients - every error field the response has is set to the code: the top-level
  `error_code` when the response has one at that version, and one entry per requested group, topic
  and partition (mirrored from the decoded request) with the partition-level error code. Responses
  with neither (e.g. ApiVersions, SASL) are not supported: `supports()` says which API keys are.
- A group request this instance does not serve (`refuse`, `refuse_entries`; scale-out): the group's
  state partition is owned by another instance (NOT_COORDINATOR) or still loading here
  (COORDINATOR_LOAD_IN_PROGRESS), as GroupCoordinatorService maps the runtime's
  NotCoordinatorException / CoordinatorLoadInProgressException into each API's response: per group
  for the batched DescribeGroups, DeleteGroups and OffsetFetch v8+, per partition for
  (Txn)OffsetCommit, top level otherwise; a classic Heartbeat answers NONE while the group loads
  (GroupCoordinatorService.heartbeat).
- A state change that could not be made durable (`append_failed`): the mapped append error instead
  of success (CoordinatorRuntime fails the write's future; the service maps it as for `refuse`).
"""

from __future__ import annotations

from kcodec import api
from kcodec.generated.heartbeat import HeartbeatResponse
from kcodec.generated.leave_group import LeaveGroupResponse
from kcodec.generated.list_groups import ListGroupsResponse
from kcodec.generated.offset_commit import (OffsetCommitResponse, OffsetCommitResponsePartition,
                                            OffsetCommitResponseTopic)
from kcodec.generated.offset_delete import OffsetDeleteResponse
from kcodec.generated.offset_fetch import (OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition,
                                          OffsetFetchResponseTopic)
from kcodec.generated.txn_offset_commit import (TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition,
                                                TxnOffsetCommitResponseTopic)
from kcodec.protocol import ApiKey, Error

from .coordinator.responses import join_error, sync_response

OFFSET_COMMIT, OFFSET_FETCH, HEARTBEAT = ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.HEARTBEAT
JOIN, LEAVE, SYNC = ApiKey.JOIN_GROUP, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP
DESCRIBE, LIST = ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS
TXN_OFFSET_COMMIT = ApiKey.TXN_OFFSET_COMMIT
DELETE_GROUPS, OFFSET_DELETE = ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE
COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR = Error.COORDINATOR_LOAD_IN_PROGRESS, Error.NOT_COORDINATOR
COMMITS = (OFFSET_COMMIT, TXN_OFFSET_COMMIT)     # failed appends answered per partition

_ZERO = b"\x00" * 16


def _mirror_topics(topics, topic_cls, part_cls, parts_attr: str, req_parts_attr: str, index_of, **part_fields):
    """[topic_cls(name, partitions=[part_cls(partition_index, error_code, ...)])] mirrored from a request."""
    out = []
    for t in topics or []:
        kw = {"name": getattr(t, "name", getattr(t, "topic", ""))}
        tid = getattr(t, "topic_id", None)
        if tid is not None and "topic_id" in topic_cls.__slots__:
            kw["topic_id"] = tid
        parts = [part_cls(**{index_of[0]: (p if isinstance(p, int) else getattr(p, index_of[1])), **part_fields})
                 for p in getattr(t, req_parts_attr) or []]
        kw[parts_attr] = parts
        if "topic" in topic_cls.__slots__ and "name" not in topic_cls.__slots__:
            kw["topic"] = kw.pop("name")
        out.append(topic_cls(**kw))
    return out


def _produce(req, v, code):
    from kcodec.generated.produce import PartitionProduceResponse, ProduceResponse, TopicProduceResponse
    return ProduceResponse(responses=_mirror_topics(
        req.topic_data, TopicProduceResponse, PartitionProduceResponse, "partition_responses", "partition_data",
        ("index", "index"), error_code=code, base_offset=-1))


def _fetch(req, v, code):
    from kcodec.generated.fetch import FetchableTopicResponse, FetchResponse, PartitionData
    return FetchResponse(session_id=req.session_id if v >= 7 else 0, responses=_mirror_topics(
        req.topics, FetchableTopicResponse, PartitionData, "partitions", "partitions",
        ("partition_index", "partition"), error_code=code, high_watermark=-1, last_stable_offset=-1,
        log_start_offset=-1))


def _metadata(req, v, code):
    from kcodec.generated.metadata import MetadataResponse, MetadataResponseTopic
    topics = [MetadataResponseTopic(error_code=code, name=t.name, topic_id=t.topic_id or _ZERO)
              for t in req.topics or []]
    return MetadataResponse(topics=topics, controller_id=-1, error_code=code if v >= 13 else 0)


def _find_coordinator(req, v, code):
    from kcodec.generated.find_coordinator import Coordinator, FindCoordinatorResponse
    if v >= 4:
        return FindCoordinatorResponse(coordinators=[
            Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code) for k in req.coordinator_keys])
    return FindCoordinatorResponse(error_code=code, node_id=-1, host="", port=-1)


def _offset_commit(req, v, code):
    return OffsetCommitResponse(topics=_mirror_topics(
        req.topics, OffsetCommitResponseTopic, OffsetCommitResponsePartition, "partitions", "partitions",
        ("partition_index", "partition_index"), error_code=code))


def _txn_offset_commit(req, v, code):
    return TxnOffsetCommitResponse(topics=_mirror_topics(
        req.topics, TxnOffsetCommitResponseTopic, TxnOffsetCommitResponsePartition, "partitions", "partitions",
        ("partition_index", "partition_index"), error_code=code))


def _offset_fetch(req, v, code):
    if v >= 8:
        return OffsetFetchResponse(groups=[OffsetFetchResponseGroup(group_id=g.group_id, error_code=code)
                                           for g in req.groups])
    return OffsetFetchResponse(error_code=code if v >= 2 else 0)


def _describe_groups(req, v, code):
    from kcodec.generated.describe_groups import DescribedGroup, DescribeGroupsResponse
    return DescribeGroupsResponse(groups=[DescribedGroup(error_code=code, group_id=g, group_state="",
                                                         protocol_type="", protocol_data="")
                                          for g in req.groups])


def _delete_groups(req, v, code):
    from kcodec.generated.delete_groups import DeletableGroupResult, DeleteGroupsResponse
    return DeleteGroupsResponse(results=[DeletableGroupResult(group_id=g, error_code=code)
                                         for g in req.groups_names])


def _list_offsets(req, v, code):
    from kcodec.generated.list_offsets import (ListOffsetsPartitionResponse, ListOffsetsResponse,
                                               ListOffsetsTopicResponse)
    return ListOffsetsResponse(topics=_mirror_topics(
        req.topics, ListOffsetsTopicResponse, ListOffsetsPartitionResponse, "partitions", "partitions",
        ("partition_index", "partition_index"), error_code=code, timestamp=-1, offset=-1))


BUILDERS = {0: _produce, 1: _fetch, 2: _list_offsets, 3: _metadata, 8: _offset_commit, 9: _offset_fetch,
            10: _find_coordinator, 15: _describe_groups, 28: _txn_offset_commit, 42: _delete_groups}


def supports(api_key: int) -> bool:
    """True when an error answer can be built for this API (a builder, or a top-level error_code)."""
    if api_key in BUILDERS:
        return True
    try:
        return "error_code" in api.RESPONSES[api_key].__slots__
    except KeyError:
        return False


def error_body(api_key: int, version: int, request, code: int):
    """The response body (a generated class instance) answering `request` with error `code`."""
    build = BUILDERS.get(api_key)
    if build is not None:
        return build(request, version, code)
    cls = api.RESPONSES[api_key]
    if "error_code" not in cls.__slots__:
        raise ValueError(f"no error answer for {api.API_KEYS.get(api_key, api_key)}")
    body = cls()
    body.error_code = code
    if api_key == OFFSET_DELETE:  # a group-level error lists no topics
        body.topics = []
    if code and cls.decode(body.encode(version), version).error_code != code:
        # an ignorable error_code that this version does not have: the answer would read as success
        raise ValueError(f"{api.API_KEYS.get(api_key, api_key)} v{version} has no error code")
    return body


def error_frame(api_key: int, version: int, frame, code: int) -> bytes:
    """Decode the request frame (header + body) and encode the error answer (header + body)."""
    hv = api.request_header_version(api_key, version)
    hdr, pos = api.RequestHeader.decode_from(frame, 0, hv)
    request = api.REQUESTS[api_key].decode_from(bytes(frame), pos, version)[0]   # trailing bytes ignored
    body = error_body(api_key, version, request, code)
    return api.encode_response(api_key, version, hdr.correlation_id, body)


# ---------------------------------------------------------------- groups served elsewhere (scale-out)
def refuse(api_key: int, version: int, req, err: int):
    """The whole answer to a single-group request refused with `err`."""
    if api_key == HEARTBEAT:
        return HeartbeatResponse(error_code=Error.NONE if err == COORDINATOR_LOAD_IN_PROGRESS else err)
    if api_key == JOIN:
        return join_error(version, err, req.member_id or "")
    if api_key == SYNC:
        return sync_response(version, err)
    if api_key == LEAVE:
        return LeaveGroupResponse(error_code=err, members=[])
    if api_key == OFFSET_COMMIT:
        return _offset_commit(req, version, err)
    if api_key == TXN_OFFSET_COMMIT:
        return _txn_offset_commit(req, version, err)
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


def refuse_entries(api_key: int, body, errors: dict[str, int]) -> None:
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


# ---------------------------------------------------------------- a state append that failed
def append_failed(api_key: int, body, err: int):
    """`body` with error `err` (the append error as the coordinator maps it: state/log.py
    coordinator_error below) instead of success - per partition for (Txn)OffsetCommit, per group for
    DeleteGroups, else the top level."""
    if api_key in COMMITS:
        for t in body.topics:
            for p in t.partitions:
                if p.error_code == Error.NONE:
                    p.error_code = err
    elif api_key == DELETE_GROUPS:
        for r in body.results:
            if r.error_code == Error.NONE:
                r.error_code = err
    elif getattr(body, "error_code", None) == Error.NONE:
        body.error_code = err
        if api_key == OFFSET_DELETE:
            body.topics = []
    return body


def coordinator_error(code: int, for_fetch: bool = False) -> int:
    """The error a group API answers when the append of its records failed with `code`, as Kafka's
    CoordinatorOperationExceptionHelper.handleOperationException maps a failed write (UNKNOWN_TOPIC_OR_PARTITION,
    NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER,
    KAFKA_STORAGE_ERROR -> NOT_COORDINATOR; NETWORK_EXCEPTION -> COORDINATOR_LOAD_IN_PROGRESS). kshim's
    appends go to a remote state topic, so the leader-movement errors a local append never sees map as
    NOT_LEADER_OR_FOLLOWER does, and a read (`for_fetch`) answers NOT_COORDINATOR so the client looks up
    the coordinator again."""
    if code in (Error.UNKNOWN_TOPIC_OR_PARTITION, Error.NOT_ENOUGH_REPLICAS, Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                Error.REQUEST_TIMED_OUT):
        return Error.NOT_COORDINATOR if for_fetch else Error.COORDINATOR_NOT_AVAILABLE
    if code in (Error.NOT_LEADER_OR_FOLLOWER, Error.KAFKA_STORAGE_ERROR, Error.LEADER_NOT_AVAILABLE, Error.FENCED_LEADER_EPOCH,
                Error.UNKNOWN_LEADER_EPOCH):
        return Error.NOT_COORDINATOR
    if code == Error.NETWORK_EXCEPTION:
        return Error.COORDINATOR_LOAD_IN_PROGRESS
    return Error.UNKNOWN_SERVER_ERROR
