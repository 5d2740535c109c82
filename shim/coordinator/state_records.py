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


@dataclass(slots=True, unsafe_hash=True)   # not frozen: built per committed partition (the hot path);
class OffsetRecord:                          # treat it as immutable all the same
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
    transactional_id: str | None = None     # (None: written before kshim kept it)
    marker_floor: int = -1   # the transaction's markers come after this offset of the group's __consumer_offsets partition


@dataclass(frozen=True)
class TxnOffsetTombstone:
    group_id: str
    producer_id: int
    topic: str
    partition: int


# ---- KIP-848 consumer groups (shim/coordinator/consumer/; state-topic keys 5-8) -----------------
@dataclass(frozen=True)
class ConsumerGroupRecord:
    """A consumer group exists: its group epoch and the epoch (and time) of its target assignment."""
    group_id: str
    group_epoch: int
    assignment_epoch: int
    assignment_timestamp_ms: int


@dataclass(frozen=True)
class ConsumerGroupTombstone:
    group_id: str


@dataclass(frozen=True)
class ConsumerMemberRecord:
    """A member's identity and subscription (Kafka's ConsumerGroupMemberMetadata)."""
    group_id: str
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    server_assignor: str | None
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    # a classic-protocol member (KIP-848 online migration: ClassicMemberMetadata): (session timeout ms, ((protocol name, metadata bytes), ...))
    classic: tuple | None = None


@dataclass(frozen=True)
class ConsumerMemberTombstone:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ConsumerTargetRecord:
    """A member's target assignment: ((topic id, (partition, ...)), ...) in sorted order."""
    group_id: str
    member_id: str
    assignment: tuple


@dataclass(frozen=True)
class ConsumerTargetTombstone:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ConsumerCurrentRecord:
    """A member's reconciliation state: epochs, state code, assigned partitions with the epoch each was
    assigned at ((topic id, ((partition, epoch), ...)), ...), partitions pending revocation (the same
    shape: each keeps the epoch it was assigned at)."""
    group_id: str
    member_id: str
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: tuple
    pending_revocation: tuple


@dataclass(frozen=True)
class ConsumerCurrentTombstone:
    group_id: str
    member_id: str


CONSUMER_RECORDS = (ConsumerGroupRecord, ConsumerGroupTombstone, ConsumerMemberRecord, ConsumerMemberTombstone,
                    ConsumerTargetRecord, ConsumerTargetTombstone, ConsumerCurrentRecord, ConsumerCurrentTombstone)
