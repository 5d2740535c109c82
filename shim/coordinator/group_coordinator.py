"""The group coordinator's inputs: requests (`handle`), clock ticks, transaction ends, metadata
changes, the retention check, replay and unload. Each returns a `CoordinatorResult`: the responses
that are ready (`Respond(token, body)`, possibly for requests parked earlier) and the records the
call wrote, its only output; `next_deadline()` says when to call `tick` again.

Which code answers a request, by the type of its group: dispatch.py. The clock and timers:
shard_clock.py. Classic rebalances: classic_rebalance.py. Time only moves when the caller passes
`now_ms`. Nothing here touches a socket, a thread or the wall clock.
"""

from __future__ import annotations

from typing import Callable

from . import classic_rebalance, errors as E
from .adoption import adopt_offsets, hand_over
from .config import CoordinatorConfig
from .consumer.consumer_group import ConsumerGroup
from .consumer.timer_keys import cancel_member_timers
from .consumer.target import refresh_group_metadata
from .dispatch import HANDLERS
from .group_config import GroupConfigs
from .classic_group import ClassicGroup, ClassicGroups
from .metadata import TopicCatalog
from .needs import Needs, needs
from .offsets import OffsetStore, drop_deleted_topics
from .replay import replay as replay_record
from .result import CoordinatorResult, Ctx
from .retention import expire_offsets
from .timers import txn_timeout_key
from .coordinator_state import CoordinatorState
from .txn_offsets import PendingTxns, end_transaction, producer_initialized
from .uncommitted import Uncommitted


