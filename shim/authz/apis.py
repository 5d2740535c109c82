"""Authorization of the group APIs kshim answers, as the broker's KafkaApis does it (4.3:
handleJoinGroupRequest ... handleConsumerGroupDescribe, one check per API), sans-IO.

`gate(authorizer, caller, api_key, version, request, topic_name)` returns a `Verdict`:
- `answer`: the whole request is refused (or nothing is left for the coordinator): the response body
  to send, in the shape the broker uses (`getErrorResponse`, per-entry errors);
- otherwise `request` (possibly with the unauthorized groups/topics taken out) goes to the
  coordinator, and `patch(body) -> body`, when set, puts the broker's entries for what was taken
  out back into the coordinator's answer, in the broker's order (DescribeGroups and
  ConsumerGroupDescribe: refused groups first; DeleteGroups: last; OffsetCommit, TxnOffsetCommit,
  OffsetDelete: refused topics first; OffsetFetch: refused topics after the coordinator's, refused
  groups in request order), filters ListGroups and "all topics" OffsetFetch answers, and fills
  authorized operations.
Per API: Join/Sync/Heartbeat/Leave/ConsumerGroupHeartbeat GROUP READ (SyncGroup v5+ without
protocol type/name is left to the coordinator's INCONSISTENT_GROUP_PROTOCOL first); OffsetCommit
GROUP READ + TOPIC READ; TxnOffsetCommit TRANSACTIONAL_ID WRITE, GROUP READ, TOPIC READ;
OffsetFetch GROUP DESCRIBE + TOPIC DESCRIBE; OffsetDelete GROUP DELETE + TOPIC READ; DescribeGroups
and ConsumerGroupDescribe GROUP DESCRIBE (+ TOPIC DESCRIBE of every assigned topic for the latter);
ListGroups CLUSTER DESCRIBE or else only the groups the caller may DESCRIBE; DeleteGroups GROUP DELETE;
FindCoordinator (group keys) GROUP DESCRIBE (`find_coordinator`).
"""

from __future__ import annotations

import copy
from typing import Callable, NamedTuple

from kcodec.generated.consumer_group_describe import DescribedGroup as CgdGroup
from kcodec.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from kcodec.generated.delete_groups import DeletableGroupResult
from kcodec.generated.describe_groups import DescribedGroup
from kcodec.generated.offset_commit import (OffsetCommitResponse, OffsetCommitResponsePartition,
                                            OffsetCommitResponseTopic)
from kcodec.generated.offset_delete import (OffsetDeleteResponse, OffsetDeleteResponsePartition,
                                            OffsetDeleteResponseTopic)
from kcodec.generated.offset_fetch import (OffsetFetchResponse, OffsetFetchResponseGroup,
                                           OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
                                           OffsetFetchResponseTopic, OffsetFetchResponseTopics)
from kcodec.generated.txn_offset_commit import (TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition,
                                                TxnOffsetCommitResponseTopic)
from kcodec.protocol import ApiKey, Error

from ..coordinator.responses import join_error, sync_response
from ..error_answers import error_body
from .acl import (CLUSTER, CLUSTER_NAME, DELETE, DESCRIBE, GROUP, READ, TOPIC, TRANSACTIONAL_ID, WRITE, Authorizer,
                  Caller)

TOPIC_AUTHORIZATION_FAILED = Error.TOPIC_AUTHORIZATION_FAILED
GROUP_AUTHORIZATION_FAILED = Error.GROUP_AUTHORIZATION_FAILED
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = Error.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
OFFSET_COMMIT, OFFSET_FETCH = ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP = ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP
SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS = ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS
TXN_OFFSET_COMMIT = ApiKey.TXN_OFFSET_COMMIT
DELETE_GROUPS, OFFSET_DELETE = ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE
CG_HEARTBEAT, CG_DESCRIBE = ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE
CGD_TOPIC_MESSAGE = "The group has described topic(s) that the client is not authorized to describe."
GROUP_AUTH_MESSAGE = "Group authorization failed."

TopicName = Callable[[object], "str | None"]    # topic id -> name (None: unknown id)


class Verdict(NamedTuple):
    answer: object = None
    request: object = None
    patch: Callable | None = None


def gate(authz: Authorizer, caller: Caller, api_key: int, version: int, req, topic_name: TopicName) -> Verdict:
    check = _CHECKS.get(api_key)
    return Verdict(request=req) if check is None else check(authz, caller, version, req, topic_name)


def _can(authz: Authorizer, caller: Caller, op: int, rtype: int, name) -> bool:
    return authz.allowed(caller, op, rtype, name or "")


