"""Bounded soak through kshim: a steady confluent-kafka producer (acks=all) and a group of consumers
(manual commits) on a 6-partition topic, one consumer closed and replaced every --bounce-s seconds.
Reports unexpected errors (goal 0), records produced/consumed, kshim's RSS at start/end (growth),
and the produce-to-consume latency per minute (drift). Usage: scripts/soak [--minutes 30]
[--consumers 3] [--rate 500] [--bounce-s 30]"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from shim.compat.pymembers import create_topic
from shim.localkafka import LocalKafka
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block
from testsuite.hardening.connections_bench import rss_kb

EXPECTED = ("REBALANCE_IN_PROGRESS", "_ASSIGNMENT_LOST", "_REVOKE", "_ASSIGN", "_PARTITION_EOF")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--consumers", type=int, default=3)
    ap.add_argument("--rate", type=int, default=500, help="records per second")
    ap.add_argument("--bounce-s", type=float, default=30)
    args = ap.parse_args()
    from confluent_kafka import Consumer, Producer
    with tempfile.TemporaryDirectory() as d:
        kafka = LocalKafka(nodes=1, base_port=free_port_block(2, start=45000), workdir=d).start()
        kshim = KshimProcess(kafka.bootstrap, free_port_block(5, start=46000), Path(d) / "kshim.log").start()
        errors: list[str] = []
        latencies: dict[int, list[float]] = {}
        produced = [0]
        seen: set[bytes] = set()
        stop = threading.Event()
        t_start = time.monotonic()
        topic, group = "soak", "soak-group"
        try:
            create_topic(kshim.bootstrap, topic, 6)
            rss0 = rss_kb(kshim.proc.pid)

            def produce():
                p = Producer({"bootstrap.servers": kshim.bootstrap, "acks": "all", "linger.ms": 5})
                n = 0
                while not stop.is_set():
                    t = time.monotonic()
                    for _ in range(max(args.rate // 10, 1)):
                        p.produce(topic, f"{n}:{time.time()}".encode(),
                                  on_delivery=lambda err, m: errors.append(f"produce: {err}") if err else None)
                        n += 1
                    p.poll(0)
                    time.sleep(max(0.0, 0.1 - (time.monotonic() - t)))
                p.flush(30)
                produced[0] = n

            def consume(stop_me: threading.Event):
                c = Consumer({"bootstrap.servers": kshim.bootstrap, "group.id": group,
                              "auto.offset.reset": "earliest", "enable.auto.commit": False})
                c.subscribe([topic])
                try:
                    while not stop_me.is_set():
                        msgs = c.consume(500, 0.5)
                        for m in msgs:
                            if m.error():
                                if not any(x in m.error().name() for x in EXPECTED):
                                    errors.append(f"consume: {m.error()}")
                                continue
                            key, sent = m.value().split(b":")
                            seen.add(key)
                            minute = int((time.monotonic() - t_start) // 60)
                            latencies.setdefault(minute, []).append((time.time() - float(sent)) * 1000)
                        if msgs:
                            try:
                                c.commit(asynchronous=False)
                            except Exception as e:   # a commit during a rebalance may be refused
                                if not any(x in str(e) for x in EXPECTED + ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION",
                                                                            "No offset stored")):
                                    errors.append(f"commit: {e}")
                finally:
                    c.close()

            threads = [threading.Thread(target=produce)]
            members = []
            for _ in range(args.consumers):
                ev = threading.Event()
                members.append((ev, threading.Thread(target=consume, args=(ev,))))
            for t in threads + [m[1] for m in members]:
                t.start()
            end = t_start + args.minutes * 60
            bounces = 0
            while time.monotonic() < end:
                time.sleep(min(args.bounce_s, max(0.0, end - time.monotonic())))
                if time.monotonic() >= end:
                    break
                ev, th = members.pop(0)            # bounce the oldest consumer
                ev.set()
                th.join(60)
                ev = threading.Event()
                th = threading.Thread(target=consume, args=(ev,))
                th.start()
                members.append((ev, th))
                bounces += 1
            stop.set()
            threads[0].join(60)
            deadline = time.monotonic() + 60
            while len(seen) < produced[0] and time.monotonic() < deadline:
                time.sleep(0.5)
            for ev, th in members:
                ev.set()
                th.join(60)
            rss1 = rss_kb(kshim.proc.pid)
        finally:
            kshim.stop()
            kafka.stop()
    per_min = {m: round(statistics.median(v), 1) for m, v in sorted(latencies.items())}
    result = {"minutes": args.minutes, "produced": produced[0], "consumed_distinct": len(seen),
              "missing": produced[0] - len(seen), "bounces": bounces, "unexpected_errors": len(errors),
              "error_samples": errors[:10], "kshim_rss_mb_start": rss0 / 1024, "kshim_rss_mb_end": rss1 / 1024,
              "latency_median_ms_per_minute": per_min}
    print(json.dumps(result, indent=2))
    out = Path("build/bench"); out.mkdir(parents=True, exist_ok=True)
    (out / "soak.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
