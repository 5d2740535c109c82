"""The group coordinator: dispatch, timers and the classic rebalance mechanics (GroupMetadataManager's
prepareRebalance / completeClassicGroupJoin / expirePendingSync).

Sans-IO: `handle(api_key, version, request, token, ...)` and `tick(now_ms)` return the responses
that are ready (`Respond(token, body)`), possibly for requests parked earlier; `records` is the
append-only list of state records; `next_deadline()` says when to call `tick` again. Time only
moves when the caller passes `now_ms`. Nothing here touches a socket, a thread or the wall clock.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Callable

from kcodec.generated.join_group import JoinGroupResponseMember

from . import errors as E
from .metadata import TopicCatalog
from .group import COMPLETING, DEAD, EMPTY, PREPARING, STABLE, ClassicGroup, ClassicMember
from .records import GroupMetadataRecord, MemberRecord
from .uncommitted import Uncommitted
# the answers' shapes per version live in responses.py; join.py, sync.py and consumer/ import them from here
from .responses import _for_version, join_error, join_response, sync_response  # noqa: F401
from .timers import Timers


@dataclass
class CoordinatorConfig:
    """Broker settings that shape classic groups, with Apache Kafka's defaults."""
    initial_rebalance_delay_ms: int = 3000       # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000           # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000        # group.max.session.timeout.ms
    max_size: int = 2**31 - 1                    # group.max.size
    new_member_join_timeout_ms: int = 300000     # fixed in Kafka
    offset_metadata_max_bytes: int = 4096        # offset.metadata.max.bytes
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes
    # KIP-848 consumer groups (shim/coordinator/consumer/): group.consumer.*
    consumer_session_timeout_ms: int = 45000     # group.consumer.session.timeout.ms
    consumer_heartbeat_interval_ms: int = 5000   # group.consumer.heartbeat.interval.ms
    consumer_max_size: int = 2**31 - 1           # group.consumer.max.size
    consumer_assignors: tuple[str, ...] = ("uniform", "range")   # group.consumer.assignors
    consumer_assignment_interval_ms: int = 1000  # group.consumer.assignment.interval.ms
    offsets_retention_check_interval_ms: int = 600000  # offsets.retention.check.interval.ms
    # group.consumer.migration.policy (§D.9): bidirectional, upgrade, downgrade, disabled
    consumer_migration_policy: str = "bidirectional"

    def upgrade_enabled(self) -> bool:
        return self.consumer_migration_policy in ("bidirectional", "upgrade")

    def downgrade_enabled(self) -> bool:
        return self.consumer_migration_policy in ("bidirectional", "downgrade")


@dataclass
class Respond:
    token: object
    body: object


# api key -> versions kshim's coordinator answers
VERSIONS: dict[int, tuple[int, int]] = {
    11: (0, 9),   # JoinGroup
    14: (0, 5),   # SyncGroup
    12: (0, 4),   # Heartbeat
    13: (0, 5),   # LeaveGroup
    15: (0, 6),   # DescribeGroups
    16: (0, 5),   # ListGroups
    42: (0, 2),   # DeleteGroups
    8: (2, 10),   # OffsetCommit (v10: topics by id)
    9: (1, 10),   # OffsetFetch
    47: (0, 0),   # OffsetDelete
    28: (0, 5),   # TxnOffsetCommit (completed by the client's EndTxn: txn_offsets.py)
    68: (0, 1),   # ConsumerGroupHeartbeat (KIP-848: consumer/heartbeat.py)
    69: (0, 1),   # ConsumerGroupDescribe (consumer/describe.py)
}


