"""Trace file formats compared (scripts/bench-trace-format): gzip / zstd JSON lines against Parquet.

A synthetic trace shaped like a busy kshim's (per 100 records: ~80 Produce/Fetch frames with batch
headers, ~12 Heartbeat/OffsetCommit frames with bodies, ~6 other pass-through frames, ~2 coordinator
events) is written through each format's writer; then read back in full, and read for one column
set with a filter (what a Spark job's first stage does: ts, group, api where group = X).

Writer CPU is what the trace writer thread would spend (it shares the GIL with the proxy); bytes
per record sizes the disk and rotation; the reads stand in for Spark's scan (Spark itself is not
run here). Parquet needs pyarrow (`pip install 'kshim[trace]'`); without it only JSON is measured.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from shim.trace.show import read_trace
from shim.trace.sink import JsonLinesSink, ParquetSink, _dumps, parquet_available


def synthetic(n: int, seed: int = 7) -> list[dict]:
    rnd = random.Random(seed)
    groups = [f"orders-{i}" for i in range(20)]
    out, ts = [], 1_000_000_000
    for i in range(n):
        ts += rnd.randint(10_000, 200_000)
        base = {"type": "frame", "ts_ns": ts, "wall_ms": 1_795_000_000_000 + ts // 1_000_000,
                "conn": rnd.randint(1, 400), "peer": f"10.0.{rnd.randint(0, 9)}.{rnd.randint(1, 250)}:{rnd.randint(30000, 60000)}",
                "listener": "node 1:9094", "upstream": "10.1.0.1:9092", "client_id": f"consumer-{rnd.randint(1, 50)}",
                "client_sw": "apache-kafka-java", "client_sw_version": "4.1.0",
                "dir": rnd.choice(("client->kshim", "kshim->upstream", "upstream->kshim", "kshim->client"))}
        r = rnd.random()
        if r < 0.80:
            api, key = ("Produce", 0) if rnd.random() < 0.5 else ("Fetch", 1)
            batches = [{"topic": "events", "partition": rnd.randint(0, 11), "base_offset": rnd.randint(0, 10**9),
                        "count": rnd.randint(1, 200), "last_offset_delta": 10, "size": rnd.randint(500, 60000),
                        "compression": rnd.choice(("none", "lz4", "zstd")), "producer_id": rnd.choice((-1, 4711)),
                        "producer_epoch": 0, "base_sequence": -1, "transactional": False, "control": False,
                        "max_timestamp": 1_795_000_000_000 + i} for _ in range(rnd.randint(1, 3))]
            out.append({**base, "api_key": key, "api": api, "api_version": 9 if key == 0 else 12,
                        "corr": i, "size": sum(b["size"] for b in batches) + 80, "batches": batches})
        elif r < 0.92:
            g = rnd.choice(groups)
            m = f"consumer-{g}-{rnd.randint(1, 30)}-3f2a9c1e-5b7d-4c1e-9a8f-{rnd.randint(10**11, 10**12 - 1)}"
            body = {"groupId": g, "generationId": rnd.randint(1, 40), "memberId": m, "groupInstanceId": None}
            out.append({**base, "api_key": 12, "api": "Heartbeat", "api_version": 4, "corr": i, "size": 120,
                        "group": g, "member": m, "generation": body["generationId"], "body": body})
        elif r < 0.98:
            out.append({**base, "api_key": 2, "api": "ListOffsets", "api_version": 7, "corr": i, "size": 90})
        else:
            g = rnd.choice(groups)
            ev = {"event": "state", "group": g, "ts": ts // 1_000_000, "frm": "Stable", "to": "PreparingRebalance",
                  "generation": rnd.randint(1, 40)}
            out.append({"type": "event", "ts_ns": ts, "wall_ms": base["wall_ms"], "event": "state", "group": g,
                        "generation": ev["generation"], "body": ev})
    return out


def _zstd_jsonl(directory: Path, recs: list[dict], level: int) -> None:
    import cramjam
    c = cramjam.zstd.Compressor(level)
    with open(directory / "trace-0-0-00001.jsonl.zst", "wb") as f:
        for i in range(0, len(recs), 2000):
            c.compress("".join(_dumps(r) + "\n" for r in recs[i:i + 2000]).encode())
            f.write(bytes(c.flush()))
        f.write(bytes(c.finish()))


def _write(fmt: str, directory: Path, recs: list[dict]) -> None:
    if fmt.startswith("jsonl.zst"):
        _zstd_jsonl(directory, recs, int(fmt.rsplit("-", 1)[1]))
        return
    if fmt.startswith("jsonl.gz"):
        sink = JsonLinesSink(directory, 1 << 40, level=int(fmt.rsplit("-", 1)[1]))
    else:
        sink = ParquetSink(directory, 1 << 40, compression=fmt.split("-", 1)[1])
    for i in range(0, len(recs), 2000):
        sink.write(recs[i:i + 2000])
    sink.close()


def _read_all(fmt: str, directory: Path) -> int:
    if fmt.startswith("jsonl.zst"):
        import cramjam
        data = bytes(cramjam.zstd.decompress(next(directory.iterdir()).read_bytes()))
        return sum(1 for line in data.splitlines() if json.loads(line))
    return sum(1 for _ in read_trace(directory))


def _read_filtered(fmt: str, directory: Path, group: str) -> int:
    if fmt.startswith("parquet"):
        import pyarrow.parquet as pq
        t = pq.read_table(next(directory.iterdir()), columns=["ts_ns", "group", "api"], filters=[("group", "==", group)])
        return t.num_rows
    if fmt.startswith("jsonl.zst"):
        import cramjam
        data = bytes(cramjam.zstd.decompress(next(directory.iterdir()).read_bytes()))
        return sum(1 for line in data.splitlines() if json.loads(line).get("group") == group)
    return sum(1 for r in read_trace(directory) if r.get("group") == group)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="scripts/bench-trace-format", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    args = p.parse_args(argv)
    recs = synthetic(args.records)
    fmts = ["jsonl.gz-1", "jsonl.gz-6", "jsonl.zst-3"]
    if parquet_available():
        fmts += ["parquet-zstd", "parquet-snappy"]
    else:
        print("pyarrow not installed: Parquet not measured (pip install 'kshim[trace]')")
    results = {}
    print(f"{args.records} synthetic trace records")
    print(f"{'format':16}{'write rec/s':>13}{'bytes/rec':>11}{'MB':>8}{'read all rec/s':>16}{'filtered read s':>17}")
    for fmt in fmts:
        d = Path(tempfile.mkdtemp(prefix="kshim-trace-bench-"))
        try:
            t0 = time.process_time()
            _write(fmt, d, recs)
            write_s = time.process_time() - t0
            size = sum(f.stat().st_size for f in d.iterdir())
            t0 = time.process_time()
            n = _read_all(fmt, d)
            read_s = time.process_time() - t0
            t0 = time.process_time()
            _read_filtered(fmt, d, "orders-3")
            filt_s = time.process_time() - t0
            assert n == len(recs), (fmt, n)
        finally:
            shutil.rmtree(d, ignore_errors=True)
        results[fmt] = {"write_rps": len(recs) / write_s, "bytes_per_record": size / len(recs), "mb": size / 2**20,
                        "read_all_rps": len(recs) / read_s, "filtered_read_s": filt_s}
        r = results[fmt]
        print(f"{fmt:16}{r['write_rps']:13.0f}{r['bytes_per_record']:11.1f}{r['mb']:8.1f}{r['read_all_rps']:16.0f}"
              f"{r['filtered_read_s']:17.3f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"records": args.records, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