class GroupCoordinator(CoordinatorState):
    """Group state (classic groups, consumer groups, offsets, pending transactional offsets) over the
    clock (timers, outbox: shard_clock.py)."""

    def __init__(self, config: CoordinatorConfig | None = None, now_ms: int = 0,
                 new_uuid: Callable[[], str] | None = None,
                 topics: "TopicCatalog | dict[str, int] | None" = None,
                 on_event: Callable[[dict], None] | None = None):
        super().__init__(now_ms, new_uuid, on_event)
        self.cfg = config or CoordinatorConfig()
        self.groups: dict[str, ClassicGroup] = ClassicGroups(self.cfg)
        self.consumer_groups: dict[str, ConsumerGroup] = {}     # KIP-848 groups: consumer/
        self.join_polling: set[str] = set()      # see classic_rebalance.complete_join
        self.offsets = OffsetStore()
        self.txns = PendingTxns()                # pending transactional offsets
        self.uncommitted = Uncommitted()         # groups not yet visible to reads: uncommitted.py
        self.group_configs = GroupConfigs()      # the broker's per-group configs: group_config.py
        # live metadata of the upstream cluster (names, ids, partition counts): metadata.py
        self.topics = topics if isinstance(topics, TopicCatalog) else TopicCatalog(topics)

    # ------------------------------------------------------------------ inputs
    def handle(self, api_key: int, version: int, request, token, client_id: str = "",
               client_host: str = "", now_ms: int | None = None,
               topic_filter: Callable[[str], bool] | None = None, marker_floor: int = -1) -> CoordinatorResult:
        if now_ms is not None:
            self._advance(now_ms)
        HANDLERS[api_key](self, Ctx(token, version, client_id or "", client_host or "", topic_filter, marker_floor),
                          request)
        if self.join_polling:                # (poll_joins has nothing to do otherwise)
            classic_rebalance.poll_joins(self)
        return self._finish()

    def end_transaction(self, producer_id: int, committed: bool, now_ms: int | None = None,
                        producer_epoch: int | None = None) -> CoordinatorResult:
        """The transaction coordinator accepted EndTxn(producer_id, committed): the producer's pending
        transactional offsets become committed offsets, or are dropped (records in the result)."""
        self._begin(now_ms)
        end_transaction(self, producer_id, committed, producer_epoch)
        return self._finish()

    def transaction_marker(self, producer_id: int, committed: bool, group_ids, now_ms: int | None = None
                           ) -> CoordinatorResult:
        """A COMMIT or ABORT marker of the producer in the `__consumer_offsets` partition of `group_ids`
        (OffsetMetadataManager.replayEndTransactionMarker): their pending offsets of the producer are
        committed or dropped, whatever the epoch; other groups' stay pending."""
        self._begin(now_ms)
        end_transaction(self, producer_id, committed, None, set(group_ids))
        return self._finish()

    def needs(self, api_key: int, version: int, request) -> Needs:
        """What the request needs fetched from the broker before `handle` can decide it: topics to
        list, group configs to read (needs.py); NOTHING (falsy) on the common path. No state changes."""
        return needs(self, api_key, version, request)

    def pending_offsets(self, group_id: str) -> list:
        """The group's pending transactional offsets (TxnOffsetRecord), by producer id then partition."""
        return self.txns.of_group(group_id)

    def pending_transactions(self) -> dict[tuple[int, str], int]:
        """(producer id, group id) of every transaction holding pending offsets here -> the marker floor
        its offsets were taken with (-1: none known)."""
        out: dict[tuple[int, str], int] = {}
        for pid, offsets in self.txns.by_producer.items():
            for (gid, _, _), rec in offsets.items():
                key = (pid, gid)
                out[key] = max(out.get(key, -1), rec.marker_floor)
        return out

    def txn_commit_unverified(self, group_id: str, now_ms: int | None = None) -> CoordinatorResult:
        """A TxnOffsetCommit that the transaction's verification refused (shim/groupservice/transactions.py).
        Kafka 3.9's Scala GroupCoordinator.handleTxnCommitOffsets adds a missing group (Empty, in memory)
        before it verifies; later coordinators never see the request."""
        self._begin(now_ms)
        if self.cfg.scala_coordinator() and group_id not in self.groups and group_id not in self.consumer_groups:
            self.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=self.now)
        return self._finish()

    def producer_initialized(self, producer_id: int, producer_epoch: int, transaction_timeout_ms: int,
                             now_ms: int | None = None) -> CoordinatorResult:
        """InitProducerId answered for a transactional producer (its timeout; older epochs abort)."""
        self._begin(now_ms)
        producer_initialized(self, producer_id, producer_epoch, transaction_timeout_ms)
        return self._finish()

    def metadata_updated(self, now_ms: int | None = None) -> CoordinatorResult:
        """The adapter refreshed `topics` and something changed: offsets of deleted topics go (as the
        broker's coordinator tombstones them when it sees the deletion); then every consumer group
        re-resolves its regexes and bumps its epoch when its subscribed topics changed (the next
        heartbeats then compute and reconcile)."""
        self._begin(now_ms)
        deleted = self.topics.take_deleted()
        if deleted:
            drop_deleted_topics(self, deleted)
        for g in self.consumer_groups.values():
            refresh_group_metadata(self, g)
        return self._finish()

    def group_configs_updated(self, group_id: str, configs: dict, now_ms: int | None = None) -> CoordinatorResult:
        """The broker's dynamic configs of the GROUP resource `group_id` (its overrides only; {} when
        it has none), as GroupConfigManager.updateGroupConfig receives them: evaluated within the
        broker-level bounds and read from the group's next heartbeat on (group_config.py)."""
        self._begin(now_ms)
        changed, warnings = self.group_configs.update(group_id, configs, self.cfg)
        for w in warnings:                 # GroupConfig.evaluate logs a WARN per capped value
            self.event("group_config_capped", group_id, **w)
        if changed:
            gc = self.group_configs.get(group_id)
            self.event("group_config_updated", group_id, configs={} if gc is None else dict(gc.props))
        return self._finish()

    def expire_offsets(self, now_ms: int | None = None) -> CoordinatorResult:
        """The periodic cleanup (offsets.retention.check.interval.ms): expired offsets are tombstoned,
        empty groups without offsets deleted (retention.py)."""
        self._begin(now_ms)
        expire_offsets(self)
        return self._finish()

    def adopt_offsets(self, group_id: str, offsets: list, now_ms: int | None = None) -> CoordinatorResult:
        """The broker's committed offsets of a group kshim does not hold become kshim's (adoption.py)."""
        self._begin(now_ms)
        adopt_offsets(self, group_id, offsets)
        return self._finish()

    def hand_over(self, group_id: str, now_ms: int | None = None) -> CoordinatorResult:
        """Forget an Empty classic group the broker takes over (adoption.py: a streams join)."""
        self._begin(now_ms)
        hand_over(self, group_id)
        return self._finish()

    def replay(self, record, now_ms: int | None = None) -> None:
        """Apply one record read back from the state topic (replay.py); no records, no responses."""
        if now_ms is not None:
            self._advance(now_ms)
        replay_record(self, record)
        self.records.clear()               # (what replay rebuilds is already in the state topic)

    def unload(self, group_ids, error: int = E.NOT_COORDINATOR) -> CoordinatorResult:
        """Forget these groups (their state partition moved to another kshim): parked joins and syncs
        are answered `error`, their timers and pending transactional offsets go; no records."""
        for gid in group_ids:
            g = self.groups.pop(gid, None)
            if g is not None:
                classic_rebalance.unload_group(self, g, error)
            cg = self.consumer_groups.pop(gid, None)
            if cg is not None:                     # KIP-848 group: its members' timers go too
                for mid in cg.members:
                    cancel_member_timers(self, gid, mid)
            self.offsets.by_group.pop(gid, None)
            for pid in sorted(self.txns.by_group.get(gid, ())):
                for key in [k for k in self.txns.by_producer.get(pid, {}) if k[0] == gid]:
                    self.txns.remove(pid, key)
                if pid not in self.txns.by_producer:
                    self.timers.cancel(txn_timeout_key(pid))
        return self._finish()

    def tick(self, now_ms: int) -> CoordinatorResult:
        self._advance(now_ms)
        return self._finish()

    # ------------------------------------------------------------------ one call's frame
    def _advance(self, now_ms: int) -> None:
        # a classic group whose join completion waits on a 0 ms timer is retried after each timer
        self.advance(now_ms, lambda: classic_rebalance.poll_joins(self))

    def _begin(self, now_ms: int | None) -> None:
        if now_ms is not None:
            self._advance(now_ms)

    def _finish(self) -> CoordinatorResult:
        self.uncommitted.settle(self)
        return self.result()
