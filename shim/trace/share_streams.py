"""Trace records of share groups (KIP-932) and streams groups (KIP-1071), which the broker coordinates.

Heartbeats, describes and the share-group offset admin APIs are traced with their whole body
(`to_json`, as the group APIs are). ShareFetch and ShareAcknowledge are summarised instead
(`share_summary`): the request's group, member, session epoch and per-partition acknowledgement
counts by type; the response's top-level and per-partition error codes and the acquired record
counts. Record bytes never reach the trace (a ShareFetch response holds the records themselves).

Names follow Kafka's ShareFetchRequest.json/ShareFetchResponse.json and
ShareAcknowledgeRequest.json/ShareAcknowledgeResponse.json; acknowledgement types are
org.apache.kafka.clients.consumer.AcknowledgeType (1 ACCEPT, 2 RELEASE, 3 REJECT, 4 RENEW) plus 0
for a gap (KIP-932, "ShareFetch API").
"""

from __future__ import annotations

from kcodec._json import uuid_to_kafka
from kcodec.protocol import ApiKey

SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE = ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE
SHARE_FETCH, SHARE_ACKNOWLEDGE = ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE
DESCRIBE_SHARE_GROUP_OFFSETS = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
ALTER_SHARE_GROUP_OFFSETS = ApiKey.ALTER_SHARE_GROUP_OFFSETS
DELETE_SHARE_GROUP_OFFSETS = ApiKey.DELETE_SHARE_GROUP_OFFSETS
STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_DESCRIBE = ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE

SHARE_APIS = frozenset({SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE, SHARE_FETCH, SHARE_ACKNOWLEDGE,
                        DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS})
STREAMS_APIS = frozenset({STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_DESCRIBE})
# bodies traced whole; ShareFetch/ShareAcknowledge are summarised
SUMMARISED = frozenset({SHARE_FETCH, SHARE_ACKNOWLEDGE})
WHOLE = (SHARE_APIS | STREAMS_APIS) - SUMMARISED
DESCRIBES = frozenset({SHARE_GROUP_DESCRIBE, STREAMS_GROUP_DESCRIBE, DESCRIBE_SHARE_GROUP_OFFSETS})

ACK_TYPES = {0: "gap", 1: "accept", 2: "release", 3: "reject", 4: "renew"}


def _ack_counts(batches) -> dict:
    """Offsets acknowledged per type; one type in a batch covers all of its offsets."""
    counts: dict[str, int] = {}
    for b in batches or ():
        types = list(b.acknowledge_types or ())
        n = b.last_offset - b.first_offset + 1
        if len(types) == 1:
            types = types * max(n, 0)
        for t in types:
            name = ACK_TYPES.get(t, f"type{t}")
            counts[name] = counts.get(name, 0) + 1
    return counts


def _topics(topics, partition) -> list[dict]:
    """Per topic id, `partition(p)` of each of its partitions."""
    return [{"topicId": uuid_to_kafka(t.topic_id), "partitions": [partition(p) for p in t.partitions or ()]}
            for t in topics or ()]


def _ack_partition(p) -> dict:
    part = {"partitionIndex": p.partition_index, "acknowledgementBatches": len(p.acknowledgement_batches or ())}
    acks = _ack_counts(p.acknowledgement_batches)
    if acks:
        part["acknowledged"] = acks
    return part


def _request(msg, fetch: bool) -> dict:
    out = {"groupId": msg.group_id, "memberId": msg.member_id, "shareSessionEpoch": msg.share_session_epoch,
           "topics": _topics(msg.topics, _ack_partition)}
    if fetch:
        out.update(maxWaitMs=msg.max_wait_ms, maxRecords=msg.max_records,
                   forgottenTopicsData=[{"topicId": uuid_to_kafka(t.topic_id), "partitions": list(t.partitions or ())}
                                        for t in msg.forgotten_topics_data or ()])
    return out


def _answer_partition(p) -> dict:
    part = {"partitionIndex": p.partition_index, "errorCode": p.error_code}
    if p.error_message:
        part["errorMessage"] = p.error_message
    if hasattr(p, "acquired_records"):      # ShareFetch
        acquired = p.acquired_records or ()
        part.update(acknowledgeErrorCode=p.acknowledge_error_code,
                    acquiredRecords=sum(a.last_offset - a.first_offset + 1 for a in acquired),
                    acquiredRanges=len(acquired), recordsBytes=len(p.records or b""))
    return part


def _response(msg) -> dict:
    out = {"throttleTimeMs": msg.throttle_time_ms, "errorCode": msg.error_code,
           "responses": _topics(msg.responses, _answer_partition)}
    if msg.error_message:
        out["errorMessage"] = msg.error_message
    return out


def share_summary(api_key: int, msg, is_request: bool) -> dict:
    """The traced body of a ShareFetch or ShareAcknowledge frame (no record bytes)."""
    return _request(msg, api_key == SHARE_FETCH) if is_request else _response(msg)


def described_groups(api_key: int, body: dict, is_request: bool) -> list[str]:
    """The group ids a describe request names, or its response describes."""
    if api_key == DESCRIBE_SHARE_GROUP_OFFSETS or not is_request:
        return [g.get("groupId") for g in body.get("groups") or () if g.get("groupId")]
    return [g for g in body.get("groupIds") or () if g]
