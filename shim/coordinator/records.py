"""The records every state change is expressed as (in the spirit of Kafka's __consumer_offsets
GroupMetadata and OffsetCommit records). Appended in order to `GroupCoordinator.records`; the
durability layer persists and replays them. A value of None is a tombstone."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MemberRecord:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes      # metadata of the chosen protocol
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataRecord:
    group_id: str
    protocol_type: str | None
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    state_timestamp_ms: int
    members: tuple[MemberRecord, ...]


@dataclass(frozen=True)
class GroupTombstone:
    group_id: str


@dataclass(frozen=True)
class OffsetRecord:
    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None
    topic_id: object = None


@dataclass(frozen=True)
class OffsetTombstone:
    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True)
class TxnOffsetRecord:
    """An offset committed inside a transaction (TxnOffsetCommit), pending until the transaction ends:
    invisible to OffsetFetch; applied as an OffsetRecord on commit, dropped on abort or timeout."""
    group_id: str
    producer_id: int
    producer_epoch: int
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    timeout_ms: int          # how long kshim keeps it without seeing the transaction end


@dataclass(frozen=True)
class TxnOffsetTombstone:
    group_id: str
    producer_id: int
    topic: str
    partition: int
