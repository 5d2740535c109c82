"""CPU per OffsetCommit of kshim's own Python path, without sockets: the same objects a live kshim
uses (Session -> GroupService -> coordinator -> StateLog -> responses) fed whole request frames;
the state topic's broker is replaced by an in-process stand-in that encodes each Produce request
and answers it at once (it is not a broker: nothing is stored, every append succeeds).

Waves of `--committers` commits (one per connection, `--partitions` partitions each) are fed and
run to completion; one state round per wave. Prints microseconds of process CPU per commit (the
kernel's socket work and the real broker's round trips are what `scripts/bench-commits` adds).
Usage: python -m testsuite.bench.commit_path [--committers 16] [--partitions 4] [--waves 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import time

from kcodec import api
from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)
from kcodec.generated.produce import PartitionProduceResponse, ProduceResponse, TopicProduceResponse
from shim.config import Config
from shim.proxy.session import Session
from shim.runner import build
from shim.state.log import StateLog

COMMIT, PRODUCE = 8, 0


class _Transport:
    """Counts what a session writes and keeps the last frame."""

    def __init__(self) -> None:
        self.writes = 0
        self.last = b""

    def get_extra_info(self, _key):
        return ("127.0.0.1", 1)

    def writelines(self, parts) -> None:
        self.writes += 1
        self.last = parts

    def write(self, data) -> None:
        self.writes += 1
        self.last = data

    def close(self) -> None:
        pass


class _InstantUpstream:
    """Stands in for the state topic's leader: encodes the Produce, answers success for every partition."""
    versions: dict = {}

    def version_for(self, _api_key: int, wanted: int) -> int:
        return wanted

    async def request(self, api_key: int, version: int, body, timeout: float = 10.0):
        body.encode(version)
        resp = ProduceResponse(responses=[TopicProduceResponse(name=t.name, partition_responses=[
            PartitionProduceResponse(index=p.index, error_code=0) for p in t.partition_data])
            for t in body.topic_data])
        return api.RESPONSES[api_key].decode(resp.encode(version), version)


class _Listener:
    node_id = None
    name = "bench"


def _frame(group: str, topic: str, partitions: int, offset: int, version: int = 8) -> bytes:
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequestTopic(name=topic, partitions=[
            OffsetCommitRequestPartition(partition_index=p, committed_offset=offset) for p in range(partitions)])])
    header = api.RequestHeader(request_api_key=COMMIT, request_api_version=version, correlation_id=offset,
                               client_id="bench")
    body = header.encode(api.request_header_version(COMMIT, version)) + req.encode(version)
    return struct.pack(">i", len(body)) + body


async def run(committers: int, partitions: int, waves: int) -> dict:
    cfg = Config(upstream="127.0.0.1:1")
    proxy = build(cfg)
    proxy.allowed = {COMMIT: (2, 10)}
    service = proxy.groups
    service.topics["bench"] = partitions
    state = StateLog(cfg, lambda: [])
    state.leaders = {p: 1 for p in range(cfg.state_topic_partitions)}
    state._clients[1] = _InstantUpstream()
    service.runtime.state = state
    state.start_writer()
    sessions = []
    for _ in range(committers):
        s = Session(proxy, _Listener())
        s.connection_made(_Transport())
        sessions.append(s)
    frames = [[_frame(f"bench-{i}", "bench", partitions, n) for i in range(committers)] for n in range(50)]
    cpu0 = time.process_time()
    for w in range(waves):
        for s, frame in zip(sessions, frames[w % 50]):
            s.data_received(frame)
        while any(s.pending for s in sessions):
            await asyncio.sleep(0)
    cpu = time.process_time() - cpu0
    commits = waves * committers
    answered = sum(s.transport.writes for s in sessions)
    if answered != commits or state.appended < commits * partitions:   # (+ one record per new group)
        raise AssertionError(f"{answered} answers and {state.appended} records for {commits} commits")
    return {"commits": commits, "cpu_us_per_commit": 1e6 * cpu / commits,
            "last_answers": [s.transport.last for s in sessions]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--committers", type=int, default=16)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--waves", type=int, default=3000)
    args = ap.parse_args()
    res = asyncio.run(run(args.committers, args.partitions, args.waves))
    print(f"{res['commits']} commits of {args.partitions} partitions, {args.committers} per state round: "
          f"{res['cpu_us_per_commit']:.1f} us of kshim CPU per commit (no sockets, instant state appends)")


if __name__ == "__main__":
    main()
