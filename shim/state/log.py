"""kshim's state topic on the upstream cluster: created at start if missing, read back in full
before the group listeners open, then appended to (acks=all) after every coordinator step.

Appends go through `StateLog.append(records) -> Future[error code]`. One writer task sends rounds:
everything queued since the previous round is packed into one uncompressed RecordBatch per
partition and one Produce per partition leader (a group's records share a partition, so its order
is the queue's order). A round retries NOT_LEADER_OR_FOLLOWER and other retriable errors after a
metadata refresh until `APPEND_DEADLINE_S`; then the futures of the entries it carried resolve to
the broker's error (or REQUEST_TIMED_OUT when the broker could not be reached) and records that
failed retriably are kept to be re-sent at the head of the next round (state records overwrite
by key, so a re-send is harmless).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

from kcodec import api
from kcodec.generated.create_topics import CreatableTopic, CreatableTopicConfig
from kcodec.generated.fetch import FetchPartition, FetchTopic
from kcodec.generated.list_offsets import ListOffsetsPartition, ListOffsetsTopic
from kcodec.generated.metadata import MetadataRequestTopic
from kcodec.generated.produce import PartitionProduceData, TopicProduceData
from kcodec.protocol import ApiKey, Error
from kcodec.records import iter_batches

from ..config import Config
from ..kafkaclient.client import UpstreamClient
from . import format as fmt
from .batch import encode_batch

log = logging.getLogger("kshim.state")

PRODUCE, FETCH = ApiKey.PRODUCE, ApiKey.FETCH
LIST_OFFSETS, METADATA, CREATE_TOPICS = ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.CREATE_TOPICS
NONE, UNKNOWN_TOPIC_OR_PARTITION = Error.NONE, Error.UNKNOWN_TOPIC_OR_PARTITION
LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER = Error.LEADER_NOT_AVAILABLE, Error.NOT_LEADER_OR_FOLLOWER
REQUEST_TIMED_OUT = Error.REQUEST_TIMED_OUT
NETWORK_EXCEPTION, TOPIC_ALREADY_EXISTS = Error.NETWORK_EXCEPTION, Error.TOPIC_ALREADY_EXISTS
# retried by the state log (a subset of Kafka's retriable errors: is_retriable also covers ones this
# path never meets, e.g. the coordinator's)
RETRIABLE = {UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT,
             NETWORK_EXCEPTION, Error.NOT_ENOUGH_REPLICAS, Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
             Error.KAFKA_STORAGE_ERROR, Error.FENCED_LEADER_EPOCH, Error.UNKNOWN_LEADER_EPOCH}
APPEND_DEADLINE_S = 8.0
FETCH_PARTITION_BYTES = 8 << 20
ROUND_BYTES = 768 * 1024
IO_ERRORS = (OSError, ConnectionError, asyncio.TimeoutError)


@dataclass
class _Entry:
    by_partition: dict[int, list[tuple]]
    future: asyncio.Future
    size: int = 0
    epochs: dict[int, int] | None = None      # scale-out: the owner epoch each partition was written under


class StateLog:
    def __init__(self, cfg: Config, addresses: Callable[[], list[tuple[str, int]]]):
        self.cfg, self.topic, self.partitions = cfg, cfg.state_topic, cfg.state_topic_partitions
        self._addresses = addresses
        self._clients: dict[int, UpstreamClient] = {}
        self._brokers: dict[int, tuple[str, int]] = {}
        self.leaders: dict[int, int] = {}
        self._queue: list[_Entry] = []
        self._backlog: dict[int, list[tuple[bytes, bytes | None]]] = defaultdict(list)
        self._wake: asyncio.Future | None = None     # the idle writer's wake-up (set by the next append)
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None   # the writer's (asked once, not per append)
        self.appended = 0
        # scale-out (shim/state/ownership.py): partition -> epoch this instance writes under; None =
        # this instance owns every partition and writes untagged records (one kshim per state topic)
        self.owned: dict[int, int] | None = None
        self._readers: dict[int, UpstreamClient] = {}   # loads run beside the writer: own connections
        self._load_lock = asyncio.Lock()

    # ------------------------------------------------------------------ connections
    async def _client(self, node: int | None, pool: dict | None = None) -> UpstreamClient:
        pool = self._clients if pool is None else pool
        if node is not None and node in pool:
            return pool[node]
        if node is not None and node in self._brokers:
            addrs = [self._brokers[node]]
        else:
            addrs = list(self._brokers.values()) + self._addresses()
        last: Exception | None = None
        for host, port in addrs:
            try:
                client = await UpstreamClient.connect(self.cfg, host, port)
            except IO_ERRORS as e:
                last = e
                continue
            if node is not None:
                pool[node] = client
            return client
        raise ConnectionError(f"no upstream broker answered for the state topic: {last}")

    def _drop(self, node: int, pool: dict | None = None) -> None:
        client = (self._clients if pool is None else pool).pop(node, None)
        if client is not None:
            client.close()

    async def _request(self, node: int | None, api_key: int, wanted: int, make, pool: dict | None = None):
        """One request on the connection to `node` (None: any broker, on a throwaway connection)."""
        client = await self._client(node, pool)
        try:
            v = client.version_for(api_key, wanted)
            return await client.request(api_key, v, make(v))
        except BaseException:
            if node is not None:
                self._drop(node, pool)
            raise
        finally:
            if node is None:
                client.close()

    async def refresh(self):
        """Leaders of the state topic's partitions; returns the topic's metadata entry."""
        def make(v):
            req = api.REQUESTS[METADATA](topics=[MetadataRequestTopic(name=self.topic)])
            if v >= 4:
                req.allow_auto_topic_creation = False
            return req
        resp = await self._request(None, METADATA, 12, make)
        self._brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
        topic = next((t for t in resp.topics if t.name == self.topic), None)
        if topic is not None and topic.error_code == NONE:
            self.leaders = {p.partition_index: p.leader_id for p in topic.partitions if p.leader_id >= 0}
            self.partitions = len(topic.partitions) or self.partitions
        return topic, len(resp.brokers)

    # ------------------------------------------------------------------ start
    async def ensure_topic(self, timeout: float = 60.0) -> None:
        topic, brokers = await self.refresh()
        if topic is None or topic.error_code == UNKNOWN_TOPIC_OR_PARTITION:
            await self._create(brokers)
        deadline = time.monotonic() + timeout
        while True:
            topic, _ = await self.refresh()
            if topic is not None and topic.error_code == NONE and topic.partitions \
                    and len(self.leaders) == len(topic.partitions):
                return
            if time.monotonic() > deadline:
                raise ConnectionError(f"state topic {self.topic} has no leaders after {timeout:.0f}s "
                                      f"(error {topic.error_code if topic else 'missing'})")
            await asyncio.sleep(0.1)

    async def _create(self, brokers: int) -> None:
        rf = min(3, max(brokers, 1))
        configs = {"cleanup.policy": "compact", "min.insync.replicas": str(2 if rf >= 3 else 1),
                   "segment.bytes": str(100 * 1024 * 1024), "compression.type": "producer"}
        resp = await self._request(None, CREATE_TOPICS, 7, lambda v: api.REQUESTS[CREATE_TOPICS](
            topics=[CreatableTopic(name=self.topic, num_partitions=self.cfg.state_topic_partitions,
                                   replication_factor=rf,
                                   configs=[CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])],
            timeout_ms=30000))
        err = resp.topics[0].error_code if resp.topics else NONE
        if err not in (NONE, TOPIC_ALREADY_EXISTS):
            raise ConnectionError(f"cannot create state topic {self.topic}: error {err} "
                                  f"{resp.topics[0].error_message or ''}")
        log.info("created state topic %s (%d partitions, replication factor %d)", self.topic,
                 self.cfg.state_topic_partitions, rf)

    async def load(self, timeout: float = 60.0):
        """read_all, retried (a topic just created may answer NOT_LEADER_OR_FOLLOWER for a moment)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return await self.read_all()
            except IO_ERRORS as e:
                if time.monotonic() > deadline:
                    raise
                # (a topic just created answers so for a moment: said only if it lasts)
                (log.info if time.monotonic() > deadline - timeout + 5 else log.debug)(
                    "reading %s: %s; retrying", self.topic, e)
                await asyncio.sleep(0.2)
                await self.refresh()

    async def read_all(self):
        """Every record of the state topic, partition by partition, in log order."""
        by_leader: dict[int, list[int]] = defaultdict(list)
        for p, leader in sorted(self.leaders.items()):
            by_leader[leader].append(p)
        out = []
        for leader, parts in by_leader.items():
            start = await self._list_offsets(leader, parts, -2)
            end = await self._list_offsets(leader, parts, -1)
            for p in parts:
                async for rec in self._read_partition(leader, p, start[p], end[p], fmt.Fence()):
                    out.append(rec)
        return out

    async def _list_offsets(self, leader: int, parts: list[int], ts: int, pool: dict | None = None) -> dict[int, int]:
        resp = await self._request(leader, LIST_OFFSETS, 7, lambda v: api.REQUESTS[LIST_OFFSETS](
            replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(name=self.topic, partitions=[
                ListOffsetsPartition(partition_index=p, timestamp=ts) for p in parts])]), pool)
        out = {}
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    raise ConnectionError(f"ListOffsets {self.topic}-{p.partition_index}: error {p.error_code}")
                out[p.partition_index] = p.offset
        return out

    async def _read_partition(self, leader: int, p: int, offset: int, end: int, fence: "fmt.Fence",
                              pool: dict | None = None, seen: dict | None = None, stale: set | None = None):
        """The records of `p` from `offset` to `end` that `fence` keeps (ownership markers update the
        fence and are not yielded); `seen`/`stale` collect the last kept value per key and the keys
        of ignored records (scale-out repair, `take`)."""
        while offset < end:
            resp = await self._request(leader, FETCH, 12, lambda v: api.REQUESTS[FETCH](
                replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=FETCH_PARTITION_BYTES, isolation_level=0,
                topics=[FetchTopic(topic=self.topic, partitions=[FetchPartition(
                    partition=p, fetch_offset=offset, partition_max_bytes=FETCH_PARTITION_BYTES)])]), pool)
            data = resp.responses[0].partitions[0]
            if resp.error_code or data.error_code:
                raise ConnectionError(f"Fetch {self.topic}-{p} at {offset}: error {resp.error_code or data.error_code}")
            moved = False
            for batch in iter_batches(data.records):
                if batch.next_offset <= offset:
                    continue
                moved = True
                offset = batch.next_offset
                if batch.is_control:
                    continue
                for r in batch.records:
                    if r.key is None or r.offset >= end:
                        continue
                    marker = fmt.decode_marker(r.key, r.value)
                    if marker is not None:
                        fence.marker(marker)
                    elif fence.keep(fmt.epoch_of(r.headers)):
                        if seen is not None:
                            seen[r.key] = r.value
                        yield fmt.decode(r.key, r.value)
                    elif stale is not None:
                        stale.add(r.key)
            if not moved:
                raise ConnectionError(f"Fetch {self.topic}-{p} at {offset} returned nothing before {end}")

    # ------------------------------------------------------------------ appends
    def start_writer(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(self._run())

    def append(self, records) -> asyncio.Future:
        by_partition: dict[int, list] = {}
        group = part = recs = None
        size = 0
        encode = fmt.encode
        for rec in records:
            if rec.group_id != group:          # a step's records are mostly one group's
                group = rec.group_id
                part = fmt.partition_for(group, self.partitions)
                recs = by_partition.get(part)
                if recs is None:
                    recs = by_partition[part] = []
            kv = encode(rec)
            size += len(kv[0]) + (len(kv[1]) if kv[1] is not None else 0) + 32
            recs.append(kv)
        return self._enqueue(by_partition, size)

    def _enqueue(self, by_partition: dict[int, list], size: int | None = None) -> asyncio.Future:
        fut = (self._loop or asyncio.get_running_loop()).create_future()
        epochs = None
        if self.owned is not None:
            if any(p not in self.owned for p in by_partition):
                fut.set_result(NOT_LEADER_OR_FOLLOWER)     # not ours (any more): never written
                return fut
            epochs = {p: self.owned[p] for p in by_partition}
            by_partition = {p: [(k, v, [fmt.epoch_header(epochs[p])]) for k, v in recs]
                            for p, recs in by_partition.items()}
        if size is None or epochs is not None:      # (epoch headers add to the estimate)
            size = sum(len(r[0]) + len(r[1] or b"") + 32 for recs in by_partition.values() for r in recs)
        self._queue.append(_Entry(by_partition, fut, size, epochs))
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)
        return fut

    # ------------------------------------------------------------------ scale-out: taking a partition
    async def take(self, p: int, generation: int, owner: str, host: str, port: int):
        """Become the writer of partition `p`: read it to the end, append an ownership marker with an
        epoch above every earlier one (at least `generation`), read on to the end (whatever an old
        owner wrote before the marker is valid, after it is ignored), re-append the last kept value
        of keys whose newest record was ignored (so compaction cannot keep a stale one). Returns
        (records to replay, epoch). Loads run one at a time, on connections of their own."""
        async with self._load_lock:
            if p not in self.leaders:
                await self.refresh()
            fence, seen, stale, out = fmt.Fence(), {}, set(), []
            pos = await self._read_range(p, None, fence, seen, stale, out)
            epoch = max(fence.epoch + 1, generation)
            if self.owned is None:
                self.owned = {}
            self.owned[p] = epoch
            err = await self._enqueue({p: [fmt.encode_marker(fmt.OwnerMarker(p, epoch, owner, host, port))]})
            if err:
                self.owned.pop(p, None)
                raise ConnectionError(f"ownership marker for {self.topic}-{p}: error {err}")
            await self._read_range(p, pos, fence, seen, stale, out)
            if fence.epoch != epoch:         # someone marked the partition after us: we are stale
                self.owned.pop(p, None)
                raise ConnectionError(f"{self.topic}-{p} was taken at epoch {fence.epoch} by {fence.owner}")
            repairs = [(k, seen.get(k)) for k in stale]
            if repairs:
                log.info("%s-%d: %d records of an older owner ignored and superseded", self.topic, p, len(repairs))
                await self._enqueue({p: repairs})
            return out, epoch

    async def _read_range(self, p: int, start: int | None, fence, seen, stale, out) -> int:
        for attempt in range(50):
            leader = self.leaders.get(p, -1)
            try:
                if leader < 0:
                    raise ConnectionError(f"{self.topic}-{p} has no leader")
                if start is None:
                    start = (await self._list_offsets(leader, [p], -2, self._readers))[p]
                end = (await self._list_offsets(leader, [p], -1, self._readers))[p]
                async for rec in self._read_partition(leader, p, start, end, fence, self._readers, seen, stale):
                    out.append(rec)
                return end
            except IO_ERRORS as e:
                if attempt == 49:
                    raise
                (log.info if attempt >= 25 else log.debug)("loading %s-%d: %s; retrying", self.topic, p, e)
                await asyncio.sleep(0.2)
                await self.refresh()
        raise AssertionError("unreachable")

    def release(self, p: int) -> None:
        """Stop writing partition `p` (it moved to another kshim): queued records are not sent."""
        if self.owned is not None:
            self.owned.pop(p, None)
        self._backlog.pop(p, None)

    async def _run(self) -> None:
        while True:
            if not self._queue:      # (a plain future: asyncio.Event.wait asks for the running loop each time)
                self._wake = self._loop.create_future()
                await self._wake
            while self._queue:
                entries = self._take()
                try:
                    await self._round(entries)
                except asyncio.CancelledError:
                    raise
                except Exception as e:   # never leave a caller waiting
                    log.exception("state append round failed: %s", e)
                    for en in entries:
                        if not en.future.done():
                            en.future.set_result(REQUEST_TIMED_OUT)

    def _take(self) -> list[_Entry]:
        """The next round's entries: all queued, or as many as keep the round under ROUND_BYTES
        (a Produce carries one batch per partition, and brokers refuse batches over 1 MB)."""
        size, n = 0, 0
        for en in self._queue:
            size += en.size
            if n and size > ROUND_BYTES:
                break
            n += 1
        entries, self._queue = self._queue[:n], self._queue[n:]
        return entries

    async def _round(self, entries: list[_Entry]) -> None:
        pending: dict[int, list] = {p: recs for p, recs in self._backlog.items() if recs}
        self._backlog = defaultdict(list)
        for en in entries:
            if en.epochs is not None and any(self.owned is None or self.owned.get(p) != e
                                             for p, e in en.epochs.items()):
                # the partition moved away since: not written
                en.future.set_result(NOT_LEADER_OR_FOLLOWER)
                continue
            for p, recs in en.by_partition.items():
                pending.setdefault(p, []).extend(recs)
        entries = [en for en in entries if not en.future.done()]
        if not pending:
            return
        errors = await self._produce_with_retries(pending)
        for p, err in errors.items():
            if err in RETRIABLE and (self.owned is None or p in self.owned):
                self._backlog[p] = pending[p]
        for en in entries:
            err = next((errors[p] for p in en.by_partition if errors.get(p)), NONE)
            if err:
                log.warning("state append to %s failed: error %s", self.topic, err)
            en.future.set_result(err)
        self.appended += sum(len(r) for p, r in pending.items() if not errors.get(p))

    async def _produce_with_retries(self, pending: dict[int, list]) -> dict[int, int]:
        errors: dict[int, int] = {}
        todo = dict(pending)
        deadline = time.monotonic() + APPEND_DEADLINE_S
        backoff = 0.05
        while True:
            by_leader: dict[int, list[int]] = defaultdict(list)
            for p in todo:
                by_leader[self.leaders.get(p, -1)].append(p)
            if len(by_leader) == 1:            # the usual case: no tasks for a single request
                (leader, ps), = by_leader.items()
                results = [await self._produce(leader, ps, todo)]
            else:
                results = await asyncio.gather(*(self._produce(leader, ps, todo) for leader, ps in by_leader.items()))
            for res in results:
                errors.update(res)
            todo = {p: todo[p] for p, err in errors.items() if err in RETRIABLE and p in todo}
            if not todo or time.monotonic() + backoff > deadline:
                return errors
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 1.0)
            try:
                await self.refresh()
            except IO_ERRORS as e:
                log.warning("state topic metadata refresh failed: %s", e)

    async def _produce(self, leader: int, parts: list[int], todo: dict[int, list]) -> dict[int, int]:
        if leader < 0:
            return {p: LEADER_NOT_AVAILABLE for p in parts}
        now = int(time.time() * 1000)
        try:
            resp = await self._request(leader, PRODUCE, 9, lambda v: api.REQUESTS[PRODUCE](
                acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(name=self.topic, partition_data=[
                    PartitionProduceData(index=p, records=encode_batch(todo[p], now)) for p in parts])]))
        except IO_ERRORS as e:
            log.warning("state append to broker %s failed: %s", leader, e or type(e).__name__)
            return {p: REQUEST_TIMED_OUT for p in parts}
        out = {p: REQUEST_TIMED_OUT for p in parts}
        for t in resp.responses:
            for pr in t.partition_responses:
                out[pr.index] = pr.error_code
        return out

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        for node in list(self._clients):
            self._drop(node)
        for node in list(self._readers):
            self._drop(node, self._readers)
