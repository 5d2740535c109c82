"""Acknowledged, durable OffsetCommits per second and commit latency (p50/p99), through kshim (whose
commits are appended acks=all to its state topic before the answer) versus the real broker's own
coordinator (__consumer_offsets), in the same run, alternating rounds (each round starting one side later).

N concurrent committers, each its own simple group (generation -1) on its own connection, each
commits `--partitions` partitions of one topic at increasing offsets, one commit in flight per
committer (a synchronous commit loop), for `--seconds` per round. An unmeasured warm-up round on
each side comes first (the broker's JIT, kshim's caches). Each round also reports the CPU the
kshim and broker processes used per acknowledged commit (from /proc; local broker only).
With `--nodes 3` the local cluster has three brokers and both sides append to replicated partitions
(__consumer_offsets and kshim's state topic: replication factor 3, acks=all), as in production.
With `--floor`, a third side measures what kshim's durability costs at least: each committer
instead sends its commit's records (`--partitions` of them, offset-record sized) as a Produce with
acks=all to one partition of a topic (to its leader), one in flight, no kshim in the path: kshim's
commit latency cannot go below the broker's own commit latency plus this round trip.
With `--proxy-floor`, three sides measure stand-ins doing only kshim's durable part (two compiled
from commit_floor/*.go with Go into build/bench/, one in Python): each answers OffsetCommit v8/v9 itself after
appending one offset-sized record per committed partition to its own state topic (kshim's partition
count and settings) acks=all in group-commit rounds as kshim does, and nothing else (no group state,
no checks); the committers connect to them directly. "proxy-floor" serves each client with a goroutine
and appends from a writer goroutine; "proxy-floor-loop" does it all in one epoll loop on one thread,
kshim's own shape; "proxy-floor-py" is that loop in Python (commit_floor_py.py: kshim's event loop,
kcodec, its batch encoder and client, no coordinator). What kshim's design reaches on this machine
without Python's costs, and what Python's event loop and codec alone cost: kshim/proxy-floor-loop
says how much of the gap to the broker is Python, kshim/proxy-floor-py how much is kshim's own logic.
With `--ab DIR` a second kshim runs the code of DIR (a folder holding another shim/ and codecs/),
measured in the same rounds as `kshim@DIR`: two versions of the code side by side.
Usage: scripts/bench-commits [--committers 16] [--partitions 4] [--seconds 5] [--rounds 3]
                             [--warmup 5] [--nodes 1|3] [--upstream host:port] [--ab DIR]
                             [--floor] [--proxy-floor]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)
from kcodec.protocol import ApiKey
from shim.compat.pymembers import create_topic
from shim.config import Config
from shim.localkafka import LocalKafka
from shim.kafkaclient.client import UpstreamClient
from testsuite.bench.cluster_lookup import coordinator_of, partition_leaders
from testsuite.bench.commit_floor_proc import FloorProcess, create_state_topic
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block

COMMIT, PRODUCE = ApiKey.OFFSET_COMMIT, ApiKey.PRODUCE
FLOOR_TOPIC = "bench-commits-floor"
FLOOR_MODES = {"proxy-floor": "goroutines", "proxy-floor-loop": "loop", "proxy-floor-py": "python"}   # side -> mode


async def timed_requests(address: tuple[str, int], api_key: int, version: int, make_request, error_codes,
                         until: float, latencies: list[float], label: str = "") -> int:
    """One connection to `address` sending make_request(n) for n = 1, 2, ... one at a time until
    `until`: the latency of each answer whose error_codes(answer) are all 0 goes to `latencies`;
    returns how many answers had an error (each followed by a short back-off; the first one printed
    when `label` is given)."""
    client = await UpstreamClient.connect(Config(), *address)
    n = errors = 0
    try:
        while time.monotonic() < until:
            n += 1
            req = make_request(n)
            t0 = time.perf_counter()
            resp = await client.request(api_key, version, req)
            dt = time.perf_counter() - t0
            codes = list(error_codes(resp))
            if all(c == 0 for c in codes):
                latencies.append(dt)
            else:
                errors += 1
                if errors == 1 and label:
                    print(f"{label}: errors", set(codes))
                await asyncio.sleep(0.05)
    finally:
        client.close()
    return errors


async def committer(coordinator: tuple[str, int], group: str, topic: str, partitions: int, until: float,
                    latencies: list[float]) -> int:
    def commit(n: int) -> OffsetCommitRequest:
        return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequestTopic(name=topic, partitions=[
                OffsetCommitRequestPartition(partition_index=p, committed_offset=n)
                for p in range(partitions)])])
    return await timed_requests(coordinator, COMMIT, 8, commit,
                                lambda resp: (p.error_code for t in resp.topics for p in t.partitions),
                                until, latencies, label=f"{coordinator} {group}")


async def producer(broker: tuple[str, int], partition: int, records: int, until: float,
                   latencies: list[float]) -> int:
    """The floor side: a commit's records appended as kshim appends them (one batch, acks=all)."""
    from kcodec.generated.produce import PartitionProduceData, ProduceRequest, TopicProduceData
    from shim.state.batch import encode_batch
    key, value = b"k" * 40, b"v" * 44          # an offset record's key and value sizes

    def produce(n: int) -> ProduceRequest:
        return ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
            name=FLOOR_TOPIC, partition_data=[PartitionProduceData(
                index=partition, records=encode_batch([(key, value)] * records, int(time.time() * 1000)))])])
    return await timed_requests(broker, PRODUCE, 9, produce,
                                lambda resp: (p.error_code for t in resp.responses for p in t.partition_responses),
                                until, latencies)


