"""Coordinator benchmark: time to a stable group of N members (classic static, classic dynamic,
consumer protocol), the real broker versus kshim in front of it, in the same run.

Members are raw wire members in one asyncio loop (1,000 JVM or client-library consumers do not fit
on a small machine): classic members speak JoinGroup v9 / SyncGroup v5 / Heartbeat v4 with the
consumer protocol's range assignment done by the leader; consumer-protocol members speak
ConsumerGroupHeartbeat v1 and acknowledge each assignment at once, as real clients do.
"Stable" = every partition assigned exactly once and, classic, every member synced in the same
generation; consumer protocol, nothing moved for one heartbeat round. Timed from the first member's start.
Usage: scripts/bench-coordinator [--members 100,1000] [--kinds static,dynamic,consumer] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path

from kcodec import api
from kcodec.generated.consumer_group_heartbeat import (ConsumerGroupHeartbeatRequest,
                                                       ConsumerGroupHeartbeatRequestTopicPartitions)
from kcodec.generated.consumer_protocol_assignment import ConsumerProtocolAssignment
from kcodec.generated.consumer_protocol_assignment import TopicPartition as AssignedTP
from kcodec.generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from kcodec.protocol import ApiKey, Error

JOIN, SYNC, HEARTBEAT, CGH = ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.CONSUMER_GROUP_HEARTBEAT


class AsyncWire:
    def __init__(self, reader, writer):
        self.reader, self.writer, self.corr = reader, writer, 0

    @classmethod
    async def open(cls, address: str) -> "AsyncWire":
        host, port = address.rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    async def call(self, api_key: int, version: int, body):
        self.corr += 1
        hdr = api.RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=self.corr,
                                client_id="bench")
        payload = hdr.encode(api.request_header_version(api_key, version)) + body.encode(version)
        self.writer.write(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        frame = await self.reader.readexactly(size)
        _, pos = api.ResponseHeader.decode_from(frame, 0, api.response_header_version(api_key, version))
        return api.RESPONSES[api_key].decode(memoryview(frame)[pos:], version)

    def close(self) -> None:
        self.writer.close()


def _subscription(topic: str) -> bytes:
    return struct.pack(">h", 0) + ConsumerProtocolSubscription(topics=[topic]).encode(0)


def _range(members: list[str], topic: str, partitions: int) -> dict[str, bytes]:
    out, ordered = {}, sorted(members)
    per, extra = divmod(partitions, len(ordered))
    start = 0
    for i, m in enumerate(ordered):
        n = per + (1 if i < extra else 0)
        body = ConsumerProtocolAssignment(assigned_partitions=[AssignedTP(topic=topic, partitions=list(range(start, start + n)))])
        out[m] = struct.pack(">h", 0) + body.encode(0)
        start += n
    return out


class Tally:
    def __init__(self, partitions: int):
        self.partitions, self.owned, self.last_change = partitions, {}, time.monotonic()

    def set(self, who, parts: frozenset) -> None:
        if self.owned.get(who) != parts:
            self.owned[who] = parts
            self.last_change = time.monotonic()

    def covered_once(self) -> bool:
        return sum(map(len, self.owned.values())) == self.partitions == len(frozenset().union(*self.owned.values()))


async def classic_member(coordinator: str, group: str, topic: str, partitions: int, i: int, static: bool,
                         tally: Tally, gens: dict, stop: asyncio.Event) -> None:
    w = await AsyncWire.open(coordinator)
    member_id, instance = "", (f"{group}-{i}" if static else None)
    try:
        while not stop.is_set():
            join = await w.call(JOIN, 9, JoinGroupRequest(
                group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=60000, member_id=member_id,
                group_instance_id=instance, protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=_subscription(topic))]))
            if join.error_code == Error.MEMBER_ID_REQUIRED:
                member_id = join.member_id
                continue
            if join.error_code:
                await asyncio.sleep(0.1)
                continue
            member_id = join.member_id
            assignments = []
            if join.leader == member_id and not join.skip_assignment:
                plan = _range([m.member_id for m in join.members], topic, partitions)
                assignments = [SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in plan.items()]
            sync = await w.call(SYNC, 5, SyncGroupRequest(group_id=group, generation_id=join.generation_id,
                                                          member_id=member_id, group_instance_id=instance,
                                                          protocol_type="consumer", protocol_name="range",
                                                          assignments=assignments))
            if sync.error_code:
                continue
            got = ConsumerProtocolAssignment.decode(memoryview(sync.assignment)[2:], 0) if sync.assignment else None
            tally.set(i, frozenset(p for t in (got.assigned_partitions if got else []) for p in t.partitions))
            gens[i] = join.generation_id
            while not stop.is_set():                           # heartbeat until a rebalance
                try:
                    await asyncio.wait_for(stop.wait(), 1.0)
                except asyncio.TimeoutError:
                    pass
                if stop.is_set():
                    break
                from kcodec.generated.heartbeat import HeartbeatRequest
                hb = await w.call(HEARTBEAT, 4, HeartbeatRequest(group_id=group, generation_id=join.generation_id,
                                                                 member_id=member_id, group_instance_id=instance))
                if hb.error_code:
                    gens.pop(i, None)
                    break
    finally:
        w.close()


async def consumer_member(coordinator: str, group: str, topic: str, i: int, tally: Tally, stop: asyncio.Event) -> None:
    w = await AsyncWire.open(coordinator)
    member_id, epoch, owned, first = uuid.uuid4().hex[:22], 0, {}, True
    try:
        while not stop.is_set():
            r = await w.call(CGH, 1, ConsumerGroupHeartbeatRequest(
                group_id=group, member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=60000 if first else -1,
                subscribed_topic_names=[topic] if first else None,
                topic_partitions=[ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t, partitions=sorted(p))
                                  for t, p in owned.items()] if (first or True) else None))
            first = False
            changed = False
            if r.error_code == 0:
                epoch = r.member_epoch
                if r.assignment is not None:
                    owned = {t.topic_id: set(t.partitions) for t in r.assignment.topic_partitions}
                    changed = True
                tally.set(i, frozenset(p for ps in owned.values() for p in ps))
            try:                                   # acknowledge a new assignment at once, else heartbeat later
                await asyncio.wait_for(stop.wait(), 0.01 if changed else r.heartbeat_interval_ms / 1000 or 1.0)
            except asyncio.TimeoutError:
                pass
    finally:
        w.close()


async def find_coordinator(bootstrap: str, group: str) -> str:
    from kcodec.generated.find_coordinator import FindCoordinatorRequest
    w = await AsyncWire.open(bootstrap)
    try:
        for _ in range(100):
            r = await w.call(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key=group, key_type=0))
            if r.error_code == 0:
                return f"{r.host}:{r.port}"
            await asyncio.sleep(0.2)
    finally:
        w.close()
    raise RuntimeError("no coordinator")


async def time_to_stable(bootstrap: str, topic: str, group: str, members: int, partitions: int, kind: str,
                         timeout: float = 600.0) -> float:
    coordinator = await find_coordinator(bootstrap, group)
    tally, gens, stop = Tally(partitions), {}, asyncio.Event()
    t0 = time.monotonic()
    if kind == "consumer":
        tasks = [asyncio.ensure_future(consumer_member(coordinator, group, topic, i, tally, stop)) for i in range(members)]
    else:
        tasks = [asyncio.ensure_future(classic_member(coordinator, group, topic, partitions, i, kind == "static",
                                                      tally, gens, stop)) for i in range(members)]
    try:
        while True:
            await asyncio.sleep(0.05)
            for t in tasks:
                if t.done() and t.exception():
                    raise t.exception()
            ready = len(tally.owned) == members and tally.covered_once() and (
                kind == "consumer" or (len(gens) == members and len(set(gens.values())) == 1))
            if ready:
                done = tally.last_change
                await asyncio.sleep(1.5)                   # nothing moved for a heartbeat round
                if tally.last_change == done and tally.covered_once():
                    return done - t0
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"no stable {kind} group of {members} after {timeout}s")
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)


def kshim_has_kip848() -> bool:
    core = Path(__file__).resolve().parents[2] / "shim" / "coordinator"
    return "68: (0, 1)" in (core / "core.py").read_text() and (core / "consumer" / "__init__.py").exists()


def main() -> int:
    from shim.localkafka import LocalKafka
    from shim.compat.pymembers import create_topic
    from shim.testing.kshimproc import KshimProcess
    from shim.testing.ports import free_port_block
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", default="100,1000")
    ap.add_argument("--kinds", default="static,dynamic,consumer")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    import signal
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))   # so the started Kafka and kshim are stopped
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as d:
        # both sides with Kafka's default consumer heartbeat interval (kshim has no flag for it yet)
        kafka = LocalKafka(nodes=1, base_port=free_port_block(2, start=47000), workdir=d,
                           overrides={"group.consumer.heartbeat.interval.ms": "5000"}).start()
        kshim = KshimProcess(kafka.bootstrap, free_port_block(5, start=48000), Path(d) / "kshim.log").start()
        try:
            for n in map(int, args.members.split(",")):
                for kind in args.kinds.split(","):
                    wheres = [("broker", kafka.bootstrap)]
                    if kind != "consumer" or kshim_has_kip848():
                        wheres.append(("kshim", kshim.bootstrap))
                    row = results.setdefault(f"{kind} {n}", {})
                    for r in range(args.rounds):
                        for where, bootstrap in wheres:
                            topic = group = f"bench-{kind}-{n}-{where}-{r}"
                            create_topic(bootstrap, topic, max(n, 200) if n > 100 else 2 * n)
                            try:
                                secs = asyncio.run(time_to_stable(bootstrap, topic, group, n,
                                                                  max(n, 200) if n > 100 else 2 * n, kind))
                            except Exception as e:
                                print(f"{kind} {n} {where}: FAILED {e!r}", flush=True)
                                continue
                            row.setdefault(where, []).append(secs)
                            print(f"{kind:8s} {n:5d} members, {where:6s}: stable in {secs:.2f}s", flush=True)
        finally:
            kshim.stop()
            kafka.stop()
    print("\n| group | Kafka (s) | kshim (s) | kshim/Kafka |\n| --- | --- | --- | --- |")
    for key, row in results.items():
        b = min(row["broker"]) if row.get("broker") else None
        k = min(row["kshim"]) if row.get("kshim") else None
        ratio = f"{k / b:.2f}" if b and k else "n/a"
        print(f"| {key} | {b and f'{b:.2f}'} | {k and f'{k:.2f}' if k else 'not measured'} | {ratio} |")
    out = Path("build/bench"); out.mkdir(parents=True, exist_ok=True)
    (out / "coordinator.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
