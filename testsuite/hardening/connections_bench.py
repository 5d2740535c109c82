"""One kshim, many connections: N idle client connections (TCP connected, nothing sent) and M
active classic-group members (raw wire: JoinGroup v9 with KIP-394 member id, SyncGroup v5,
Heartbeat v4 every second; G groups), then kshim's RSS per connection and the members' heartbeat
latency and errors. Usage: scripts/bench-connections [--idle 10000] [--members 1000] [--groups 10]
[--seconds 30]. RLIMIT_NOFILE is raised to the hard limit (kshim and this process inherit it)."""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import struct
import tempfile
import time
from pathlib import Path

from kcodec import api
from kcodec.generated.heartbeat import HeartbeatRequest
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from shim.localkafka import LocalKafka
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block


def rss_kb(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Conn:
    def __init__(self, reader, writer):
        self.r, self.w, self.corr = reader, writer, 0

    async def call(self, key: int, version: int, body):
        self.corr += 1
        hdr = api.RequestHeader(request_api_key=key, request_api_version=version, correlation_id=self.corr,
                                client_id="bench").encode(api.request_header_version(key, version))
        payload = hdr + body.encode(version)
        self.w.write(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", await self.r.readexactly(4))[0]
        frame = await self.r.readexactly(size)
        _, pos = api.ResponseHeader.decode_from(frame, 0, api.response_header_version(key, version))
        return api.RESPONSES[key].decode(memoryview(frame)[pos:], version)


async def member(host, port, group: str, stats: dict, stop: asyncio.Event) -> None:
    conn = Conn(*await asyncio.open_connection(host, port))
    member_id, gen = "", -1
    proto = [JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff")]
    while not stop.is_set():
        if gen < 0:
            resp = await conn.call(11, 9, JoinGroupRequest(group_id=group, session_timeout_ms=30000,
                                   rebalance_timeout_ms=60000, member_id=member_id, protocol_type="consumer",
                                   protocols=proto, reason="bench"))
            member_id = resp.member_id or member_id
            if resp.error_code:
                if resp.error_code != 79:
                    stats["errors"][f"join {resp.error_code}"] = stats["errors"].get(f"join {resp.error_code}", 0) + 1
                continue
            assignments = [SyncGroupRequestAssignment(member_id=m.member_id, assignment=b"")
                           for m in resp.members] if resp.leader == member_id else []
            sync = await conn.call(14, 5, SyncGroupRequest(group_id=group, generation_id=resp.generation_id,
                                   member_id=member_id, protocol_type="consumer", protocol_name="range",
                                   assignments=assignments))
            if sync.error_code == 0:
                gen = resp.generation_id
                stats["synced"] += 1
            continue
        await asyncio.sleep(1.0)
        t0 = time.monotonic()
        hb = await conn.call(12, 4, HeartbeatRequest(group_id=group, generation_id=gen, member_id=member_id))
        stats["hb_ms"].append((time.monotonic() - t0) * 1000)
        if hb.error_code:
            stats["rejoins"] += 1      # REBALANCE_IN_PROGRESS while others join: rejoin, as clients do
            gen = -1
    conn.w.close()


async def run(args, kshim: KshimProcess) -> dict:
    host, port = "127.0.0.1", kshim.listen_port + 2        # node 1's port: the group coordinator
    base = rss_kb(kshim.proc.pid)
    idle = []
    t0 = time.monotonic()
    for i in range(args.idle):
        idle.append(await asyncio.open_connection(host, kshim.listen_port))
    await asyncio.sleep(2)
    after_idle = rss_kb(kshim.proc.pid)
    stats = {"errors": {}, "synced": 0, "rejoins": 0, "hb_ms": []}
    stop = asyncio.Event()
    tasks = [asyncio.ensure_future(member(host, port, f"bench-{i % args.groups}", stats, stop))
             for i in range(args.members)]
    t1 = time.monotonic()
    while stats["synced"] < args.members and time.monotonic() - t1 < 300:
        await asyncio.sleep(0.5)
    stable_s = time.monotonic() - t1
    stats["hb_ms"].clear()
    await asyncio.sleep(args.seconds)
    active = rss_kb(kshim.proc.pid)
    alive = 0
    for reader, writer in idle[:100]:          # idle connections are still open
        alive += not reader.at_eof()
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    for _, w in idle:
        w.close()
    hb = sorted(stats["hb_ms"]) or [0.0]
    return {"idle": args.idle, "members": args.members, "groups": args.groups,
            "rss_start_mb": base / 1024, "rss_idle_mb": after_idle / 1024, "rss_active_mb": active / 1024,
            "kb_per_idle_connection": (after_idle - base) / args.idle,
            "kb_per_member": (active - after_idle) / max(args.members, 1),
            "idle_open_s": t1 - t0, "all_members_synced_s": stable_s, "synced": stats["synced"],
            "rejoins_in_window": stats["rejoins"], "heartbeats_in_window": len(stats["hb_ms"]),
            "heartbeat_p50_ms": statistics.median(hb), "heartbeat_p99_ms": hb[int(len(hb) * 0.99) - 1 if len(hb) > 1 else 0],
            "errors": stats["errors"], "idle_sample_alive": f"{alive}/{min(100, len(idle))}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--idle", type=int, default=10000)
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=30)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    need = args.idle + 2 * args.members + 200
    if need > hard:
        raise SystemExit(f"bench-connections: needs ~{need} file descriptors, the hard limit is {hard}")
    with tempfile.TemporaryDirectory() as d:
        kafka = LocalKafka(nodes=1, base_port=free_port_block(2, start=43000), workdir=d).start()
        kshim = KshimProcess(kafka.bootstrap, free_port_block(5, start=44000), Path(d) / "kshim.log",
                             ["--state-topic", ""]).start()
        try:
            result = asyncio.run(run(args, kshim))
        finally:
            kshim.stop()
            kafka.stop()
    result["rlimit_nofile"] = hard
    print(json.dumps(result, indent=2))
    out = Path("build/bench"); out.mkdir(parents=True, exist_ok=True)
    (out / "connections.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
