"""The commit floor in Python (scripts/bench-commits --proxy-floor, side proxy-floor-py): kshim's
skeleton without its coordinator. One process, kshim's event loop (uvloop when installed), an
asyncio.Protocol per client splitting frames with kcodec's FrameSplitter; OffsetCommit decoded and
answered with kcodec's generated classes; each committed partition queued as one record (an offset
record's sizes: key 40 bytes, value 44 bytes) to one writer that sends rounds as kshim's StateLog
does (one round in flight, everything queued meanwhile in the next round, one batch per state
partition: shim.state.batch.encode_batch, one Produce acks=all per partition leader, sent
together), and each answer written once its round is acknowledged. ApiVersions is answered
locally; nothing else is served (no groups, no checks).

What kshim spends per commit above this is its coordinator and routing; what this spends above the
Go floors (commit_floor/*.go) is the interpreter's and the event loop's.
Usage: python -m testsuite.bench.commit_floor_py -listen 127.0.0.1:PORT -upstream HOST:PORT -topic T -partitions N
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import zlib

from kcodec import api
from kcodec.protocol import ApiKey
from kcodec.frames import FrameSplitter, length_prefix, peek_request
from kcodec.generated.api_versions import ApiVersion, ApiVersionsResponse
from kcodec.generated.offset_commit import (OffsetCommitResponse, OffsetCommitResponsePartition,
                                            OffsetCommitResponseTopic)
from kcodec.generated.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from shim.config import Config
from shim.kafkaclient.client import UpstreamClient
from shim.groupservice.bodies import read_request
from shim.state.batch import encode_batch
from testsuite.bench.cluster_lookup import partition_leaders

API_VERSIONS, OFFSET_COMMIT, PRODUCE = ApiKey.API_VERSIONS, ApiKey.OFFSET_COMMIT, ApiKey.PRODUCE
KEY, VALUE = b"k" * 40, b"v" * 44
COORDINATOR_NOT_AVAILABLE = 15


def _frame(api_key: int, version: int, correlation_id: int, body) -> bytes:
    data = api.encode_response(api_key, version, correlation_id, body)
    return length_prefix(len(data)) + data


class Writer:
    """kshim's group commit, reduced: (partition, records, done) queued; one round in flight."""

    def __init__(self, clients: dict[tuple[str, int], UpstreamClient], leaders: dict[int, tuple[str, int]],
                 topic: str, partitions: int):
        self.clients, self.leaders = clients, leaders       # leader -> connection; partition -> leader
        self.topic, self.partitions = topic, partitions
        self.queue: list[tuple[int, int, object]] = []
        self.wake: asyncio.Future | None = None

    @classmethod
    async def connect(cls, upstream: str, topic: str, partitions: int) -> "Writer":
        """A connection to each leader of the state topic's partitions."""
        leaders = await partition_leaders(upstream, topic)
        clients = {address: await UpstreamClient.connect(Config(), *address)
                   for address in sorted(set(leaders.values()))}
        return cls(clients, leaders, topic, partitions)

    def append(self, partition: int, records: int, done) -> None:
        self.queue.append((partition, records, done))
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)

    async def _produce(self, leader: tuple[str, int], counts: dict[int, int], now: int) -> set[int]:
        """The failed partitions of one Produce to `leader`."""
        req = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(name=self.topic, partition_data=[
            PartitionProduceData(index=p, records=encode_batch([(KEY, VALUE)] * n, now)) for p, n in counts.items()])])
        try:
            resp = await self.clients[leader].request(PRODUCE, 9, req)
            return {pr.index for t in resp.responses for pr in t.partition_responses if pr.error_code}
        except (OSError, ConnectionError, asyncio.TimeoutError):
            return set(counts)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self.queue:
                self.wake = loop.create_future()
                await self.wake
            entries, self.queue = self.queue, []
            by_leader: dict[tuple[str, int], dict[int, int]] = {}
            for p, n, _ in entries:
                counts = by_leader.setdefault(self.leaders[p], {})
                counts[p] = counts.get(p, 0) + n
            now = int(time.time() * 1000)
            failed: set[int] = set()
            for bad in await asyncio.gather(*(self._produce(leader, counts, now)
                                              for leader, counts in by_leader.items())):
                failed |= bad
            for p, _, done in entries:
                done(COORDINATOR_NOT_AVAILABLE if p in failed else 0)


class Client(asyncio.Protocol):
    def __init__(self, writer: Writer):
        self.writer = writer
        self.splitter = FrameSplitter()
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        for frame in self.splitter.feed(data):
            api_key, version, corr, _ = peek_request(frame)
            if api_key == API_VERSIONS:
                self.transport.write(_frame(api_key, version, corr, ApiVersionsResponse(error_code=0, api_keys=[
                    ApiVersion(api_key=API_VERSIONS, min_version=0, max_version=4),
                    ApiVersion(api_key=OFFSET_COMMIT, min_version=8, max_version=8)])))
            elif api_key == OFFSET_COMMIT and version == 8:
                self.commit(read_request(frame, api_key, version), corr)
            else:
                self.transport.close()

    def commit(self, req, corr: int) -> None:
        partition = zlib.crc32(req.group_id.encode()) % self.writer.partitions
        records = sum(len(t.partitions) for t in req.topics)
        transport = self.transport

        def done(error: int) -> None:
            transport.write(_frame(OFFSET_COMMIT, 8, corr, OffsetCommitResponse(topics=[
                OffsetCommitResponseTopic(name=t.name, partitions=[
                    OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
                    for p in t.partitions]) for t in req.topics])))
        self.writer.append(partition, records, done)


async def serve(listen: str, upstream: str, topic: str, partitions: int) -> None:
    writer = await Writer.connect(upstream, topic, partitions)
    task = asyncio.get_running_loop().create_task(writer.run())
    lhost, lport = listen.rsplit(":", 1)
    server = await asyncio.get_running_loop().create_server(lambda: Client(writer), lhost, int(lport))
    print(f"floor listening on {listen} (python, {type(asyncio.get_running_loop()).__module__})", flush=True)
    async with server:
        await asyncio.gather(server.serve_forever(), task)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-listen", required=True)
    ap.add_argument("-upstream", required=True)
    ap.add_argument("-topic", required=True)
    ap.add_argument("-partitions", type=int, required=True)
    args = ap.parse_args(argv)
    try:
        import uvloop
        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    runner(serve(args.listen, args.upstream, args.topic, args.partitions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
