"""The checks a broker makes on a ShareGroupHeartbeat or StreamsGroupHeartbeat before it looks the
group up, for the ones kshim answers itself: a heartbeat naming a group kshim holds gets Kafka's
answer to the request's first fault, and only a valid request gets the wrong-type answer
(broker_groups.py). Order as the broker: KafkaApis.handleShareGroupHeartbeat (isMemberIdValid),
KafkaApis.handleStreamsGroupHeartbeat (internal and invalid topic names of the topology), then
GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid /
throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures + throwIfStreamsGroupHeartbeatRequestIsInvalid
(Utils.throwIfEmptyString & co.). Each returns (error code, message) or None.
"""

from __future__ import annotations

import re

from kcodec.protocol import Error

from ..coordinator.releases import at_least

INVALID_REQUEST, STREAMS_INVALID_TOPOLOGY = Error.INVALID_REQUEST, Error.STREAMS_INVALID_TOPOLOGY
LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH = -1, -2
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")   # Topic.isInternal
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME = 249


class Invalid(Exception):
    def __init__(self, code: int, message: str | None):
        super().__init__(message)
        self.code, self.message = code, message


def _empty(value, message: str) -> None:             # Utils.throwIfEmptyString (String.trim: chars <= ' ')
    if value is not None and not value.strip("".join(chr(c) for c in range(33))):
        raise Invalid(INVALID_REQUEST, message)


def _not_empty_collection(value, message: str) -> None:   # Utils.throwIfNotEmptyCollection (null too)
    if value is None or len(value) > 0:
        raise Invalid(INVALID_REQUEST, message)


def _null(value, message: str) -> None:
    if value is None:
        raise Invalid(INVALID_REQUEST, message)


def _not_null(value, message: str) -> None:
    if value is not None:
        raise Invalid(INVALID_REQUEST, message)


def share_heartbeat(req) -> tuple[int, str | None] | None:
    try:
        mid = req.member_id
        if mid is None or not mid or len(mid) > 36:          # KafkaApis.isMemberIdValid
            raise Invalid(INVALID_REQUEST, None)   # getErrorResponse: the code only
        _empty(req.member_id, "MemberId can't be empty.")
        _empty(req.group_id, "GroupId can't be empty.")
        _empty(req.rack_id, "RackId can't be empty.")
        if req.member_epoch == 0:
            if not req.subscribed_topic_names:
                raise Invalid(INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        elif req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise Invalid(INVALID_REQUEST, "MemberEpoch is invalid.")
    except Invalid as e:
        return e.code, e.message
    return None


def _valid_topic(name: str) -> bool:                      # Topic.isValid
    return bool(name) and name not in (".", "..") and len(name) <= MAX_TOPIC_NAME and bool(_LEGAL.fullmatch(name))


def streams_heartbeat(req, release: str = "4.4") -> tuple[int, str | None] | None:
    """`release`: from Kafka 4.4 static membership, task offsets and warm-up tasks are supported
    (KAFKA-20169, KAFKA-20116, KAFKA-20665): only a source topic regex is still refused."""
    try:
        topology = req.topology
        if topology is not None:
            required: list[str] = []
            for s in topology.subtopologies or []:
                for name in [*(s.source_topics or []), *(s.repartition_sink_topics or []),
                             *(t.name for t in s.repartition_source_topics or []),
                             *(t.name for t in s.state_changelog_topics or [])]:
                    if name not in required:
                        required.append(name)
            internal = [t for t in required if t in INTERNAL_TOPICS]
            if internal:
                raise Invalid(STREAMS_INVALID_TOPOLOGY, f"Use of Kafka internal topics {','.join(internal)} "
                                                        "in a Kafka Streams topology is prohibited.")
            invalid = [t for t in required if not _valid_topic(t)]
            if invalid:
                raise Invalid(STREAMS_INVALID_TOPOLOGY, f"Topic names {','.join(invalid)} are not valid topic names.")
        # throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures
        if not at_least(release, "4.4"):
            _not_null(req.instance_id, "Static membership is not yet supported.")
            _not_null(req.task_offsets, "TaskOffsets are not supported yet.")
            _not_null(req.task_end_offsets, "TaskEndOffsets are not supported yet.")
            if req.warmup_tasks:
                raise Invalid(INVALID_REQUEST, "WarmupTasks are not supported yet.")
        if topology is not None:
            for s in topology.subtopologies or []:
                if s.source_topic_regex:
                    raise Invalid(INVALID_REQUEST, "Regular expressions for source topics are not supported yet.")
        # throwIfStreamsGroupHeartbeatRequestIsInvalid
        _empty(req.member_id, "MemberId can't be empty.")
        _empty(req.group_id, "GroupId can't be empty.")
        _empty(req.instance_id, "InstanceId can't be empty.")
        _empty(req.rack_id, "RackId can't be empty.")
        if req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise Invalid(INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            _not_empty_collection(req.active_tasks, "ActiveTasks must be empty when (re-)joining.")
            _not_empty_collection(req.standby_tasks, "StandbyTasks must be empty when (re-)joining.")
            _not_empty_collection(req.warmup_tasks, "WarmupTasks must be empty when (re-)joining.")
            _null(topology, "Topology must be non-null when (re-)joining.")
            for s in topology.subtopologies or []:            # throwIfInvalidTopology
                for t in s.state_changelog_topics or []:
                    if t.partitions != 0:
                        raise Invalid(STREAMS_INVALID_TOPOLOGY, f"Changelog topic {t.name} must have an undefined "
                                                                f"partition count, but it is set to {t.partitions}.")
        elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            _null(req.instance_id, "InstanceId can't be null.")
        elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise Invalid(INVALID_REQUEST, f"MemberEpoch is {req.member_epoch}, but must be greater than or "
                                           "equal to -2.")
        if req.active_tasks is not None or req.standby_tasks is not None or req.warmup_tasks is not None:
            for tasks in (req.active_tasks, req.standby_tasks, req.warmup_tasks):
                _null(tasks, "If one task-type is non-null, all must be non-null.")
        if req.member_epoch != 0:
            _not_null(topology, "Topology can only be provided when (re-)joining.")
    except Invalid as e:
        return e.code, e.message
    return None
