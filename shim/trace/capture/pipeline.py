"""The import's two halves: `import_part` turns capture files into frame records (in this process, or
one Spark task per file: spark_import.py) and hands back the group frames; `finish_import` adds the
coordinator events (inferred from those frames: infer.py; from brokers' logs: align.py) and writes
`import-summary.json` with what was decoded and what was lost."""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path

from ..sink import open_sink
from .importer import Importer
from .infer import infer_events, wanted
from .packets import ReadStats, segments

BATCH = 2000
CONN_STRIDE = 10_000_000     # connection ids of part i start at i * CONN_STRIDE
# figures summed over the parts of an import
_SUMS = ("packets", "tcp_segments", "not_tcp", "ip_fragments_skipped", "unknown_link_packets",
         "segments_cut_by_snaplen", "kafka_connections", "other_tcp_connections", "frames", "records")


def import_part(captures: list[Path], out: Path, ports: set[int], bodies: bool = False, fmt: str = "jsonl",
                detect: bool = True, conn_base: int = 0, rotate_mb: float = 64) -> tuple[dict, list[dict]]:
    """Frame records of `captures` (one time-ordered set) written to `out`; (figures, group frames).
    `conn_base`: added to connection ids (parts imported apart keep theirs distinct)."""
    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    sink = open_sink(fmt, out, int(rotate_mb * 1024 * 1024), tag=f"part{conn_base // CONN_STRIDE}")
    pending: list[dict] = []
    frames: list[dict] = []

    def emit(rec: dict) -> None:
        pending.append(rec)
        if wanted(rec):
            frames.append(rec)
        if len(pending) >= BATCH:
            sink.write(pending)
            pending.clear()

    read = ReadStats()
    imp = Importer(ports, emit, bodies=bodies, detect=detect)
    imp.next_id = conn_base
    header = {"type": "trace_start", "ts_ns": 0, "wall_ms": 0,
              "info": {"import": [str(p) for p in captures], "ports": sorted(ports), "bodies": bodies, "format": 1}}
    pending.append(header)
    for seg in segments(captures, read):
        imp.feed(seg)
    conns = imp.finish()
    first = min((f["first_ts"] for f in read.files if f["first_ts"] is not None), default=None)
    if first is not None:
        header["ts_ns"], header["wall_ms"] = int(first * 1e9), int(first * 1000)
    if pending:
        sink.write(pending)
    sink.close()
    part = {"captures": read.files, "packets": read.packets, "tcp_segments": read.tcp, "not_tcp": read.not_tcp,
            "ip_fragments_skipped": read.fragments, "unknown_link_packets": read.unknown_link,
            "segments_cut_by_snaplen": read.truncated, "kafka_connections": imp.stats.connections,
            "tls_connections": imp.stats.tls, "other_tcp_connections": imp.stats.not_kafka,
            "frames": imp.stats.frames, "records": imp.stats.records, "connections": conns,
            "files": [str(p) for p in getattr(sink, "files", [])], "seconds": round(time.monotonic() - t0, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    return part, frames


def finish_import(out: Path, parts: list[dict], frames: list[dict], fmt: str = "jsonl",
                  broker_logs: list[Path] | None = None, log_tz: str | None = None, t0: float | None = None,
                  master: str | None = None) -> dict:
    events = infer_events(frames)
    log_summary = None
    if broker_logs:
        from .align import merge_broker_events
        caps = [c for p in parts for c in p["captures"] if c["first_ts"] is not None]
        window = (int(min(c["first_ts"] for c in caps) * 1000), int(max(c["last_ts"] for c in caps) * 1000)) \
            if caps else None
        events, log_summary = merge_broker_events(events, broker_logs, log_tz, window)
    files = [f for p in parts for f in p["files"]]
    if events:
        sink = open_sink(fmt, out, 64 * 1024 * 1024, tag="events")
        sink.write(events)
        sink.close()
        files += [str(p) for p in getattr(sink, "files", [])]
    conns = sorted((c for p in parts for c in p["connections"]), key=lambda c: c["conn"])
    summary = {k: sum(p[k] for p in parts) for k in _SUMS}
    summary["records"] += len(events)
    summary.update({
        "captures": [f for p in parts for f in p["captures"]],
        "tls_connections": [t for p in parts for t in p["tls_connections"]],
        "lost_frames": sum(c["lost_frames"] for c in conns), "resyncs": sum(c["resyncs"] for c in conns),
        "skipped_bytes": sum(c["skipped_bytes"] for c in conns), "gap_bytes": sum(c["gap_bytes"] for c in conns),
        "duplicate_bytes": sum(c["duplicate_bytes"] for c in conns),
        "undecoded_frames": sum(c["undecoded"] for c in conns),
        "unmatched_responses": sum(c["unmatched_responses"] for c in conns),
        "inferred_events": sum(1 for e in events if e.get("inferred")),
        "broker_log": log_summary, "master": master, "parts": len(parts),
        "connections": conns, "files": files,
        "import_seconds": max(p["seconds"] for p in parts),
        "seconds": round(time.monotonic() - t0, 2) if t0 is not None else None,
        "peak_rss_mb": max(max(p["peak_rss_mb"] for p in parts),
                           round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)),
    })
    (out / "import-summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary
