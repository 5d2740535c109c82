"""What an assignor takes and gives: a member's resolved subscription, a topic's metadata, the
assignment shape and the assignor's error (the package's `assign` and uniform.py / range.py share them)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Mapping

Assignment = dict[str, dict[uuid.UUID, frozenset[int]]]


class AssignorError(Exception):
    """Unknown assignor name (UNSUPPORTED_ASSIGNOR) or an assignment that cannot be computed
    (Kafka's PartitionAssignorException)."""


@dataclass(frozen=True)
class MemberSubscription:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    topic_ids: frozenset[uuid.UUID]                 # resolved subscription (names and regex already resolved)
    assignment: Mapping[uuid.UUID, frozenset[int]]  # the member's current TARGET assignment (stickiness input)


@dataclass(frozen=True)
class TopicMetadata:
    topic_id: uuid.UUID
    name: str
    partitions: int
    partition_racks: Mapping[int, frozenset[str]] = field(default_factory=dict)  # (the uniform and range assignors do not read racks)
