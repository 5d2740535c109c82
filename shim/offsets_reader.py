"""Reading `__consumer_offsets` from a cluster with kshim's own Kafka client, for `kshim trace import
--consumer-offsets` (the records become a trace: shim/trace/offsets_topic/). Needs DESCRIBE and READ on
the internal topic; works through TLS and SASL like `kshim run`'s upstream connection."""

from __future__ import annotations

import asyncio

from kcodec import api
from kcodec._json import uuid_to_kafka
from kcodec.generated.fetch import FetchPartition, FetchTopic
from kcodec.generated.list_offsets import ListOffsetsPartition, ListOffsetsTopic
from kcodec.generated.metadata import MetadataRequestTopic
from kcodec.protocol import ApiKey, Error, error_name

from .config import Config
from .coordinator.classic_group import java_string_hash
from .kafkaclient.client import UpstreamClient
from .trace.offsets_topic.history import RecordHistory
from .trace.offsets_topic.segments import TOPIC, raw_records

METADATA, LIST_OFFSETS, FETCH = ApiKey.METADATA, ApiKey.LIST_OFFSETS, ApiKey.FETCH
FETCH_BYTES = 8 << 20
EARLIEST, LATEST = -2, -1
DENIED = {int(Error.TOPIC_AUTHORIZATION_FAILED), int(Error.CLUSTER_AUTHORIZATION_FAILED)}


class OffsetsReadError(Exception):
    """A refusal or a failure, in words a person can act on."""


def partition_for(group: str, partitions: int) -> int:
    """The `__consumer_offsets` partition of a group: Utils.abs(groupId.hashCode()) % partitions
    (GroupCoordinatorService.partitionFor; Utils.abs maps Integer.MIN_VALUE to 0)."""
    h = java_string_hash(group)
    h = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if h == -(1 << 31) else abs(h)) % partitions


