"""Classic group and member state (Kafka's ClassicGroup / ClassicGroupMember, in our words).

As Kafka's ClassicGroup: states Empty, PreparingRebalance,
CompletingRebalance, Stable, Dead; a generation counter; a leader; the protocol chosen by vote;
static members mapped by group.instance.id; pending members (KIP-394 MEMBER_ID_REQUIRED).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import errors as E
from .assignors.javaorder import java_hashmap_order, java_string_hash  # noqa: F401 (state/format.py)
from .consumer.embedded import Malformed, subscription

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"

VALID_PREVIOUS = {
    EMPTY: {PREPARING},
    PREPARING: {STABLE, COMPLETING, EMPTY},
    COMPLETING: {PREPARING},
    STABLE: {COMPLETING},
    DEAD: {EMPTY, PREPARING, COMPLETING, STABLE, DEAD},
}


class IllegalTransition(RuntimeError):
    pass


@dataclass
class Parked:
    """A request waiting for the group (a JoinGroup until the join completes, a SyncGroup until the
    leader's assignment): the adapter's token and the request version."""
    token: object
    version: int


@dataclass
class ClassicMember:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: Parked | None = None
    awaiting_sync: Parked | None = None
    is_new: bool = False
    join_reason: str | None = None

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise IllegalTransition(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        if self.is_new:
            return False  # new members can expire even while parked in a join
        return self.awaiting_join is not None or self.awaiting_sync is not None


@dataclass
class ClassicGroup:
    group_id: str
    state: str = EMPTY
    previous_state: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)   # instance id -> member id
    pending_members: set[str] = field(default_factory=set)         # MEMBER_ID_REQUIRED ids
    pending_sync: set[str] = field(default_factory=set)
    new_member_added: bool = False
    state_timestamp_ms: int = 0
    awaiting_join_count: int = 0
    # protocol name -> number of members offering it (kept incrementally: the per-join protocol
    # check and the vote's candidate set stay O(#protocols) instead of O(#members))
    protocol_counts: dict[str, int] = field(default_factory=dict)
    # topics the members subscribed to as of the last generation (None: unknown), set with the
    # generation as ClassicGroup.initNextGeneration does; OffsetDelete and offset expiry read it
    subscribed: frozenset[str] | None = None
    # capacity of the broker's `members` HashMap (ClassicGroup): it doubles when more than 3/4 full
    # and never shrinks; with it, member_order() gives that map's iteration order
    member_table: int = 16
    # the config of the coordinator holding the group (ClassicGroups): under Kafka 3.9's Scala
    # coordinator the members sit in a scala.collection.mutable.HashMap instead (member_order)
    cfg: object = field(default=None, repr=False, compare=False)

    # ------------------------------------------------------------------ state
    def transition(self, to: str, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS[to]:
            raise IllegalTransition(f"group {self.group_id}: {self.state} -> {to}")
        self.previous_state, self.state = self.state, to
        self.state_timestamp_ms = now_ms

    # ------------------------------------------------------------------ members
    def add(self, m: ClassicMember) -> None:
        if not self.members:
            self.protocol_type = m.protocol_type
        self.members[m.member_id] = m
        # java.util.HashMap grows past 3/4 full; Scala's mutable.HashMap when an insert reaches 3/4
        scala = self._scala_maps()
        while len(self.members) > self.member_table * 0.75 or (scala and len(self.members) >= self.member_table * 0.75):
            self.member_table *= 2
        self._count_protocols(m, 1)
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id
        if self.leader_id is None:
            self.leader_id = m.member_id
        if m.awaiting_join is not None:
            self.awaiting_join_count += 1

    def remove(self, member_id: str) -> ClassicMember | None:
        m = self.members.pop(member_id, None)
        if m is None:
            return None
        self._count_protocols(m, -1)
        if m.instance_id is not None and self.static_members.get(m.instance_id) == member_id:
            del self.static_members[m.instance_id]
        if m.awaiting_join is not None:
            self.awaiting_join_count -= 1
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            # ClassicGroup.remove: the new leader is the first member the HashMap iterates
            self.leader_id = next((x.member_id for x in self.member_order()), None)
        return m

    def member_order(self) -> list[ClassicMember]:
        """The members in the iteration order of the broker's `HashMap<String, ClassicGroupMember>`:
        by bucket (String.hashCode spread over the table), then by insertion within a bucket (a
        replaced static member is re-inserted). Leader elections, the leader's JoinGroup member list
        and DescribeGroups follow it. Not reproduced: tree bins (8+ ids in one bucket)."""
        mask = self.member_table - 1
        if self._scala_maps():
            # GroupMetadata.members, a Scala mutable.HashMap: a bucket's entries sorted by their (signed)
            # spread hash, then insertion
            def scala_bucket(m: ClassicMember) -> tuple[int, int]:
                h = java_string_hash(m.member_id)
                h ^= h >> 16
                return h & mask, h - (1 << 32) if h & 0x80000000 else h
            return sorted(self.members.values(), key=scala_bucket)

        def bucket(m: ClassicMember) -> int:
            h = java_string_hash(m.member_id)
            return (h ^ (h >> 16)) & mask
        return sorted(self.members.values(), key=bucket)

    def _scala_maps(self) -> bool:
        return self.cfg is not None and self.cfg.scala_coordinator()

    def set_protocols(self, m: ClassicMember, protocols: list[tuple[str, bytes]]) -> None:
        if m.member_id in self.members:
            self._count_protocols(m, -1)
            m.protocols = protocols
            self._count_protocols(m, 1)
        else:
            m.protocols = protocols

    def _count_protocols(self, m: ClassicMember, delta: int) -> None:
        counts = self.protocol_counts
        for name in set(m.protocol_names()):
            n = counts.get(name, 0) + delta
            if n:
                counts[name] = n
            else:
                del counts[name]

    def set_awaiting_join(self, m: ClassicMember, parked: Parked | None) -> None:
        if m.awaiting_join is None and parked is not None:
            self.awaiting_join_count += 1
        elif m.awaiting_join is not None and parked is None:
            self.awaiting_join_count -= 1
        m.awaiting_join = parked

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def validate_member(self, member_id: str, instance_id: str | None) -> int:
        """ClassicGroup.validateMember: the instance id (when given) held by `member_id`, and a member
        with that id; the error code, E.NONE when valid."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                return E.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return E.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return E.UNKNOWN_MEMBER_ID
        return E.NONE

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> ClassicMember:
        m = self.members.pop(old_id)
        was_leader = self.leader_id == old_id
        m.member_id = new_id
        self.members[new_id] = m
        self.static_members[instance_id] = new_id
        if was_leader:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
        return m

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.awaiting_join_count and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        # ClassicGroup.rebalanceTimeoutMs: the largest member's, never below 0 (a member's -1 counts as 0)
        return max(0, max((m.rebalance_timeout_ms for m in self.members.values()), default=0))

    # ------------------------------------------------------------------ protocols
    def candidate_protocols(self) -> set[str]:
        """Protocols every member offers."""
        n = len(self.members)
        if not n:
            return set()
        return {name for name, count in self.protocol_counts.items() if count == n}

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if self.state == EMPTY:
            return bool(protocol_type) and bool(names)
        if protocol_type != self.protocol_type:
            return False
        n, counts = len(self.members), self.protocol_counts
        return any(counts.get(name, 0) == n for name in names)

    def select_protocol(self) -> str:
        """Each member votes for its first protocol every member supports; most votes wins.
        Ties go as in Kafka: the first entry of a Java HashMap<String,Integer> in iteration order."""
        cands = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.member_order():
            v = m.vote(cands)
            votes[v] = votes.get(v, 0) + 1
        best = max(votes.values())
        tied = [p for p in java_hashmap_order(list(votes)) if votes[p] == best]
        return tied[0]

    def maybe_elect_joined_leader(self) -> bool:
        if self.leader_id is not None and self.leader_id in self.members \
                and self.members[self.leader_id].awaiting_join is not None:
            return True
        for m in self.member_order():      # ClassicGroup.maybeElectNewJoinedLeader: HashMap order
            if m.awaiting_join is not None:
                self.leader_id = m.member_id
                return True
        return False

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Topics of the members' consumer-protocol subscriptions (None = unknown), as
        ClassicGroup.computeSubscribedTopics: only for protocol type "consumer", empty without members."""
        if self.protocol_type != "consumer":
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            try:
                topics.update(subscription(m.metadata(self.protocol_name)).topics)
            except Malformed:
                return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """ClassicGroup.isSubscribedToTopic: by the last generation's subscriptions; when those are
        unknown, a group of the consumer protocol counts as subscribed to every topic."""
        if self.subscribed is None:
            return self.protocol_type == "consumer"
        return topic in self.subscribed


def validate_offset_commit(g: ClassicGroup | None, member_id: str, group_instance_id: str | None,
                           generation_id: int, is_transactional: bool, api_version: int,
                           scala: bool = False) -> int:
    """The error code of an OffsetCommit (`is_transactional` False) or TxnOffsetCommit of version
    `api_version` to the classic group `g`, E.NONE when the commit is accepted: ClassicGroup
    .validateOffsetCommit. Fields the version lacks are ignored: the group instance id before
    OffsetCommit v7; member id, generation and instance id before TxnOffsetCommit v3.

    `g` None (no such group): E.NONE when the commit has no generation (the caller creates the group),
    else GROUP_ID_NOT_FOUND from OffsetCommit v9 / TxnOffsetCommit v6, ILLEGAL_GENERATION before
    (OffsetMetadataManager.validateOffsetCommit / validateTransactionalOffsetCommit, TxnOffsetCommitRequest
    .supportsGroupIdNotFoundError); an OffsetCommit to Kafka 3.9's Scala coordinator (`scala`) is
    ILLEGAL_GENERATION at every version (GroupCoordinator.handleCommitOffsets)."""
    if is_transactional:
        if api_version < 3:
            member_id, group_instance_id, generation_id = "", None, -1
    elif api_version < 7:
        group_instance_id = None
    if g is None:
        if generation_id < 0:
            return E.NONE
        if is_transactional:
            return E.GROUP_ID_NOT_FOUND if api_version >= 6 else E.ILLEGAL_GENERATION
        return E.GROUP_ID_NOT_FOUND if api_version >= 9 and not scala else E.ILLEGAL_GENERATION
    if g.state == DEAD:
        return E.COORDINATOR_NOT_AVAILABLE
    if generation_id < 0 and g.state == EMPTY:
        return E.NONE       # the admin client, or a consumer without group management
    if generation_id >= 0 or member_id or group_instance_id is not None:
        err = g.validate_member(member_id, group_instance_id)
        if err:
            return err
        if generation_id != g.generation_id:
            return E.ILLEGAL_GENERATION
    elif not is_transactional and g.state != EMPTY:
        return E.UNKNOWN_MEMBER_ID
    if not is_transactional and g.state == COMPLETING:
        return E.REBALANCE_IN_PROGRESS
    return E.NONE


class ClassicGroups(dict):
    """The coordinator's classic groups by id. A group put here reads the coordinator's config (its
    member order follows the release the coordinator answers as: ClassicGroup.member_order)."""

    def __init__(self, cfg) -> None:
        super().__init__()
        self.cfg = cfg

    def __setitem__(self, group_id: str, g: ClassicGroup) -> None:
        g.cfg = self.cfg
        super().__setitem__(group_id, g)