class GroupCoordinator:
    def __init__(self, config: CoordinatorConfig | None = None, now_ms: int = 0,
                 new_uuid: Callable[[], str] | None = None,
                 topics: "TopicCatalog | dict[str, int] | None" = None,
                 on_event: Callable[[dict], None] | None = None):
        from . import admin, join, leave, offsets, sync, txn_offsets
        self.cfg = config or CoordinatorConfig()
        self.now = now_ms
        self.groups: dict[str, ClassicGroup] = {}
        self.timers = Timers()
        self.join_polling: set[str] = set()      # see complete_join
        self.records: list = []
        self.out: list[Respond] = []
        self.offsets = offsets.OffsetStore()
        self.txns = txn_offsets.PendingTxns()     # pending transactional offsets
        self.uncommitted = Uncommitted()         # groups not yet visible to reads: uncommitted.py
        self._uuid = new_uuid or (lambda: str(uuid.uuid4()))
        # live metadata of the upstream cluster (names, ids, partition counts): metadata.py
        self.topics = topics if isinstance(topics, TopicCatalog) else TopicCatalog(topics)
        self.on_event = on_event
        self.metadata_listeners: list[Callable[["GroupCoordinator", set[str]], None]] = []
        self.handlers = {
            11: join.handle_join, 14: sync.handle_sync, 12: sync.handle_heartbeat, 13: leave.handle_leave,
            15: admin.describe_groups, 16: admin.list_groups, 42: admin.delete_groups,
            8: offsets.offset_commit, 9: offsets.offset_fetch, 47: offsets.offset_delete,
            28: txn_offsets.txn_offset_commit,
        }
        from .consumer import install as install_consumer_groups
        install_consumer_groups(self)       # c.consumer_groups, APIs 68/69, classic APIs on consumer groups

    # ------------------------------------------------------------------ inputs
    def handle(self, api_key: int, version: int, request, token, client_id: str = "",
               client_host: str = "", now_ms: int | None = None,
               topic_filter: Callable[[str], bool] | None = None) -> list[Respond]:
        if now_ms is not None:
            self._advance(now_ms)
        self.handlers[api_key](self, Ctx(token, version, client_id or "", client_host or "", topic_filter), request)
        self._poll_joins()
        return self._drain()

    def end_transaction(self, producer_id: int, committed: bool, now_ms: int | None = None,
                        producer_epoch: int | None = None) -> list[Respond]:
        """The transaction coordinator accepted EndTxn(producer_id, committed): the producer's pending
        transactional offsets become committed offsets, or are dropped (records in `records`)."""
        from .txn_offsets import end_transaction
        if now_ms is not None:
            self._advance(now_ms)
        end_transaction(self, producer_id, committed, producer_epoch)
        return self._drain()

    def producer_initialized(self, producer_id: int, producer_epoch: int, transaction_timeout_ms: int,
                             now_ms: int | None = None) -> list[Respond]:
        """InitProducerId answered for a transactional producer (its timeout; older epochs abort)."""
        from .txn_offsets import producer_initialized
        if now_ms is not None:
            self._advance(now_ms)
        producer_initialized(self, producer_id, producer_epoch, transaction_timeout_ms)
        return self._drain()

    def metadata_updated(self, now_ms: int | None = None) -> list[Respond]:
        """The adapter refreshed `topics` and something changed: offsets of deleted topics go (as the
        broker's coordinator tombstones them when it sees the deletion); then each listener in
        `metadata_listeners` runs (consumer groups re-resolve subscriptions there)."""
        from .offsets import drop_deleted_topics
        if now_ms is not None:
            self._advance(now_ms)
        deleted = self.topics.take_deleted()
        if deleted:
            drop_deleted_topics(self, deleted)
        for listener in self.metadata_listeners:
            listener(self, deleted)
        return self._drain()

    def expire_offsets(self, now_ms: int | None = None) -> list[Respond]:
        """The periodic cleanup (offsets.retention.check.interval.ms): expired offsets are tombstoned,
        Empty groups without offsets deleted (retention.py)."""
        from .retention import expire_offsets
        if now_ms is not None:
            self._advance(now_ms)
        expire_offsets(self)
        return self._drain()

    def replay(self, record, now_ms: int | None = None) -> None:
        """Apply one record read back from the state topic (replay.py); no records, no responses."""
        from .replay import replay
        if now_ms is not None:
            self._advance(now_ms)
        replay(self, record)

    def unload(self, group_ids, error: int = E.NOT_COORDINATOR) -> list[Respond]:
        """Forget these groups (their state partition moved to another kshim): parked joins and syncs
        are answered `error`, their timers and pending transactional offsets go; no records."""
        for gid in group_ids:
            g = self.groups.pop(gid, None)
            if g is not None:
                for m in g.members.values():
                    if m.awaiting_join is not None:
                        self.respond(m.awaiting_join.token, join_error(m.awaiting_join.version, error, m.member_id))
                    if m.awaiting_sync is not None:
                        self.respond(m.awaiting_sync.token, sync_response(m.awaiting_sync.version, error))
                for mid in [*g.members, *g.pending_members]:
                    self.timers.cancel(("hb", gid, mid))
                self.timers.cancel(("join", gid))
                self.timers.cancel(("sync", gid))
                self.join_polling.discard(gid)
            cg = self.consumer_groups.pop(gid, None)
            if cg is not None:                     # KIP-848 group: its members' timers go too
                from .consumer.membership import cancel_member_timers
                for mid in cg.members:
                    cancel_member_timers(self, gid, mid)
            self.offsets.by_group.pop(gid, None)
            for pid in sorted(self.txns.by_group.get(gid, ())):
                for key in [k for k in self.txns.by_producer.get(pid, {}) if k[0] == gid]:
                    self.txns.remove(pid, key)
                if pid not in self.txns.by_producer:
                    self.timers.cancel(("txn", pid))
        return self._drain()

    def tick(self, now_ms: int) -> list[Respond]:
        self._advance(now_ms)
        return self._drain()

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def _advance(self, now_ms: int) -> None:
        # fire timers one deadline at a time so each runs with the clock at its own deadline
        while True:
            nxt = self.timers.next_deadline()
            if nxt is None or nxt > now_ms:
                break
            self.now = max(self.now, nxt)
            self.timers.fire_due(nxt)
            self._poll_joins()
        self.now = max(self.now, now_ms)

    def _poll_joins(self) -> None:
        # groups whose join completion the broker retries with a 0 ms timer (complete_join): try once
        # after each event; complete_join puts a group back while it still cannot complete
        if self.join_polling:
            for gid in sorted(self.join_polling):
                self.join_polling.discard(gid)
                g = self.groups.get(gid)
                if g is not None and g.state == PREPARING:
                    self.complete_join(g)

    def _drain(self) -> list[Respond]:
        self.uncommitted.settle(self)
        out, self.out = self.out, []
        return out

    # ------------------------------------------------------------------ outputs
    def respond(self, token, body) -> None:
        self.out.append(Respond(token, body))

    def event(self, kind: str, group: str, **fields) -> None:
        if self.on_event is not None:
            self.on_event({"event": kind, "group": group, "ts": self.now, **fields})

    def new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{self._uuid()}"

    def write_empty_group(self, g: ClassicGroup) -> None:
        """The record that persists a group's creation: type and generation, no members (§A.1.6)."""
        self.records.append(GroupMetadataRecord(g.group_id, g.protocol_type, g.generation_id, None, None,
                                                g.state_timestamp_ms, ()))

    def write_group(self, g: ClassicGroup) -> None:
        self.records.append(GroupMetadataRecord(
            g.group_id, g.protocol_type, g.generation_id, g.protocol_name, g.leader_id, g.state_timestamp_ms,
            tuple(MemberRecord(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                               m.session_timeout_ms, m.metadata(g.protocol_name), m.assignment)
                  for m in g.members.values())))

    def transition(self, g: ClassicGroup, to: str) -> None:
        before = g.state
        g.transition(to, self.now)
        self.event("state", g.group_id, frm=before, to=to, generation=g.generation_id)

    # ------------------------------------------------------------------ heartbeats
    def schedule_heartbeat(self, g: ClassicGroup, member_id: str, timeout_ms: int) -> None:
        gid = g.group_id
        self.timers.schedule(("hb", gid, member_id), self.now + timeout_ms,
                             lambda: self._heartbeat_expired(gid, member_id))

    def cancel_heartbeat(self, g: ClassicGroup, member_id: str) -> None:
        self.timers.cancel(("hb", g.group_id, member_id))

    def _heartbeat_expired(self, gid: str, member_id: str) -> None:
        g = self.groups.get(gid)
        if g is None or g.state == DEAD:
            return
        if member_id in g.pending_members:
            g.pending_members.discard(member_id)
            self.event("pending_member_expired", gid, member=member_id)
            if g.state == PREPARING:
                self.complete_join_if_all_joined(g)   # after a removal: even during the initial delay
            return
        m = g.members.get(member_id)
        if m is not None and not m.has_satisfied_heartbeat():
            self.event("session_timeout", gid, member=member_id, instance=m.instance_id)
            self.remove_member_and_update(g, m, "session timeout expired")

    # ------------------------------------------------------------------ membership
    def remove_member_and_update(self, g: ClassicGroup, m: ClassicMember, reason: str) -> None:
        if m.awaiting_join is not None:
            self.respond(m.awaiting_join.token, join_error(m.awaiting_join.version, E.UNKNOWN_MEMBER_ID, ""))
            g.set_awaiting_join(m, None)
        if m.awaiting_sync is not None:
            self.respond(m.awaiting_sync.token, sync_response(m.awaiting_sync.version, E.UNKNOWN_MEMBER_ID))
            m.awaiting_sync = None
        self.cancel_heartbeat(g, m.member_id)
        g.remove(m.member_id)
        self.event("member_removed", g.group_id, member=m.member_id, instance=m.instance_id, reason=reason)
        if g.state in (STABLE, COMPLETING):
            self.prepare_rebalance(g, f"removing member {m.member_id} on {reason}")
        elif g.state == PREPARING:
            self.complete_join_if_all_joined(g)   # after a removal: even during the initial delay

    # ------------------------------------------------------------------ rebalance
    def prepare_rebalance(self, g: ClassicGroup, reason: str) -> None:
        if g.state == COMPLETING:
            self.reset_and_propagate_error(g, E.REBALANCE_IN_PROGRESS)
        self.timers.cancel(("sync", g.group_id))
        initial = g.state == EMPTY
        self.transition(g, PREPARING)
        self.event("rebalance", g.group_id, reason=reason, generation=g.generation_id)
        if initial:
            delay = self.cfg.initial_rebalance_delay_ms
            remaining = max(g.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial(g, delay, remaining)
        else:
            self.maybe_complete_join_else_schedule(g)

    def _schedule_initial(self, g: ClassicGroup, delay: int, remaining: int) -> None:
        gid = g.group_id

        def fire():
            grp = self.groups.get(gid)
            if grp is None or grp.state != PREPARING:
                return
            if grp.new_member_added and remaining != 0:
                grp.new_member_added = False
                self._schedule_initial(grp, min(delay, remaining), max(remaining - delay, 0))
            else:
                self.complete_join(grp)
        self.timers.schedule(("join", gid), self.now + delay, fire)

    def maybe_complete_join_else_schedule(self, g: ClassicGroup) -> None:
        if g.has_all_members_joined():
            self.complete_join(g)
        else:
            self._schedule_join(g)

    def _schedule_join(self, g: ClassicGroup) -> None:
        gid = g.group_id

        def fire():
            grp = self.groups.get(gid)
            if grp is not None and grp.state == PREPARING:
                self.complete_join(grp)
        self.timers.schedule(("join", gid), self.now + g.rebalance_timeout_ms(), fire)

    def maybe_complete_join(self, g: ClassicGroup) -> None:
        """Complete the join early when everyone has joined, except during the initial delay."""
        if g.state == PREPARING and g.has_all_members_joined() and g.previous_state != EMPTY:
            self.timers.cancel(("join", g.group_id))
            self.complete_join(g)

    def complete_join_if_all_joined(self, g: ClassicGroup) -> None:
        """After a member is removed (session/pending expiry, leave), Kafka completes the join as soon
        as everyone left has joined - unlike a join, this applies during the initial delay too."""
        if g.state == PREPARING and g.has_all_members_joined():
            self.complete_join(g)

    def complete_join(self, g: ClassicGroup) -> None:
        self.join_polling.discard(g.group_id)
        if g.state == DEAD:
            return
        self.timers.cancel(("join", g.group_id))
        for m in list(g.members.values()):
            if m.awaiting_join is None and not m.is_static:
                self.cancel_heartbeat(g, m.member_id)
                g.remove(m.member_id)
                self.event("member_removed", g.group_id, member=m.member_id, reason="did not rejoin")
        if not g.maybe_elect_joined_leader() and g.members:
            # nobody rejoined but static members remain: GroupMetadataManager.completeClassicGroupJoin
            # waits another rebalance timeout. With a timeout of 0 (members joined with
            # rebalanceTimeoutMs <= 0) the broker's timer fires again at once, over and over, so the join
            # completes right after the first event that lets it (a member rejoins, or the last static
            # member goes): the group is polled after each request and timer instead (_poll_joins)
            if g.rebalance_timeout_ms() > 0:
                self._schedule_join(g)
            else:
                self.join_polling.add(g.group_id)
            return
        g.generation_id += 1
        g.protocol_name = g.select_protocol() if g.members else None
        g.subscribed = g.compute_subscribed_topics()       # ClassicGroup.initNextGeneration
        if not g.members:
            # protocol_type is kept: Kafka keeps the type of an emptied group
            self.transition(g, EMPTY)
            self.write_group(g)
            self.event("generation", g.group_id, generation=g.generation_id, members=0)
            return
        self.transition(g, COMPLETING)
        self.event("generation", g.group_id, generation=g.generation_id, members=len(g.members),
                   leader=g.leader_id, protocol=g.protocol_name)
        leader_members = [JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.instance_id,
                                                  metadata=m.metadata(g.protocol_name))
                          for m in g.member_order()]
        for m in g.member_order():      # completeClassicGroupJoin: allMembers(), the broker's HashMap order
            parked = m.awaiting_join
            if parked is not None:
                is_leader = m.member_id == g.leader_id
                self.respond(parked.token, join_response(
                    parked.version, E.NONE, generation_id=g.generation_id, protocol_type=g.protocol_type,
                    protocol_name=g.protocol_name, leader=g.leader_id or "", member_id=m.member_id,
                    members=_for_version(leader_members, parked.version) if is_leader else []))
                g.set_awaiting_join(m, None)
            m.is_new = False
            self.schedule_heartbeat(g, m.member_id, m.session_timeout_ms)
        g.pending_sync = set(g.members)
        self._schedule_sync(g)

    def _schedule_sync(self, g: ClassicGroup) -> None:
        gid, gen = g.group_id, g.generation_id

        def fire():
            grp = self.groups.get(gid)
            if grp is None or grp.generation_id != gen or grp.state not in (COMPLETING, STABLE):
                return
            laggards = [grp.members[mid] for mid in list(grp.pending_sync) if mid in grp.members]
            for m in laggards:
                if m.awaiting_sync is not None:
                    continue
                self.cancel_heartbeat(grp, m.member_id)
                grp.remove(m.member_id)
                self.event("member_removed", gid, member=m.member_id, reason="did not sync in time")
            grp.pending_sync.clear()
            if laggards:
                self.prepare_rebalance(grp, "members failed to sync within the rebalance timeout")
        self.timers.schedule(("sync", gid), self.now + g.rebalance_timeout_ms(), fire)

    def reset_and_propagate_error(self, g: ClassicGroup, error: int) -> None:
        for m in g.members.values():
            m.assignment = b""
            if m.awaiting_sync is not None:
                self.respond(m.awaiting_sync.token, sync_response(m.awaiting_sync.version, error))
                m.awaiting_sync = None
                # as for a successful propagation: a session that expired while parked was ignored
                # and left the member without a heartbeat timer
                self.schedule_heartbeat(g, m.member_id, m.session_timeout_ms)

    def propagate_assignment(self, g: ClassicGroup) -> None:
        for m in g.members.values():
            if m.awaiting_sync is not None:
                self.respond(m.awaiting_sync.token, sync_response(
                    m.awaiting_sync.version, E.NONE, g.protocol_type, g.protocol_name, m.assignment))
                m.awaiting_sync = None
                self.schedule_heartbeat(g, m.member_id, m.session_timeout_ms)


@dataclass(slots=True)
class Ctx:
    token: object
    version: int
    client_id: str
    client_host: str
    # the caller's TOPIC DESCRIBE right, when kshim authorizes (None: every topic); regex
    # subscriptions resolve through it, as the broker filters a regex's topics by the member's rights
    topic_filter: Callable[[str], bool] | None = None