async def round_(bootstrap: str, topic: str, tag: str, committers: int, partitions: int, seconds: float) -> dict:
    latencies: list[float] = []
    if tag.startswith("floor"):
        leaders = await partition_leaders(bootstrap, FLOOR_TOPIC)     # each Produce to its partition's leader
        until = time.monotonic() + seconds
        t0 = time.monotonic()
        errors = await asyncio.gather(*(producer(leaders[i % len(leaders)], i % len(leaders), partitions, until,
                                                 latencies) for i in range(committers)))
    else:
        groups = [f"bench-{tag}-{i}" for i in range(committers)]
        if tag.startswith("proxy-floor"):     # the floor answers OffsetCommit only: no FindCoordinator
            host, port = bootstrap.rsplit(":", 1)
            coordinators = [(host, int(port))] * committers
        else:
            coordinators = await asyncio.gather(*(coordinator_of(bootstrap, g) for g in groups))   # before the clock
        until = time.monotonic() + seconds
        t0 = time.monotonic()
        errors = await asyncio.gather(*(committer(c, g, topic, partitions, until, latencies)
                                        for c, g in zip(coordinators, groups)))
    elapsed = time.monotonic() - t0
    lat = sorted(latencies)
    return {"commits_per_s": len(lat) / elapsed, "p50_ms": 1000 * lat[len(lat) // 2] if lat else None,
            "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
            "errors": sum(errors), "commits": len(lat)}


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes `pids` used so far (0 for unknown ones)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def measured(run, pids: dict[str, list[int]]) -> dict:
    """run() -> a round's result, plus the CPU microseconds per commit each group of processes in
    `pids` used."""
    before = {k: cpu_seconds(p) for k, p in pids.items()}
    res = run()
    for k, p in pids.items():
        used = cpu_seconds(p) - before[k]
        res[f"{k}_cpu_us_per_commit"] = 1e6 * used / res["commits"] if res["commits"] and p else None
    return res


def start_kshim(upstream: str, port: int, log: Path, src: Path | None = None) -> KshimProcess:
    """A kshim process; from `src` (its shim/ and codecs/ first on the path) when given."""
    return KshimProcess(upstream, port, log, code_dir=src).start()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--committers", type=int, default=16)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds of unmeasured commits on each side first")
    ap.add_argument("--upstream", default="", help="an existing cluster (default: a local Kafka of --nodes)")
    ap.add_argument("--nodes", type=int, choices=(1, 3), default=1, help="brokers of the local cluster (default 1)")
    ap.add_argument("--port-base", type=int, default=43000, help="first port to look for free ones from")
    ap.add_argument("--floor", action="store_true",
                    help="also measure the floor: the commits' records produced (acks=all) straight to the broker")
    ap.add_argument("--proxy-floor", action="store_true",
                    help="also measure stand-ins doing only kshim's durable commit part (two of them need Go)")
    ap.add_argument("--ab", type=Path, default=None, metavar="DIR",
                    help="also measure a kshim running the code in DIR (another checkout), as kshim@DIR")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        kafka = None
        upstream = args.upstream
        if not upstream:
            kafka = LocalKafka(nodes=args.nodes, base_port=free_port_block(2 * args.nodes, start=args.port_base),
                               workdir=d).start()
            upstream = kafka.bootstrap
        kshim = start_kshim(upstream, free_port_block(5, start=args.port_base + 20), Path(d) / "kshim.log")
        other = None
        floors: dict[str, FloorProcess] = {}
        try:
            if args.ab is not None:
                other = start_kshim(upstream, free_port_block(5, start=args.port_base + 40), Path(d) / "kshim-ab.log",
                                    args.ab.resolve())
            topic = f"bench-commits-{int(time.time())}"
            create_topic(upstream, topic, args.partitions)
            if args.floor:
                create_topic(upstream, FLOOR_TOPIC, args.committers)
            for i, (side, mode) in enumerate(FLOOR_MODES.items() if args.proxy_floor else ()):
                state = f"bench-commits-{side}-state"
                floors[side] = FloorProcess(upstream, free_port_block(1, start=args.port_base + 60 + 10 * i),
                                            Path(d) / f"{side}.log", create_state_topic(upstream, state),
                                            state, mode).start()
            # the broker creates __consumer_offsets at the first FindCoordinator: do that before timing
            asyncio.run(coordinator_of(upstream, "bench-warmup", timeout=60.0))
            pids = {"kshim": [kshim.proc.pid], "broker": [n.pid for n in kafka.nodes if n.pid] if kafka else []}
            sides = [("broker", upstream), ("kshim", kshim.bootstrap)]
            if other is not None:
                ab = f"kshim@{args.ab.name}"
                pids[ab] = [other.proc.pid]
                sides.append((ab, other.bootstrap))
            for side, proc in floors.items():
                pids[side] = [proc.proc.pid]
                sides.append((side, "%s:%d" % proc.address))
            if args.floor:
                sides.append(("floor", upstream))
            if args.warmup > 0:
                for where, bootstrap in sides:
                    asyncio.run(round_(bootstrap, topic, f"{where}-warm", args.committers, args.partitions,
                                       args.warmup))
            results: dict[str, list[dict]] = {where: [] for where, _ in sides}
            for r in range(args.rounds):
                # each round starts one side later: no side always runs right after the same other one
                # (an A/B of one code against itself showed the later side ahead in 2 rounds of 3)
                for where, bootstrap in sides[r % len(sides):] + sides[:r % len(sides)]:
                    res = measured(lambda: asyncio.run(round_(bootstrap, topic, f"{where}-{r}", args.committers,
                                                              args.partitions, args.seconds)), pids)
                    results[where].append(res)
                    cpu = "  ".join(f"{k} {res[f'{k}_cpu_us_per_commit']:.0f} us CPU/commit" for k in pids
                                    if (res.get(f"{k}_cpu_us_per_commit") or 0) >= 1)
                    print(f"round {r + 1} {where:16s}: {res['commits_per_s']:8.0f} commits/s  "
                          f"p50 {res['p50_ms']:.2f} ms  p99 {res['p99_ms']:.2f} ms  errors {res['errors']}  {cpu}",
                          flush=True)
            med = {w: {k: statistics.median(x[k] for x in v) for k in ("commits_per_s", "p50_ms", "p99_ms")}
                   for w, v in results.items()}
            cluster = args.upstream or f"{args.nodes} local broker(s)"
            print(f"\n{cluster}, {args.committers} committers x {args.partitions} partitions, {args.rounds} rounds of "
                  f"{args.seconds:.0f}s (medians): broker {med['broker']['commits_per_s']:.0f}/s "
                  f"p99 {med['broker']['p99_ms']:.2f} ms; kshim {med['kshim']['commits_per_s']:.0f}/s "
                  f"p99 {med['kshim']['p99_ms']:.2f} ms; throughput kshim/broker = "
                  f"{med['kshim']['commits_per_s'] / med['broker']['commits_per_s']:.2f}")
            if "floor" in med:
                floor, broker, mine = med["floor"], med["broker"], med["kshim"]
                print(f"floor (the records produced acks=all, no kshim): {floor['commits_per_s']:.0f}/s "
                      f"p50 {floor['p50_ms']:.2f} ms p99 {floor['p99_ms']:.2f} ms; broker p50 + floor p50 = "
                      f"{broker['p50_ms'] + floor['p50_ms']:.2f} ms (kshim p50 {mine['p50_ms']:.2f})")
            for where in results:
                if where.startswith(("kshim@", "proxy-floor")):
                    print(f"{where}: {med[where]['commits_per_s']:.0f}/s p50 {med[where]['p50_ms']:.2f} ms "
                          f"p99 {med[where]['p99_ms']:.2f} ms; {where}/broker = "
                          f"{med[where]['commits_per_s'] / med['broker']['commits_per_s']:.2f}, kshim/{where} = "
                          f"{med['kshim']['commits_per_s'] / med[where]['commits_per_s']:.2f}")
            out = Path("build/bench")
            out.mkdir(parents=True, exist_ok=True)
            (out / f"commits-{args.committers}-{args.nodes}n.json").write_text(json.dumps(
                {"args": vars(args), "rounds": results, "median": med}, indent=2, default=str))
        finally:
            kshim.stop()
            if other is not None:
                other.stop()
            for proc in floors.values():
                proc.stop()
            if kafka is not None:
                kafka.stop()


if __name__ == "__main__":
    main()
