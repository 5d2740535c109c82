"""TxnOffsetCommit v0-6 for classic groups and the end of transactions (OffsetMetadataManager
.commitTransactionalOffset and replayEndTransactionMarker).

The transaction coordinator stays the real broker's. An accepted TxnOffsetCommit is held *pending*
per (group, producer id): invisible to OffsetFetch, a RequireStable fetch of its partition answers
UNSTABLE_OFFSET_COMMIT. kshim learns how the transaction ended from the client's EndTxn, which it
forwards to the broker and watches (shim/groupservice/transactions.py), and from the transaction markers the
transaction coordinator writes into the group's `__consumer_offsets` partition, whoever ended the
transaction (shim/groupservice/txn_markers.py): a commit turns the producer's pending offsets into committed
offsets (OffsetRecord), an abort drops them. Pending offsets are also dropped when the producer shows
up with a newer epoch (InitProducerId or a TxnOffsetCommit of a later epoch: the broker aborted the
older transaction) or, where kshim cannot read the markers, when the transaction has been open longer
than its timeout (plus a grace period) without kshim seeing its end.

Every change is a record (TxnOffsetRecord / TxnOffsetTombstone), so pending offsets survive a kshim
restart like committed ones (replay_record).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kcodec.generated.txn_offset_commit import (TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition,
                                                TxnOffsetCommitResponseTopic)

from . import classic_rebalance, errors as E
from .commit_answer import CommitAnswer
from .result import Ctx
from .scala_order import scala_commit_topics
from .classic_group import DEAD, ClassicGroup, validate_offset_commit
from .metadata_size import metadata_too_large
from .state_records import OffsetRecord, TxnOffsetRecord, TxnOffsetTombstone
from .timers import txn_timeout_key

if TYPE_CHECKING:
    from .coordinator_state import CoordinatorState

DEFAULT_TIMEOUT_MS = 15 * 60 * 1000   # the transaction timeout was not observed (InitProducerId)
MIN_TIMEOUT_MS = 60_000               # transaction.timeout.ms default
GRACE_MS = 30_000                     # the broker aborts timed-out transactions on a periodic check
MAX_KNOWN_PRODUCERS = 100_000         # bounded memory of observed transaction timeouts

Key = tuple[str, str, int]            # (group, topic, partition)


class PendingTxns:
    """Pending transactional offsets, by producer id, with an index by group."""

    def __init__(self) -> None:
        self.by_producer: dict[int, dict[Key, TxnOffsetRecord]] = {}
        self.epochs: dict[int, int] = {}       # epoch of each producer's pending offsets
        self.timeouts: dict[int, int] = {}     # transaction timeout per producer id (InitProducerId)
        self.by_group: dict[str, set[int]] = {}
        # the order offsets were written in, which the broker reads from their record offsets when a
        # transaction commits (OffsetMetadataManager.replayEndTransactionMarker keeps the most recent):
        # each pending offset's, and the committed offsets' of groups holding pending ones
        self.written = 0
        self.pending_at: dict[tuple[int, str, str, int], int] = {}       # (producer, group, topic, partition)
        self.committed_at: dict[str, dict[tuple[str, int], int]] = {}    # group -> (topic, partition)

    def committed(self, group_id: str, recs) -> None:
        """Committed offsets written to a group holding pending ones (OffsetStore.put_all)."""
        at = self.committed_at.setdefault(group_id, {})
        for rec in recs:
            self.written += 1
            at[(rec.topic, rec.partition)] = self.written

    def newer_than_committed(self, rec: TxnOffsetRecord) -> bool:
        """The pending offset was written after the partition's committed offset (or there is none
        written since the group first held pending offsets)."""
        at = self.committed_at.get(rec.group_id, {}).get((rec.topic, rec.partition))
        return at is None or self.pending_at.get((rec.producer_id, rec.group_id, rec.topic, rec.partition), 0) > at

    def of_group(self, group_id: str) -> list[TxnOffsetRecord]:
        """The group's pending offsets, by producer id then partition."""
        out: list[TxnOffsetRecord] = []
        for pid in sorted(self.by_group.get(group_id, ())):
            out += sorted((r for k, r in self.by_producer.get(pid, {}).items() if k[0] == group_id),
                          key=lambda r: (r.topic, r.partition))
        return out

    def partitions(self, group_id: str) -> set[tuple[str, int]]:
        out: set[tuple[str, int]] = set()
        for pid in self.by_group.get(group_id, ()):
            out.update((t, p) for g, t, p in self.by_producer.get(pid, {}) if g == group_id)
        return out

    def add(self, rec: TxnOffsetRecord) -> bool:
        """Hold rec; True when it is the producer's first pending offset (its timer starts)."""
        offsets = self.by_producer.get(rec.producer_id)
        first = not offsets
        if offsets is None:
            offsets = self.by_producer[rec.producer_id] = {}
        offsets[(rec.group_id, rec.topic, rec.partition)] = rec
        self.epochs[rec.producer_id] = rec.producer_epoch
        self.by_group.setdefault(rec.group_id, set()).add(rec.producer_id)
        self.written += 1
        self.pending_at[(rec.producer_id, rec.group_id, rec.topic, rec.partition)] = self.written
        return first

    def remove(self, pid: int, key: Key) -> TxnOffsetRecord | None:
        offsets = self.by_producer.get(pid)
        rec = offsets.pop(key, None) if offsets else None
        if rec is None:
            return None
        self.pending_at.pop((pid, *key), None)
        if not any(k[0] == key[0] for k in offsets):
            pids = self.by_group.get(key[0])
            if pids is not None:
                pids.discard(pid)
                if not pids:
                    del self.by_group[key[0]]
                    self.committed_at.pop(key[0], None)
        if not offsets:
            del self.by_producer[pid]
            self.epochs.pop(pid, None)
        return rec