# ---------------------------------------------------------------- one group, all or nothing
def _join(authz, caller, v, req, _tn):
    if _can(authz, caller, READ, GROUP, req.group_id):
        return Verdict(request=req)
    return Verdict(join_error(v, GROUP_AUTHORIZATION_FAILED))


def _sync(authz, caller, v, req, _tn):
    if v >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return Verdict(request=req)     # INCONSISTENT_GROUP_PROTOCOL comes first (the coordinator's)
    if _can(authz, caller, READ, GROUP, req.group_id):
        return Verdict(request=req)
    return Verdict(sync_response(v, GROUP_AUTHORIZATION_FAILED))


def _group_read(api_key):
    def check(authz, caller, v, req, _tn):
        if _can(authz, caller, READ, GROUP, req.group_id):
            return Verdict(request=req)
        return Verdict(error_body(api_key, v, req, GROUP_AUTHORIZATION_FAILED))
    return check


def _cg_heartbeat(authz, caller, v, req, _tn):
    if not _can(authz, caller, READ, GROUP, req.group_id):
        return Verdict(ConsumerGroupHeartbeatResponse(error_code=GROUP_AUTHORIZATION_FAILED))
    names = set(req.subscribed_topic_names or ())
    if any(not _can(authz, caller, DESCRIBE, TOPIC, n) for n in names):
        return Verdict(ConsumerGroupHeartbeatResponse(error_code=TOPIC_AUTHORIZATION_FAILED))
    return Verdict(request=req)


# ---------------------------------------------------------------- commits: group, then per topic
def _split_topics(authz, caller, topics, op, name_of):
    """(allowed topics, refused topics) in request order; a topic whose id is unknown stays allowed
    (the coordinator answers UNKNOWN_TOPIC_ID, as the broker does before authorizing it)."""
    allowed, refused = [], []
    for t in topics:
        name = name_of(t)
        (allowed if name is None or _can(authz, caller, op, TOPIC, name) else refused).append(t)
    return allowed, refused


def _per_topic(authz, caller, req, op, name_of, topic_cls, part_cls, response_cls, with_id=False, group_level=False):
    """Refused topics answered TOPIC_AUTHORIZATION_FAILED per partition, before the coordinator's
    (the response builders of KafkaApis). Nothing left to commit: answered without the coordinator
    (commits), or the coordinator still judges the group (OffsetDelete: `group_level`), whose
    group-level error replaces the topics."""
    allowed, refused = _split_topics(authz, caller, req.topics, op, name_of)
    if not refused:
        return Verdict(request=req)
    entries = []
    for t in refused:
        kw = {"topic_id": t.topic_id} if with_id else {}
        entries.append(topic_cls(name=t.name, **kw, partitions=[
            part_cls(partition_index=p.partition_index, error_code=TOPIC_AUTHORIZATION_FAILED) for p in t.partitions]))
    if not allowed and not group_level:
        return Verdict(response_cls(topics=entries))

    def patch(body):
        if getattr(body, "error_code", 0) == 0:
            body.topics = entries + list(body.topics)
        return body
    return Verdict(request=_with(req, topics=allowed), patch=patch)


def _offset_commit(authz, caller, v, req, topic_name):
    if not _can(authz, caller, READ, GROUP, req.group_id):
        return Verdict(error_body(OFFSET_COMMIT, v, req, GROUP_AUTHORIZATION_FAILED))
    name_of = (lambda t: topic_name(t.topic_id)) if v >= 10 else (lambda t: t.name)
    return _per_topic(authz, caller, req, READ, name_of, OffsetCommitResponseTopic, OffsetCommitResponsePartition,
                      OffsetCommitResponse, with_id=True)


