"""Time to a stable group of N real members (aiokafka consumers in one event loop), directly
against the real broker and through kshim, in the same run, alternating rounds.

"Stable" = every member has been assigned partitions, the assignments cover every partition once,
and no member has seen a revocation since. Timed from the moment the first member starts.
Usage: scripts/bench-rebalance [--members 100] [--partitions 200] [--rounds 3] [--static]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from shim.compat.pymembers import create_topic
from shim.localkafka import LocalKafka
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block


async def time_to_stable(bootstrap: str, topic: str, group: str, members: int, partitions: int,
                         static: bool, timeout: float = 300.0) -> float:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    owned: list[set] = [set() for _ in range(members)]
    last_change = [time.monotonic()]

    class Listener(ConsumerRebalanceListener):
        def __init__(self, i):
            self.i = i

        def on_partitions_revoked(self, revoked):
            owned[self.i] = set()
            last_change[0] = time.monotonic()

        def on_partitions_assigned(self, assigned):
            owned[self.i] = {tp.partition for tp in assigned}
            last_change[0] = time.monotonic()

    consumers = []
    t0 = time.monotonic()
    for i in range(members):
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=30000,
                             heartbeat_interval_ms=3000, max_poll_interval_ms=300000,
                             group_instance_id=f"{group}-{i}" if static else None)
        await c.start()
        c.subscribe([topic], listener=Listener(i))
        consumers.append(c)

    async def poll(c):
        while True:
            await c.getmany(timeout_ms=200)
    pollers = [asyncio.ensure_future(poll(c)) for c in consumers]
    try:
        while True:
            union = set().union(*owned)
            if all(owned) and len(union) == partitions and sum(map(len, owned)) == partitions:
                done = last_change[0]
                await asyncio.sleep(1.0)                 # stable: nothing moved for a second
                if last_change[0] == done:
                    return done - t0
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"no stable group of {members} after {timeout}s")
            await asyncio.sleep(0.05)
    finally:
        for p in pollers:
            p.cancel()
        await asyncio.gather(*(c.stop() for c in consumers), return_exceptions=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--static", action="store_true", help="members use group.instance.id")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        kafka = LocalKafka(nodes=1, base_port=free_port_block(2, start=43000), workdir=d).start()
        kshim = KshimProcess(kafka.bootstrap, free_port_block(5, start=44000), Path(d) / "kshim.log").start()
        try:
            results = {"broker": [], "kshim": []}
            for r in range(args.rounds):
                for where, bootstrap in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap)):
                    topic, group = f"bench-{where}-{r}", f"bench-{where}-{r}"
                    create_topic(bootstrap, topic, args.partitions)
                    secs = asyncio.run(time_to_stable(bootstrap, topic, group, args.members, args.partitions,
                                                      args.static))
                    results[where].append(secs)
                    print(f"round {r + 1} {where:6s}: stable group of {args.members} in {secs:.2f}s", flush=True)
            med = {k: statistics.median(v) for k, v in results.items()}
            kind = "static" if args.static else "dynamic"
            print(f"\n{args.members} {kind} aiokafka members, {args.partitions} partitions, {args.rounds} rounds: "
                  f"broker median {med['broker']:.2f}s, kshim median {med['kshim']:.2f}s, "
                  f"kshim/broker = {med['kshim'] / med['broker']:.2f}")
            out = Path("build/bench"); out.mkdir(parents=True, exist_ok=True)
            (out / f"rebalance-{kind}-{args.members}.json").write_text(json.dumps(
                {"members": args.members, "partitions": args.partitions, "kind": kind, "seconds": results,
                 "median": med}, indent=2))
        finally:
            kshim.stop()
            kafka.stop()


if __name__ == "__main__":
    main()