def txn_offset_commit(c: "CoordinatorState", ctx: Ctx, req, validate_group: Callable[..., int]) -> None:
    """`validate_group(c, ctx, req, valid)`: the group's validateOffsetCommit by its type (dispatch.py:
    validate_classic_commit here, or consumer/offsets_check.validate_txn_commit)."""
    results, valid = check_topics(c.topics, req, ctx.version)
    err = _validate(c, ctx, req, valid, validate_group) if valid else E.NONE
    stored: dict[tuple[str, int], int] = {}
    if err == E.NONE:
        txns: PendingTxns = c.txns
        pid, epoch = req.producer_id, req.producer_epoch
        if txns.epochs.get(pid, epoch) < epoch:
            drop_producer(c, pid, "newer producer epoch")
        timeout = txns.timeouts.get(pid, DEFAULT_TIMEOUT_MS)
        for topic, p in valid:
            metadata = p.committed_metadata or ""
            if metadata_too_large(metadata, c.cfg.offset_metadata_max_bytes):
                stored[(topic, p.partition_index)] = E.OFFSET_METADATA_TOO_LARGE
                continue
            rec = TxnOffsetRecord(req.group_id, pid, epoch, topic, p.partition_index, p.committed_offset,
                                  p.committed_leader_epoch if ctx.version >= 2 else -1, metadata, c.now, timeout,
                                  req.transactional_id, ctx.marker_floor)
            c.records.append(rec)
            if txns.add(rec):
                _arm(c, pid, timeout)
            stored[(topic, p.partition_index)] = E.NONE
        if stored:
            c.event("txn_offsets_pending", req.group_id, producer_id=pid, producer_epoch=epoch,
                    partitions=sum(1 for e in stored.values() if e == E.NONE))
    c.respond(ctx.token, txn_commit_answer(results, ctx.version,
                                           lambda name, idx: err or stored.get((name, idx), E.NONE),
                                           c.cfg.scala_coordinator()))