class OffsetsTopicReader:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.clients: dict[int, UpstreamClient] = {}
        self.brokers: dict[int, tuple[str, int]] = {}
        self.leaders: dict[int, int] = {}
        self.names: dict[str, str] = {}      # topic id -> name (KIP-848 records name topics by id)
        self.next: dict[int, int] = {}       # partition -> the next offset to read (after `read`)

    async def _any(self) -> UpstreamClient:
        last = None
        for host, port in self.cfg.upstream_addresses():
            try:
                return await UpstreamClient.connect(self.cfg, host, port)
            except (OSError, ConnectionError, TimeoutError) as e:
                last = e
        raise OffsetsReadError(f"no broker of {self.cfg.upstream} answered: {last}")

    async def _node(self, node: int) -> UpstreamClient:
        if node not in self.clients:
            host, port = self.brokers[node]
            self.clients[node] = await UpstreamClient.connect(self.cfg, host, port)
        return self.clients[node]

    async def metadata(self) -> int:
        """Brokers, the topic names and the offsets topic's leaders; returns its partition count."""
        client = await self._any()
        try:
            v = client.version_for(METADATA, 12)
            resp = await client.request(METADATA, v, api.REQUESTS[METADATA](topics=None, allow_auto_topic_creation=False))
            if v < 10 or not any(t.name == TOPIC for t in resp.topics):
                resp = await client.request(METADATA, v, api.REQUESTS[METADATA](
                    topics=[MetadataRequestTopic(name=TOPIC)], allow_auto_topic_creation=False))
                all_topics = None
            else:
                all_topics = resp
        finally:
            client.close()
        self.brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
        for t in (all_topics or resp).topics:
            if getattr(t, "topic_id", None) is not None and t.name:
                self.names[uuid_to_kafka(t.topic_id)] = t.name      # (the records' JSON form of an id)
        topic = next((t for t in resp.topics if t.name == TOPIC), None)
        if topic is None or topic.error_code == Error.UNKNOWN_TOPIC_OR_PARTITION:
            raise OffsetsReadError(f"the cluster has no {TOPIC} topic yet (no group has used it) or hides it")
        if topic.error_code in DENIED:
            raise OffsetsReadError(f"{TOPIC}: {error_name(topic.error_code)}: the principal needs DESCRIBE and READ "
                                   f"on the internal topic {TOPIC} (kafka-acls --add --allow-principal ... "
                                   f"--operation Read --operation Describe --topic {TOPIC})")
        if topic.error_code:
            raise OffsetsReadError(f"{TOPIC}: metadata error {error_name(topic.error_code)}")
        self.leaders = {p.partition_index: p.leader_id for p in topic.partitions}
        return len(topic.partitions)

    async def _offsets(self, leader: int, parts: list[int], ts: int) -> dict[int, int]:
        client = await self._node(leader)
        v = client.version_for(LIST_OFFSETS, 7)
        resp = await client.request(LIST_OFFSETS, v, api.REQUESTS[LIST_OFFSETS](
            replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(name=TOPIC, partitions=[
                ListOffsetsPartition(partition_index=p, timestamp=ts) for p in parts])]))
        out = {}
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code in DENIED:
                    raise OffsetsReadError(f"{TOPIC}-{p.partition_index}: {error_name(p.error_code)}: the principal "
                                           f"needs READ on {TOPIC}")
                if p.error_code:
                    raise OffsetsReadError(f"ListOffsets {TOPIC}-{p.partition_index}: {error_name(p.error_code)}")
                out[p.partition_index] = p.offset
        return out

    async def read(self, history: RecordHistory, partitions: list[int] | None = None,
                   since_ms: int | None = None) -> None:
        """Every record of `partitions` (default all) from the log start, or from the first record
        at or after `since_ms`, to the end at the time of the read."""
        parts = sorted(self.leaders) if partitions is None else partitions
        for p in parts:
            leader = self.leaders[p]
            log_start = (await self._offsets(leader, [p], EARLIEST))[p]
            end = (await self._offsets(leader, [p], LATEST))[p]
            start = log_start
            if since_ms is not None:
                at = (await self._offsets(leader, [p], since_ms))[p]
                start = end if at < 0 else max(at, log_start)
            read = history.partition(p)
            read.log_start, read.read_from = log_start, start if since_ms is None or start == log_start else None
            await self._read_partition(leader, p, start, end, history)
            self.next[p] = max(end, history.partition(p).end or 0)

    async def follow(self, history: RecordHistory, on_events, stop, wait_ms: int = 500) -> None:
        """After `read`: the partitions read, fetched from where it ended as records come (one Fetch per
        leader, waiting up to `wait_ms`), `on_events(history.drain())` after each round, until `stop`
        (an asyncio.Event) is set. A leader that moved is looked up again."""
        while not stop.is_set():
            by_leader: dict[int, list[int]] = {}
            for p in self.next:
                by_leader.setdefault(self.leaders.get(p, -1), []).append(p)
            for leader, parts in by_leader.items():
                try:
                    await self._fetch_round(leader, parts, history, wait_ms)
                except (OffsetsReadError, ConnectionError, OSError, TimeoutError, KeyError):
                    self.clients.pop(leader, None)
                    await asyncio.sleep(wait_ms / 1000)
                    await self.metadata()
            on_events(history.drain())

    async def _fetch_round(self, leader: int, parts: list[int], history: RecordHistory, wait_ms: int) -> None:
        client = await self._node(leader)
        v = client.version_for(FETCH, 12)
        resp = await client.request(FETCH, v, api.REQUESTS[FETCH](
            replica_id=-1, max_wait_ms=wait_ms, min_bytes=1, max_bytes=FETCH_BYTES, isolation_level=0,
            topics=[FetchTopic(topic=TOPIC, partitions=[FetchPartition(
                partition=p, fetch_offset=self.next[p], partition_max_bytes=FETCH_BYTES) for p in parts])]),
            timeout=wait_ms / 1000 + 10)
        if resp.error_code:
            raise OffsetsReadError(f"Fetch {TOPIC}: {error_name(resp.error_code)}")
        for t in resp.responses:
            for data in t.partitions:
                if data.error_code:
                    raise OffsetsReadError(f"Fetch {TOPIC}-{data.partition_index}: {error_name(data.error_code)}")
                p = data.partition_index
                self.next[p] = raw_records(p, data.records or b"", history, self.next[p])

    async def _read_partition(self, leader: int, p: int, offset: int, end: int, history: RecordHistory) -> None:
        client = await self._node(leader)
        while offset < end:
            v = client.version_for(FETCH, 12)
            resp = await client.request(FETCH, v, api.REQUESTS[FETCH](
                replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=FETCH_BYTES, isolation_level=0,
                topics=[FetchTopic(topic=TOPIC, partitions=[FetchPartition(
                    partition=p, fetch_offset=offset, partition_max_bytes=FETCH_BYTES)])]))
            data = resp.responses[0].partitions[0]
            code = resp.error_code or data.error_code
            if code in DENIED:
                raise OffsetsReadError(f"Fetch {TOPIC}-{p}: {error_name(code)}: the principal needs READ on {TOPIC}")
            if code:
                raise OffsetsReadError(f"Fetch {TOPIC}-{p} at offset {offset}: {error_name(code)}")
            nxt = raw_records(p, data.records or b"", history, offset)
            if nxt <= offset:
                raise OffsetsReadError(f"Fetch {TOPIC}-{p} at offset {offset} returned nothing before {end}")
            offset = nxt

    def close(self) -> None:
        for c in self.clients.values():
            c.close()
        self.clients.clear()
