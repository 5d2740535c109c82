"""`kshim trace import CAPTURE... --out DIR`: packet captures (and brokers' server logs) into a kshim
trace directory that `kshim trace show` and `kshim trace analyze` read unchanged (docs/kshim-trace-import.md).

Steps: the capture files' TCP segments in time order (packets.py) -> Kafka connections, reassembled
and framed (importer.py, streams.py, framing.py) -> trace records written as they come (the same
rotating files as `kshim run --trace`, sink.py) -> the coordinator events inferred from the group
frames (infer.py) and those read from `--broker-log` files (broker_log.py, aligned to the capture's
clock: align.py) -> `import-summary.json` with what was decoded and what was lost.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .losses import loss_lines
from .pipeline import finish_import, import_part


def run_import(captures: list[Path], out: Path, ports: set[int], bodies: bool = False, fmt: str = "jsonl",
               broker_logs: list[Path] | None = None, log_tz: str | None = None, detect: bool = True,
               rotate_mb: float = 64, master: str | None = None) -> dict:
    """Imports `captures` into the trace directory `out` (in this process, or on Spark with `master`:
    spark_import.py) and returns the summary (also written to out/import-summary.json)."""
    t0 = time.monotonic()
    if master:
        from .spark_import import import_on_spark
        parts, frames = import_on_spark(master, captures, out, ports, bodies, fmt, detect, rotate_mb)
    else:
        part, frames = import_part(captures, out, ports, bodies, fmt, detect, rotate_mb=rotate_mb)
        parts = [part]
    return finish_import(out, parts, frames, fmt, broker_logs, log_tz, t0, master)


def _expand(paths: list[str]) -> list[Path]:
    out = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out += sorted(q for q in path.iterdir() if q.is_file())
        else:
            out.append(path)
    return out


def cmd_import(args) -> int:
    captures = _expand(args.captures)
    missing = [str(p) for p in captures if not p.is_file()]
    if missing or not captures:
        print(f"kshim trace import: no such capture file: {', '.join(missing) or '(none given)'}", file=sys.stderr)
        return 2
    logs = _expand(args.broker_log or [])
    if any(not p.is_file() for p in logs):
        print(f"kshim trace import: no such broker log: {', '.join(str(p) for p in logs if not p.is_file())}",
              file=sys.stderr)
        return 2
    out = Path(args.out)
    if out.exists() and any(out.glob("trace-*")) and not args.force:
        print(f"kshim trace import: {out} already holds trace files (--force adds to them)", file=sys.stderr)
        return 2
    ports = set(args.port or [9092])
    s = run_import(captures, out, ports, bodies=args.bodies, fmt=args.trace_format, broker_logs=logs,
                   log_tz=args.log_tz, detect=not args.no_detect, master=args.master)
    if all(f.get("error") and not f.get("packets") for f in s["captures"]):
        for f in s["captures"]:
            print(f"kshim trace import: {f['file']}: {f['error']}", file=sys.stderr)
        return 1
    print(summary_text(s))
    return 0


def summary_text(s: dict) -> str:
    lines = [f"read {s['packets']} packets ({s['tcp_segments']} TCP segments) from {len(s['captures'])} file(s) "
             f"in {s['seconds']} s",
             f"{s['kafka_connections']} Kafka connection(s): {s['frames']} frames; {s['inferred_events']} "
             f"coordinator events inferred from the frames"]
    lines += loss_lines(s)
    if s["broker_log"]:
        b = s["broker_log"]
        lines.append(f"broker log: {b.get('events_in_capture', 0)} coordinator event(s) in the capture's time "
                     f"(of {b.get('events', 0)} from {b.get('lines_read', 0)} line(s)); clock offset "
                     f"{b.get('offset_ms')} ms ({b.get('alignment')})")
    lines.append(f"trace records: {s['records']} in {len(s['files'])} file(s); summary: import-summary.json")
    return "\n".join(lines)


def add_parser(trace_parser):
    """Adds `import` next to `show` under the `kshim trace` parser; returns it (the coordinator's
    records add their options: shim/offsets_import.py)."""
    import argparse
    tsub = next(a for a in trace_parser._actions if isinstance(a, argparse._SubParsersAction))
    p = tsub.add_parser("import", help="packet captures (pcap/pcapng, gzip'd too) and broker logs into a trace",
                        description="Reads tcpdump/Wireshark captures of Kafka traffic (a rotated set as one "
                                    "input), reassembles the TCP streams and writes kshim trace records, with the "
                                    "group coordinator's events inferred from the frames (or read from the "
                                    "brokers' server.log with --broker-log); `kshim trace show|analyze` read the "
                                    "result. Docs: docs/kshim-trace-import.md.")
    p.add_argument("captures", nargs="*", metavar="CAPTURE", help="pcap / pcapng files (or a directory of them)")
    p.add_argument("--out", required=True, metavar="DIR", help="the trace directory to write")
    p.add_argument("--port", type=int, action="append", metavar="PORT",
                   help="a broker port (repeatable; default 9092); other connections are Kafka when their "
                        "first request is ApiVersions, Metadata or SaslHandshake")
    p.add_argument("--no-detect", action="store_true", help="only the --port connections")
    p.add_argument("--broker-log", action="append", metavar="FILE",
                   help="a broker's server.log (repeatable; rotated files and .gz too)")
    p.add_argument("--log-tz", default=None, metavar="ZONE",
                   help="the zone of the broker log's timestamps (default UTC; e.g. Europe/Berlin)")
    p.add_argument("--bodies", action="store_true", help="decode every body (default: the group, metadata "
                                                         "and SASL APIs, as `kshim run --trace`)")
    p.add_argument("--trace-format", choices=("jsonl", "parquet"), default="jsonl",
                   help="the trace files written: jsonl (gzip JSON lines, default) or parquet (kshim[trace])")
    p.add_argument("--master", default=None, help="import on Spark (local[N], spark://host:port): one task per "
                                                  "capture file, for large rotated sets (pip install 'kshim[analyze]')")
    p.add_argument("--force", action="store_true", help="write into a directory that already has trace files")
    p.set_defaults(func=cmd_import)
    return p