def check_topics(topics, req, version: int):
    """KafkaApis.handleTxnOffsetCommitRequest's metadata check: per request topic (name, topic id, its
    partitions with an error or None when handed to the coordinator), and those handed over as (name,
    partition). v6 names topics by id (KIP-1319): an id the metadata does not know is UNKNOWN_TOPIC_ID
    for all its partitions; older versions name them (UNKNOWN_TOPIC_OR_PARTITION)."""
    results: list[tuple[str, object, list[tuple[int, int | None]]]] = []
    valid = []
    for t in req.topics:
        if version >= 6:
            info = topics.topic(t.topic_id)
            if info is None:
                results.append(("", t.topic_id, [(p.partition_index, E.UNKNOWN_TOPIC_ID) for p in t.partitions]))
                continue
            name, count = info.name, info.partitions
        else:
            name, count = t.name, topics.partitions(t.name)
        parts: list[tuple[int, int | None]] = []
        for p in t.partitions:
            if count is None or not 0 <= p.partition_index < count:
                parts.append((p.partition_index, E.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                parts.append((p.partition_index, None))
                valid.append((name, p))
        results.append((name, t.topic_id, parts))
    return results, valid


def txn_commit_refused(topics, req, version: int, code: int, scala: bool = False) -> TxnOffsetCommitResponse:
    """The answer when GroupCoordinatorService.commitTransactionalOffsets failed before the coordinator
    saw the offsets (the transaction's verification or enlisting, shim/groupservice/txn_verify.py and
    txn_enlist.py): `code` for every partition KafkaApis handed over, after those it refused."""
    results, _ = check_topics(topics, req, version)
    return txn_commit_answer(results, version, lambda name, idx: code, scala)


def txn_commit_answer(results, version: int, code_of, scala: bool = False) -> TxnOffsetCommitResponse:
    """KafkaApis.handleTxnOffsetCommitRequest: the partitions it refused (error in `results`) first,
    then the coordinator's answer (`code_of(topic, partition)`) merged (commit_answer.py), one topic
    per id from v6 (TxnOffsetCommitResponse.TopicIdBuilder), per name before (TopicNameBuilder)."""
    answer = CommitAnswer(lambda t: TxnOffsetCommitResponseTopic(name=t[0], topic_id=t[1], partitions=[]),
                          lambda idx, e: TxnOffsetCommitResponsePartition(partition_index=idx, error_code=e))
    by_id = version >= 6
    accepted = []
    for name, topic_id, parts in results:
        for idx, e in parts:
            if e is not None:
                answer.refuse(topic_id if by_id else name, (name, topic_id), idx, e)
        ok = [TxnOffsetCommitResponsePartition(partition_index=idx, error_code=code_of(name, idx))
              for idx, e in parts if e is None]
        if ok and not scala:
            accepted.append(TxnOffsetCommitResponseTopic(name=name, topic_id=topic_id, partitions=ok))
    if scala:    # Kafka 3.9: each partition once, in the order of its Scala maps (scala_order.py)
        handed = [(name, idx) for name, _, parts in results for idx, e in parts if e is None]
        accepted = [TxnOffsetCommitResponseTopic(name=name, partitions=[
            TxnOffsetCommitResponsePartition(partition_index=idx, error_code=code_of(name, idx)) for idx in indexes])
            for name, indexes in scala_commit_topics(handed)]
    key_of = (lambda t: t.topic_id) if by_id else (lambda t: t.name)
    return TxnOffsetCommitResponse(topics=answer.merge(accepted, key_of))


def _validate(c: "CoordinatorState", ctx: Ctx, req, valid, validate_group) -> int:
    """The checks before the group's own (`validate_group`): a group id (GroupCoordinatorService
    .commitTransactionalOffsets), and a producer epoch not older than one kshim saw."""
    if not req.group_id:
        return E.INVALID_GROUP_ID
    known = c.txns.epochs.get(req.producer_id)
    if known is not None and req.producer_epoch < known:
        return E.INVALID_PRODUCER_EPOCH      # a zombie of a producer kshim saw with a newer epoch
    return validate_group(c, ctx, req, valid)


def validate_classic_commit(c: "CoordinatorState", ctx: Ctx, req, valid) -> int:
    """classic_group.validate_offset_commit for a transactional commit (ClassicGroup.validateOffsetCommit:
    a commit with no identity at all is accepted whatever the state, CompletingRebalance too); a group
    that does not exist is created by a commit without generation (OffsetMetadataManager
    .validateTransactionalOffsetCommit)."""
    g = c.groups.get(req.group_id)
    if g is None and c.cfg.scala_coordinator():
        # Kafka 3.9's GroupCoordinator.handleTxnCommitOffsets adds the group (Empty, in memory) whatever
        # the generation, then validates against it: a member id or generation is UNKNOWN_MEMBER_ID
        g = c.groups[req.group_id] = ClassicGroup(req.group_id, state_timestamp_ms=c.now)
    err = validate_offset_commit(g, req.member_id or "", req.group_instance_id, req.generation_id_or_member_epoch,
                                 True, ctx.version)
    if g is None and err == E.NONE:
        g = ClassicGroup(req.group_id, state_timestamp_ms=c.now)
        c.groups[req.group_id] = g
        classic_rebalance.write_group(c, g)
    return err


# ---------------------------------------------------------------------- transaction ends
def end_transaction(c: "CoordinatorState", producer_id: int, committed: bool, producer_epoch: int | None,
                    groups: set[str] | None = None) -> None:
    """The transaction ended: apply (commit) or drop (abort) the producer's pending offsets, of every
    group or only of `groups` (a marker in their `__consumer_offsets` partition). Given the epoch of
    the client's EndTxn, offsets of an older epoch belong to a transaction the broker already
    aborted; a marker applies all of them, as OffsetMetadataManager.replayEndTransactionMarker does."""
    offsets = c.txns.by_producer.get(producer_id)
    if groups is None:
        c.timers.cancel(txn_timeout_key(producer_id))
    if not offsets:
        return
    applied: dict[str, int] = {}
    ended = [(key, rec) for key, rec in offsets.items() if groups is None or key[0] in groups]
    txns = c.txns
    for key, rec in ended:
        if committed and (producer_epoch is None or rec.producer_epoch == producer_epoch) \
                and _group_alive(c, rec.group_id) and txns.newer_than_committed(rec):
            c.offsets.put(c, OffsetRecord(rec.group_id, rec.topic, rec.partition, rec.offset, rec.leader_epoch,
                                          rec.metadata, rec.commit_timestamp_ms, None))
            # (written when the pending offset was: another producer's written before it may still apply)
            txns.committed_at[rec.group_id][(rec.topic, rec.partition)] = txns.pending_at[(producer_id, *key)]
            applied[rec.group_id] = applied.get(rec.group_id, 0) + 1
        _tombstone(c, producer_id, key)
    for gid in sorted({key[0] for key, _ in ended}):
        c.event("txn_offsets_committed" if committed else "txn_offsets_aborted", gid, producer_id=producer_id,
                producer_epoch=producer_epoch, applied=applied.get(gid, 0),
                learned_from="EndTxn" if groups is None else "marker")


def _group_alive(c: "CoordinatorState", group_id: str) -> bool:
    """The group still exists: a classic group not Dead, or a KIP-848 consumer group."""
    g = c.groups.get(group_id)
    return (g is not None and g.state != DEAD) or group_id in c.consumer_groups


def producer_initialized(c: "CoordinatorState", producer_id: int, producer_epoch: int, timeout_ms: int) -> None:
    """InitProducerId answered for a transactional producer: remember its transaction timeout, and
    drop offsets pending under an older epoch (the broker aborts that transaction on re-init)."""
    timeouts = c.txns.timeouts
    timeouts.pop(producer_id, None)
    timeouts[producer_id] = max(MIN_TIMEOUT_MS, timeout_ms)
    if len(timeouts) > MAX_KNOWN_PRODUCERS:
        del timeouts[next(iter(timeouts))]
    known = c.txns.epochs.get(producer_id)
    if known is not None and known < producer_epoch:
        drop_producer(c, producer_id, "producer re-initialised")


def drop_producer(c: "CoordinatorState", producer_id: int, reason: str) -> None:
    offsets = c.txns.by_producer.get(producer_id)
    c.timers.cancel(txn_timeout_key(producer_id))
    if not offsets:
        return
    for gid in sorted({k[0] for k in offsets}):
        c.event("txn_offsets_dropped", gid, producer_id=producer_id, reason=reason)
    for key in list(offsets):
        _tombstone(c, producer_id, key)


def drop_group(c: "CoordinatorState", group_id: str) -> None:
    """DeleteGroups: the group's pending offsets go with it."""
    for pid in sorted(c.txns.by_group.get(group_id, ())):
        for key in [k for k in c.txns.by_producer.get(pid, {}) if k[0] == group_id]:
            _tombstone(c, pid, key)


def drop_partition(c: "CoordinatorState", group_id: str, topic: str, partition: int) -> None:
    """OffsetDelete: pending offsets of that partition are deleted too."""
    for pid in sorted(c.txns.by_group.get(group_id, ())):
        _tombstone(c, pid, (group_id, topic, partition))


def _tombstone(c: "CoordinatorState", pid: int, key: Key) -> None:
    if c.txns.remove(pid, key) is not None:
        c.records.append(TxnOffsetTombstone(key[0], pid, key[1], key[2]))
        if pid not in c.txns.by_producer:
            c.timers.cancel(txn_timeout_key(pid))


def _arm(c: "CoordinatorState", pid: int, timeout_ms: int) -> None:
    def fire():
        drop_producer(c, pid, "transaction timed out without kshim seeing its end")
    c.timers.schedule(txn_timeout_key(pid), c.now + timeout_ms + GRACE_MS, fire)


# ---------------------------------------------------------------------- replay
def replay_record(c: "CoordinatorState", rec) -> None:
    if isinstance(rec, TxnOffsetRecord):
        if rec.group_id not in c.groups and rec.group_id not in c.consumer_groups:
            c.groups[rec.group_id] = ClassicGroup(rec.group_id, state_timestamp_ms=c.now)
        if c.txns.add(rec):
            _arm(c, rec.producer_id, rec.timeout_ms)   # the timeout restarts from the load
    else:
        c.txns.remove(rec.producer_id, (rec.group_id, rec.topic, rec.partition))
        if rec.producer_id not in c.txns.by_producer:
            c.timers.cancel(txn_timeout_key(rec.producer_id))
