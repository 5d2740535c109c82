"""How each transaction holding pending offsets ended, read from its transaction markers.

The broker's group coordinator learns a transaction's end from WriteTxnMarkers: the transaction
coordinator writes a COMMIT or ABORT control batch into every partition of the transaction, the
group's `__consumer_offsets` partition among them (added by the client's AddOffsetsToTxn, or by
kshim's enlisting of TxnOffsetCommit v5+: txn_enlist.py), and OffsetMetadataManager
.replayEndTransactionMarker applies or drops the producer's pending offsets of that partition's
groups. The marker is written however the transaction ended: the client's EndTxn, the coordinator's
abort of a timed-out transaction (TransactionCoordinator.abortTimedOutTransactions), a new
InitProducerId of the transactional id fencing the producer (on any connection, through any kshim
instance or none), or `kafka-transactions.sh abort` (the admin client's WriteTxnMarkers).

kshim watches the client's EndTxn (transactions.py) as its fast path, and reads the markers for the
rest: while a producer has pending offsets in a group, kshim fetches the group's
`__consumer_offsets` partition (read_uncommitted, long-polling) and hands each marker of that
producer to the coordinator (GroupCoordinator.transaction_marker). A marker counts for a group from
the partition's high watermark read after the offsets were enlisted (`floor`): the markers of the
producer's earlier transactions were written before its new transaction could enlist the partition.
The floor is kept in the pending offsets' state records, so offsets replayed from the state topic or
taken over by a scale-out instance are watched from it when the periodic sweep finds them (a marker
written meanwhile is found); without one (written by an older kshim), from the high watermark then.

kshim's upstream principal needs READ on Topic `__consumer_offsets` (Fetch, ListOffsets). Without it,
or where the partition cannot be read, the coordinator's fallback drops the offsets after the
transaction's timeout plus a grace period (coordinator/txn_offsets.py); a warning says so once.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from typing import TYPE_CHECKING

from kcodec import api
from kcodec.errors import DecodeError
from kcodec.generated.fetch import FetchPartition, FetchTopic
from kcodec.generated.list_offsets import ListOffsetsPartition, ListOffsetsTopic
from kcodec.generated.metadata import MetadataRequestTopic
from kcodec.protocol import ApiKey, Error
from kcodec.record_types import ControlType
from kcodec.records import decode_batch

from ..kafkaclient.client import IO_ERRORS, UpstreamClient
from .periodic import every
from .txn_verify import OFFSETS_TOPIC, offsets_partition

if TYPE_CHECKING:
    from .host import Host
    from .runtime import GroupRuntime
    from .topic_refresh import TopicRefresher
    from .txn_enlist import TxnEnlister

log = logging.getLogger("kshim.coordinator")

FETCH, LIST_OFFSETS, METADATA = ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA
OFFSET_OUT_OF_RANGE = Error.OFFSET_OUT_OF_RANGE
LEADER_MOVED = {Error.NOT_LEADER_OR_FOLLOWER, Error.LEADER_NOT_AVAILABLE, Error.FENCED_LEADER_EPOCH,
                Error.UNKNOWN_LEADER_EPOCH, Error.UNKNOWN_TOPIC_OR_PARTITION, Error.REPLICA_NOT_AVAILABLE}
FETCH_WAIT_MS = 500                 # a marker is seen as soon as it is written (min_bytes 1)
PARTITION_BYTES = 1 << 20
SWEEP_S = 1.0
RETRY_S = 1.0
UNREADABLE_S = 30.0                 # after a refusal, how long before asking again

# record batch v2 header (DefaultRecordBatch): baseOffset, batchLength; attributes at 21, lastOffsetDelta
# at 23, producerId at 43
_OFFSET_LENGTH = struct.Struct(">qi")
_ATTRIBUTES_DELTA = struct.Struct(">hi")
_PRODUCER_ID = struct.Struct(">q")
HEADER_SIZE, LOG_OVERHEAD, CONTROL_FLAG = 61, 12, 0x20

Where = tuple[int, int]             # (__consumer_offsets partition, high watermark)


class MarkerReadError(Exception):
    pass


class TxnMarkerWatch:
    def __init__(self, proxy: "Host", runtime: "GroupRuntime", enlister: "TxnEnlister",
                 metadata: "TopicRefresher"):
        self.proxy, self.runtime, self.enlister, self.metadata = proxy, runtime, enlister, metadata
        self.expected: dict[int, dict[int, dict[str, int]]] = {}    # partition -> producer -> group -> floor
        self.rewind: dict[int, int] = {}       # partition -> offset a running tailer must go back to
        self.tailers: dict[int, asyncio.Task] = {}
        self.leaders: dict[int, int] = {}
        self._sweep: asyncio.Task | None = None
        self._unreadable_until = 0.0
        self._warned = False

    def start(self) -> None:
        self._sweep = asyncio.get_running_loop().create_task(every(
            SWEEP_S, self.sweep, lambda e: log.warning("transaction marker sweep failed: %s", e)))

    def close(self) -> None:
        for task in [self._sweep, *self.tailers.values()]:
            if task is not None:
                task.cancel()
        self.tailers.clear()

    # ------------------------------------------------------------------ what to watch
    async def floor(self, group_id: str, recorded: int = -1) -> Where | None:
        """The group's `__consumer_offsets` partition and its high watermark now (or `recorded`, a
        floor the pending offsets were taken with); None where kshim cannot read it (the fallback
        then applies)."""
        if time.monotonic() < self._unreadable_until:
            return None
        try:
            count = await self.offsets_partitions()
            if not count:
                raise MarkerReadError(f"the cluster has no {OFFSETS_TOPIC} topic")
            p = offsets_partition(group_id, count)
            return p, recorded if recorded >= 0 else await self._list_offset(p, -1)
        except (MarkerReadError, *IO_ERRORS) as e:
            self._unreadable(e)
            return None

    async def offsets_partitions(self) -> int | None:
        """The partition count of the upstream's __consumer_offsets (GroupCoordinatorService.partitionFor)."""
        topics = self.runtime.topics
        if topics.partitions(OFFSETS_TOPIC) is None:
            await self.metadata.refresh_topics([OFFSETS_TOPIC])
        return topics.partitions(OFFSETS_TOPIC)

    def expect(self, producer_id: int, group_id: str, where: Where | None) -> None:
        """Watch the group's partition for the producer's marker, counting from `where`'s offset."""
        if where is None:
            return
        p, floor = where
        self.expected.setdefault(p, {}).setdefault(producer_id, {})[group_id] = floor
        task = self.tailers.get(p)
        if task is None or task.done():
            self.tailers[p] = asyncio.get_running_loop().create_task(self._tail(p, floor))
        else:
            self.rewind[p] = min(self.rewind.get(p, floor), floor)

    async def sweep(self) -> None:
        """Forget what is no longer pending; watch pending offsets kshim did not enlist itself."""
        pending = self.runtime.coordinator.pending_transactions()
        watched = set()
        for by_producer in self.expected.values():
            for pid in list(by_producer):
                groups = by_producer[pid]
                for gid in [g for g in groups if (pid, g) not in pending]:
                    del groups[gid]
                if not groups:
                    del by_producer[pid]
                watched.update((pid, g) for g in groups)
        found = {}
        for pid, gid in sorted(pending.keys() - watched):
            where = await self.floor(gid, pending[(pid, gid)])
            if where is None:
                break
            found[(pid, gid)] = where
        still = self.runtime.coordinator.pending_transactions() if found else {}
        for (pid, gid), where in found.items():
            if (pid, gid) in still:           # (not ended while kshim asked)
                self.expect(pid, gid, where)

    # ------------------------------------------------------------------ reading the partition
    async def _tail(self, p: int, position: int) -> None:
        conn: UpstreamClient | None = None
        try:
            while self.expected.get(p):
                position = min(position, self.rewind.pop(p, position))
                try:
                    if conn is None:
                        conn = await self._connect(p)
                    v = conn.version_for(FETCH, 12)
                    resp = await conn.request(FETCH, v, api.REQUESTS[FETCH](
                        replica_id=-1, max_wait_ms=FETCH_WAIT_MS, min_bytes=1, max_bytes=PARTITION_BYTES,
                        isolation_level=0, topics=[FetchTopic(topic=OFFSETS_TOPIC, partitions=[FetchPartition(
                            partition=p, fetch_offset=position, partition_max_bytes=PARTITION_BYTES)])]))
                    data = resp.responses[0].partitions[0]
                    err = resp.error_code or data.error_code
                    if err == OFFSET_OUT_OF_RANGE:     # truncated or cleaned: from the nearest end
                        earliest, latest = await self._list_offset(p, -2), await self._list_offset(p, -1)
                        position = min(max(position, earliest), latest)
                        continue
                    if err in LEADER_MOVED:
                        self.leaders.pop(p, None)
                        raise ConnectionError(f"{OFFSETS_TOPIC}-{p}: error {err}")
                    if err:
                        raise MarkerReadError(f"Fetch {OFFSETS_TOPIC}-{p}: error {err}")
                    position = self._scan(p, data.records, position)
                except (MarkerReadError, *IO_ERRORS) as e:
                    if isinstance(e, MarkerReadError):
                        self._unreadable(e)
                    else:
                        log.info("reading transaction markers of %s-%d: %s", OFFSETS_TOPIC, p, e)
                    if conn is not None:
                        conn.close()
                        conn = None
                    await asyncio.sleep(RETRY_S)
        finally:
            if conn is not None:
                conn.close()
            if self.tailers.get(p) is asyncio.current_task():
                del self.tailers[p]

    def _scan(self, p: int, records, position: int) -> int:
        """Each batch from `position` on: a control batch of a watched producer is its marker. Only
        batch headers are read; a marker's one record says COMMIT or ABORT."""
        if not records:
            return position
        data = records if isinstance(records, (bytes, memoryview)) else bytes(records)
        pos, n = 0, len(data)
        while n - pos >= HEADER_SIZE:
            base, length = _OFFSET_LENGTH.unpack_from(data, pos)
            end = pos + LOG_OVERHEAD + length
            if end > n:
                break                          # cut by the size limit: fetched again from here
            attributes, last_delta = _ATTRIBUTES_DELTA.unpack_from(data, pos + 21)
            following = base + last_delta + 1
            if following > position:
                if attributes & CONTROL_FLAG:
                    pid = _PRODUCER_ID.unpack_from(data, pos + 43)[0]
                    if pid in self.expected.get(p, ()):
                        self._marker(p, pid, data[pos:end], base)
                position = following
            pos = end
        return position

    def _marker(self, p: int, pid: int, raw, offset: int) -> None:
        try:
            batch = decode_batch(bytes(raw))
        except DecodeError as e:
            log.warning("unreadable control batch at %s-%d offset %d: %s", OFFSETS_TOPIC, p, offset, e)
            return
        control = batch.records[0].control if batch.records else None
        if control is None or control.type not in (ControlType.COMMIT, ControlType.ABORT):
            return
        by_producer = self.expected[p]
        groups = by_producer.get(pid, {})
        ended = sorted(g for g, floor in groups.items() if floor <= offset)
        if not ended:
            return
        for g in ended:
            del groups[g]
        if not groups:
            del by_producer[pid]
        runtime = self.runtime
        runtime.deliver(runtime.coordinator.transaction_marker(pid, control.type == ControlType.COMMIT, ended,
                                                               runtime.now()))

    # ------------------------------------------------------------------ the partition's leader
    async def _list_offset(self, p: int, timestamp: int) -> int:
        """ListOffsets: the high watermark (-1) or the log start (-2) of the partition."""
        leader = await self._leader(p)

        def build(conn):
            v = conn.version_for(LIST_OFFSETS, 7)
            return v, api.REQUESTS[LIST_OFFSETS](replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
                name=OFFSETS_TOPIC, partitions=[ListOffsetsPartition(partition_index=p, timestamp=timestamp)])])
        resp = await self.enlister.call(leader, LIST_OFFSETS, build)
        part = resp.topics[0].partitions[0]
        if part.error_code in LEADER_MOVED:
            self.leaders.pop(p, None)
            raise ConnectionError(f"ListOffsets {OFFSETS_TOPIC}-{p}: error {part.error_code}")
        if part.error_code:
            raise MarkerReadError(f"ListOffsets {OFFSETS_TOPIC}-{p}: error {part.error_code}")
        return part.offset

    async def _leader(self, p: int) -> int:
        leader = self.leaders.get(p)
        if leader is not None:
            return leader
        brokers = sorted(self.proxy.topology.brokers)
        if not brokers:
            raise ConnectionError("no broker known yet")

        def build(conn):
            v = conn.version_for(METADATA, 12)
            req = api.REQUESTS[METADATA](topics=[MetadataRequestTopic(name=OFFSETS_TOPIC)])
            if v >= 4:
                req.allow_auto_topic_creation = False
            return v, req
        resp = await self.enlister.call(brokers[0], METADATA, build)
        for t in resp.topics:
            if t.name == OFFSETS_TOPIC and t.error_code:
                raise MarkerReadError(f"Metadata {OFFSETS_TOPIC}: error {t.error_code}")
            for part in t.partitions if t.name == OFFSETS_TOPIC else ():
                if part.leader_id >= 0:
                    self.leaders[part.partition_index] = part.leader_id
        if p not in self.leaders:
            raise ConnectionError(f"{OFFSETS_TOPIC}-{p} has no leader")
        return self.leaders[p]

    async def _connect(self, p: int) -> UpstreamClient:
        broker = self.proxy.topology.upstream_of(await self._leader(p))
        if broker is None:
            self.leaders.pop(p, None)
            raise ConnectionError(f"the leader of {OFFSETS_TOPIC}-{p} is not known")
        return await UpstreamClient.connect(self.proxy.cfg, broker.host, broker.port)

    def _unreadable(self, e: Exception) -> None:
        self._unreadable_until = time.monotonic() + UNREADABLE_S
        if not self._warned:
            self._warned = True
            log.warning("cannot read transaction markers (%s): kshim learns how a transaction ended only from "
                        "the client's EndTxn, else drops its offsets after its timeout; kshim's upstream "
                        "principal needs READ on Topic %s", e, OFFSETS_TOPIC)
