"""Transactions per second and their latency (p50/p99) for a consume-transform-produce loop's
transaction: begin, one record produced, the group's offsets sent (TxnOffsetCommit), commit; through
kshim versus the real broker, in the same run, alternating rounds (each after an unmeasured warm-up).
With `--ab DIR` a second kshim runs the code of DIR (another checkout's shim/ and codecs/), as
`kshim@DIR`: two versions side by side (e.g. before and after the marker watch of
shim/groupservice/txn_markers.py, which reads the offsets partition's high watermark per TxnOffsetCommit).
Usage: scripts/bench-txn [--seconds 5] [--rounds 3] [--ab DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from shim.compat.pymembers import create_topic
from shim.localkafka.cluster import LocalKafka
from shim.testing.ports import free_port_block
from testsuite.bench.commit_bench import start_kshim


STEPS: dict[str, list[float]] = {}


def _round(bootstrap: str, tag: str, topic: str, seconds: float) -> list[float]:
    """One producer's transactions for `seconds`: the latency of each (seconds); the time of its
    offsets (send_offsets_to_transaction) and of its commit go to STEPS[tag's side]."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    group = f"txnbench-{tag}"
    meta = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"txnbench-{tag}", "linger.ms": 0})
    p.init_transactions(60)
    out, n = [], 0
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            t0 = time.monotonic()
            p.begin_transaction()
            p.produce(topic, b"x" * 100)
            n += 1
            t1 = time.monotonic()
            p.send_offsets_to_transaction([TopicPartition(topic, 0, n)], meta.consumer_group_metadata(), 30)
            t2 = time.monotonic()
            p.commit_transaction(30)
            t3 = time.monotonic()
            out.append(t3 - t0)
            STEPS.setdefault(tag.rsplit("-", 1)[0] + ":offsets", []).append(t2 - t1)
            STEPS.setdefault(tag.rsplit("-", 1)[0] + ":commit", []).append(t3 - t2)
    finally:
        meta.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ab", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        kafka = LocalKafka(nodes=1, base_port=free_port_block(2, start=41100), workdir=d).start()
        procs = []
        try:
            topic = "txnbench"
            create_topic(kafka.bootstrap, topic, 1)
            kshim = start_kshim(kafka.bootstrap, free_port_block(5, start=41200), Path(d) / "kshim.log")
            procs.append(kshim)
            sides = [("broker", kafka.bootstrap), ("kshim", kshim.bootstrap)]
            if args.ab is not None:
                other = start_kshim(kafka.bootstrap, free_port_block(5, start=41300), Path(d) / "kshim-ab.log",
                                    args.ab.resolve())
                procs.append(other)
                sides.append((f"kshim@{args.ab.name}", other.bootstrap))
            for name, boot in sides:
                _round(boot, f"warm-{name}", topic, 2.0)
            got: dict[str, list[float]] = {name: [] for name, _ in sides}
            for r in range(args.rounds):
                order = sides[r % len(sides):] + sides[:r % len(sides)]
                for name, boot in order:
                    got[name] += _round(boot, f"{name}-{r}", topic, args.seconds)
            total = args.rounds * args.seconds
            print(f"{'side':<22} {'txn/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
            for name, lat in got.items():
                lat.sort()
                p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
                print(f"{name:<22} {len(lat) / total:8.1f} {statistics.median(lat) * 1000:8.2f} {p99 * 1000:8.2f}"
                      f"   (p50 ms: offsets {statistics.median(STEPS[name + ':offsets']) * 1000:.1f}, "
                      f"commit {statistics.median(STEPS[name + ':commit']) * 1000:.1f})")
        finally:
            for p in procs:
                p.stop()
            kafka.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