def _txn_offset_commit(authz, caller, v, req, topic_name):
    if not _can(authz, caller, WRITE, TRANSACTIONAL_ID, req.transactional_id):
        return Verdict(error_body(TXN_OFFSET_COMMIT, v, req, TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    if not _can(authz, caller, READ, GROUP, req.group_id):
        return Verdict(error_body(TXN_OFFSET_COMMIT, v, req, GROUP_AUTHORIZATION_FAILED))
    name_of = (lambda t: topic_name(t.topic_id)) if v >= 6 else (lambda t: t.name)    # v6: by id (KIP-1319)
    return _per_topic(authz, caller, req, READ, name_of, TxnOffsetCommitResponseTopic,
                      TxnOffsetCommitResponsePartition, TxnOffsetCommitResponse, with_id=True)


def _offset_delete(authz, caller, v, req, _tn):
    if not _can(authz, caller, DELETE, GROUP, req.group_id):
        return Verdict(error_body(OFFSET_DELETE, v, req, GROUP_AUTHORIZATION_FAILED))
    return _per_topic(authz, caller, req, READ, lambda t: t.name, OffsetDeleteResponseTopic,
                      OffsetDeleteResponsePartition, OffsetDeleteResponse, group_level=True)


# ---------------------------------------------------------------- OffsetFetch
def _offset_fetch(authz, caller, v, req, topic_name):
    if v >= 8:
        groups = [(g.group_id, g.topics) for g in req.groups]
    else:
        groups = [(req.group_id, req.topics)]
    plans = []          # per requested group: None (refused) or (refused topics | None for "all")
    changed = False
    new_groups = []
    for gid, topics in groups:
        if not _can(authz, caller, DESCRIBE, GROUP, gid):
            plans.append(None)
            changed = True
            continue
        if topics is None:
            plans.append("all")
            changed = True
            new_groups.append(topics)
            continue
        name_of = (lambda t: topic_name(t.topic_id)) if v >= 10 else (lambda t: t.name)
        allowed, refused = _split_topics(authz, caller, topics, DESCRIBE, name_of)
        plans.append(refused)
        changed = changed or bool(refused)
        new_groups.append(allowed)
    if not changed:
        return Verdict(request=req)
    if all(p is None for p in plans):
        return Verdict(_offset_fetch_refused(v, req))
    if v >= 8:
        kept = [g for g, p in zip(req.groups, plans) if p is not None]
        new_req = _with(req, groups=[_with(g, topics=t) for g, t in zip(kept, new_groups)])
    else:
        new_req = _with(req, topics=new_groups[0])

    def patch(body):
        results = list(body.groups) if v >= 8 else None
        out = []
        for i, ((gid, topics), plan) in enumerate(zip(groups, plans)):
            if plan is None:
                out.append(OffsetFetchResponseGroup(group_id=gid, error_code=GROUP_AUTHORIZATION_FAILED, topics=[]))
                continue
            group = results.pop(0) if v >= 8 else body
            if group.error_code == Error.NONE:
                if plan == "all":
                    group.topics = [t for t in group.topics if _can(authz, caller, DESCRIBE, TOPIC, t.name)]
                elif plan:
                    group.topics = list(group.topics) + [_fetch_refused_topic(v, t) for t in plan]
            out.append(group)
        if v >= 8:
            body.groups = out
        return body
    return Verdict(request=new_req, patch=patch)


def _fetch_refused_topic(v: int, t):
    if v >= 8:
        return OffsetFetchResponseTopics(name=t.name, topic_id=t.topic_id if v >= 10 else None, partitions=[
            OffsetFetchResponsePartitions(partition_index=i, committed_offset=-1,
                                          error_code=TOPIC_AUTHORIZATION_FAILED) for i in t.partition_indexes])
    return OffsetFetchResponseTopic(name=t.name, partitions=[
        OffsetFetchResponsePartition(partition_index=i, committed_offset=-1, error_code=TOPIC_AUTHORIZATION_FAILED)
        for i in t.partition_indexes])


def _offset_fetch_refused(v: int, req):
    """Every group refused (OffsetFetchResponse.groupError for each)."""
    if v >= 8:
        return OffsetFetchResponse(groups=[OffsetFetchResponseGroup(group_id=g.group_id, topics=[],
                                                                    error_code=GROUP_AUTHORIZATION_FAILED)
                                           for g in req.groups])
    if v >= 2:
        return OffsetFetchResponse(error_code=GROUP_AUTHORIZATION_FAILED, topics=[])
    return OffsetFetchResponse(error_code=Error.NONE, topics=[     # v1: the error on every partition
        OffsetFetchResponseTopic(name=t.name, partitions=[
            OffsetFetchResponsePartition(partition_index=i, committed_offset=-1, metadata="",
                                         error_code=GROUP_AUTHORIZATION_FAILED) for i in t.partition_indexes])
        for t in req.topics or ()])


# ---------------------------------------------------------------- many groups
def _describe_groups(authz, caller, v, req, _tn):
    refused = [g for g in req.groups if not _can(authz, caller, DESCRIBE, GROUP, g)]
    ops = v >= 3 and req.include_authorized_operations
    entries = [DescribedGroup(group_id=g, error_code=GROUP_AUTHORIZATION_FAILED, group_state="",
                              protocol_type="", protocol_data="", members=[]) for g in refused]
    if refused and len(refused) == len(req.groups):
        return Verdict(_describe_groups_answer(entries))
    if not refused and not ops:
        return Verdict(request=req)
    refused_set = set(refused)

    def patch(body):
        if ops:
            for g in body.groups:
                if g.error_code == Error.NONE:
                    g.authorized_operations = authz.authorized_operations(caller, GROUP, g.group_id)
        body.groups = entries + list(body.groups)
        return body
    return Verdict(request=_with(req, groups=[g for g in req.groups if g not in refused_set]), patch=patch)


def _describe_groups_answer(entries):
    from kcodec.generated.describe_groups import DescribeGroupsResponse
    return DescribeGroupsResponse(groups=entries)


def _cg_describe(authz, caller, v, req, _tn):
    refused = [g for g in req.group_ids if not _can(authz, caller, DESCRIBE, GROUP, g)]
    refused_set = set(refused)
    entries = [CgdGroup(group_id=g, error_code=GROUP_AUTHORIZATION_FAILED) for g in refused]
    ops = req.include_authorized_operations

    def patch(body):
        groups = list(body.groups)
        if ops:
            for g in groups:
                if g.error_code == Error.NONE:
                    g.authorized_operations = authz.authorized_operations(caller, GROUP, g.group_id)
        out = []
        for g in entries + groups:
            names = {tp.topic_name for m in g.members for a in (m.assignment, m.target_assignment)
                     if a is not None for tp in a.topic_partitions}
            if any(not _can(authz, caller, DESCRIBE, TOPIC, n) for n in names):
                g = CgdGroup(group_id=g.group_id, error_code=TOPIC_AUTHORIZATION_FAILED,
                             error_message=CGD_TOPIC_MESSAGE, members=[])
            out.append(g)
        body.groups = out
        return body
    if refused and len(refused) == len(req.group_ids):
        from kcodec.generated.consumer_group_describe import ConsumerGroupDescribeResponse
        return Verdict(ConsumerGroupDescribeResponse(groups=entries))
    return Verdict(request=_with(req, group_ids=[g for g in req.group_ids if g not in refused_set]), patch=patch)


def _delete_groups(authz, caller, v, req, _tn):
    distinct = list(dict.fromkeys(req.groups_names))
    refused = [g for g in distinct if not _can(authz, caller, DELETE, GROUP, g)]
    if not refused:
        return Verdict(request=req)
    entries = [DeletableGroupResult(group_id=g, error_code=GROUP_AUTHORIZATION_FAILED) for g in refused]
    if len(refused) == len(distinct):
        from kcodec.generated.delete_groups import DeleteGroupsResponse
        return Verdict(DeleteGroupsResponse(results=entries))
    refused_set = set(refused)

    def patch(body):
        body.results = list(body.results) + entries
        return body
    return Verdict(request=_with(req, groups_names=[g for g in distinct if g not in refused_set]), patch=patch)


def _list_groups(authz, caller, v, req, _tn):
    if _can(authz, caller, DESCRIBE, CLUSTER, CLUSTER_NAME):
        return Verdict(request=req)

    def patch(body):
        body.groups = [g for g in body.groups if _can(authz, caller, DESCRIBE, GROUP, g.group_id)]
        return body
    return Verdict(request=req, patch=patch)


def find_coordinator(authz: Authorizer, caller: Caller, version: int, req, body):
    """FindCoordinator for group keys: keys the caller may not DESCRIBE get GROUP_AUTHORIZATION_FAILED
    (v4+ per key, node -1; v0-3 the old error answer with its message)."""
    if version >= 4:
        for c in body.coordinators:
            if not _can(authz, caller, DESCRIBE, GROUP, c.key):
                c.error_code, c.node_id, c.host, c.port = GROUP_AUTHORIZATION_FAILED, -1, "", -1
                c.error_message = ""           # KafkaApis sets none at v4+: the field's default
        return body
    if _can(authz, caller, DESCRIBE, GROUP, req.key):
        return body
    from kcodec.generated.find_coordinator import FindCoordinatorResponse
    return FindCoordinatorResponse(error_code=GROUP_AUTHORIZATION_FAILED,
                                   error_message=GROUP_AUTH_MESSAGE if version >= 1 else "",
                                   node_id=-1, host="", port=-1)


def _with(obj, **fields):
    out = copy.copy(obj)
    for k, val in fields.items():
        setattr(out, k, val)
    return out


_CHECKS = {
    JOIN_GROUP: _join, SYNC_GROUP: _sync, HEARTBEAT: _group_read(HEARTBEAT), LEAVE_GROUP: _group_read(LEAVE_GROUP),
    CG_HEARTBEAT: _cg_heartbeat, OFFSET_COMMIT: _offset_commit, TXN_OFFSET_COMMIT: _txn_offset_commit,
    OFFSET_DELETE: _offset_delete, OFFSET_FETCH: _offset_fetch, DESCRIBE_GROUPS: _describe_groups,
    CG_DESCRIBE: _cg_describe, DELETE_GROUPS: _delete_groups, LIST_GROUPS: _list_groups,
}
