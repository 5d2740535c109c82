"""KIP-848 consumer group and member state (Kafka's ConsumerGroup / ConsumerGroupMember, in our words).

KIP-848: a group epoch (bumped when subscriptions, resolved metadata or membership change), the epoch
of the target assignment, and per member its epoch, previous epoch, reconciliation state (CurrentAssignmentBuilder),
assigned partitions (each with the epoch it was assigned at, KIP-1251), partitions pending
revocation and its target assignment. Group state is derived (EMPTY/ASSIGNING/RECONCILING/STABLE).
`owners` maps every partition assigned or pending revocation to the member holding it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from .assignor_choice import described

# member states (Kafka's MemberState codes, persisted)
STABLE, UNREVOKED, UNRELEASED, UNKNOWN = 0, 1, 2, 127
# group states as the broker reports them (ListGroups, ConsumerGroupDescribe)
G_EMPTY, G_ASSIGNING, G_RECONCILING, G_STABLE, G_DEAD = "Empty", "Assigning", "Reconciling", "Stable", "Dead"

LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2

Assignment = dict  # uuid.UUID -> frozenset[int]


@dataclass(frozen=True)
class ClassicMeta:
    """What a member of the classic protocol joined with (Kafka's ClassicMemberMetadata): its
    JoinGroup session timeout and protocols ((name, metadata bytes), ...) in the order it offered them."""
    session_timeout_ms: int
    protocols: tuple

    @property
    def protocol_name(self) -> str:
        return self.protocols[0][0]


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = STABLE
    assigned: dict = field(default_factory=dict)        # topic id -> {partition: assignment epoch}
    pending_revocation: dict = field(default_factory=dict)   # topic id -> {partition: assignment epoch}
    target: dict = field(default_factory=dict)          # topic id -> frozenset[int]
    session_deadline: int = 0
    session_armed: bool = False
    classic: ClassicMeta | None = None                  # set for members of the classic protocol (online migration)
    recorded_assignor: str | None = None                # server_assignor of its last member record


class ConsumerGroup:
    def __init__(self, group_id: str, group_epoch: int = 0, assignment_epoch: int = 0):
        self.group_id = group_id
        self.group_epoch = group_epoch
        self.assignment_epoch = assignment_epoch
        self.assignment_timestamp_ms = -1          # when the target was last computed (-1 = never)
        self.members: dict[str, ConsumerMember] = {}
        self.static_members: dict[str, str] = {}   # instance id -> member id
        self.owners: dict[uuid.UUID, dict[int, str]] = {}
        self.resolved_cache: dict = {}              # (names, regex) -> topic ids, for topics_version
        self.name_counts: Counter = Counter()      # subscribed topic name -> members
        self.regex_counts: Counter = Counter()     # regex -> members
        self.regex_topics: dict[str, frozenset[str]] = {}   # resolved regexes
        self.regex_filters: dict = {}              # regex -> TOPIC DESCRIBE filter it was resolved with
        self.regex_refreshed_ms: int | None = None  # when the regexes were last resolved (regex_resolution.py)
        self.metadata_snapshot: dict | None = None  # topic id -> partitions, when the epoch was last set
        self.assignor_counts: Counter = Counter()
        self.topics_version = -1                   # TopicCatalog.version this group last resolved against

    # ---------------------------------------------------------------- derived state
    @property
    def state(self) -> str:
        if not self.members:
            return G_EMPTY
        if self.group_epoch > self.assignment_epoch:
            return G_ASSIGNING
        for m in self.members.values():
            if m.state != STABLE or m.member_epoch != self.assignment_epoch:
                return G_RECONCILING
        return G_STABLE

    def subscribed_names(self) -> set[str]:
        names = set(self.name_counts)
        for rx in self.regex_counts:
            names |= self.regex_topics.get(rx, frozenset())
        return names

    def member_topic_names(self, m: ConsumerMember) -> set[str]:
        names = set(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            names |= self.regex_topics.get(m.subscribed_topic_regex, frozenset())
        return names

    def set_instance_id(self, m: ConsumerMember, instance_id: str | None, drop_old: bool) -> None:
        """ConsumerGroup.updateMember -> updateStaticMember: the member's instance id maps to it; the id
        it had before stays mapped to it, except from Kafka 4.4 (`drop_old`, KAFKA-20747)."""
        old = m.instance_id
        if drop_old and old is not None and old != instance_id and self.static_members.get(old) == m.member_id:
            del self.static_members[old]
        m.instance_id = instance_id
        if instance_id is not None:
            self.static_members[instance_id] = m.member_id

    def preferred_assignor(self, default: str) -> str:
        return described(self.assignor_counts, default)

    # ---------------------------------------------------------------- membership
    def add(self, m: ConsumerMember) -> None:
        self.members[m.member_id] = m
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id
        self._count(m, 1)
        self._own(m)

    def remove(self, member_id: str, keep_regexes: bool = False) -> ConsumerMember | None:
        """`keep_regexes`: a static member being replaced, whose successor subscribes next (the
        resolution of a regex they share is kept, as replaceMember leaves it to the regex update)."""
        m = self.members.pop(member_id, None)
        if m is None:
            return None
        if m.instance_id is not None and self.static_members.get(m.instance_id) == member_id:
            del self.static_members[m.instance_id]
        self._count(m, -1)
        self._disown(m)
        if not keep_regexes:
            self._drop_unused_regexes()
        return m

    def _drop_unused_regexes(self) -> None:
        """A regex no member subscribes to any more loses its resolution (the broker's tombstone of
        its ConsumerGroupRegularExpression record)."""
        for rx in [r for r in (*self.regex_topics, *self.regex_filters) if r not in self.regex_counts]:
            self.regex_topics.pop(rx, None)
            self.regex_filters.pop(rx, None)

    def supports_classic_protocols(self, protocol_type: str, names) -> bool:
        """JoinGroup's protocol check on a consumer group: type "consumer" and one of `names` offered by
        every classic member (any name when there is none)."""
        if protocol_type != "consumer":
            return False
        offered = [{n for n, _ in m.classic.protocols} for m in self.members.values() if m.classic is not None]
        return any(all(n in o for o in offered) for n in names)

    def set_subscription(self, m: ConsumerMember, names: tuple[str, ...], regex: str | None,
                         assignor: str | None) -> None:
        self._count(m, -1)
        m.subscribed_topic_names, m.subscribed_topic_regex, m.server_assignor = names, regex, assignor
        self._count(m, 1)
        self._drop_unused_regexes()

    def _count(self, m: ConsumerMember, d: int) -> None:
        for n in m.subscribed_topic_names:
            self.name_counts[n] += d
            if self.name_counts[n] <= 0:
                del self.name_counts[n]
        for key, counter in ((m.subscribed_topic_regex, self.regex_counts), (m.server_assignor, self.assignor_counts)):
            if key:
                counter[key] += d
                if counter[key] <= 0:
                    del counter[key]

    # ---------------------------------------------------------------- ownership
    # owners: topic id -> {partition: member id} (nested, so a partition lookup hashes the topic id once)
    def owner(self, t: uuid.UUID, p: int) -> str | None:
        parts = self.owners.get(t)
        return None if parts is None else parts.get(p)

    def _own(self, m: ConsumerMember) -> None:
        owners, mid = self.owners, m.member_id
        for src in (m.assigned, m.pending_revocation):
            for t, ps in src.items():
                if ps:
                    tp = owners.get(t)
                    if tp is None:
                        tp = owners[t] = {}
                    for p in ps:
                        tp[p] = mid

    def _disown(self, m: ConsumerMember) -> None:
        owners, mid = self.owners, m.member_id
        for src in (m.assigned, m.pending_revocation):
            for t, ps in src.items():
                tp = owners.get(t)
                if tp is None:
                    continue
                for p in ps:
                    if tp.get(p) == mid:
                        del tp[p]

    def set_current(self, m: ConsumerMember, epoch: int, previous: int, state: int, assigned: dict,
                    pending: dict) -> None:
        self._disown(m)
        m.member_epoch, m.previous_member_epoch, m.state = epoch, previous, state
        m.assigned, m.pending_revocation = assigned, pending
        self._own(m)


def regex_unresolved(g: "ConsumerGroup | None", regex: str) -> bool:
    """A member's regex the group has not resolved yet (none when there is no group): the heartbeat
    resolves it (regex_resolution.py), and the group service lists every topic first (needs.py)."""
    return g is None or regex not in g.regex_topics
