"""The trace directory an import of the coordinator's records writes: its events (trace records the
analysis reads unchanged), a `trace_start` header naming the source, and `import-summary.json` with what
was read and what could not be (compacted history, records of unknown versions, a start after the log's)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..sink import open_sink
from .history import RecordHistory

SUMMARY_FILE = "import-summary.json"


class RecordsTrace:
    """The trace directory being written: `write(events)` as they come (flushed: `trace show --follow`
    and a live `trace analyze` read it while it grows), `close(history)` writes the summary."""

    def __init__(self, out: Path, source: dict, fmt: str = "jsonl", t0: float | None = None):
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.source, self.t0 = out, source, t0 if t0 is not None else time.monotonic()
        self.sink = open_sink(fmt, out, 64 * 1024 * 1024, tag="records")
        self.header: dict | None = {"type": "trace_start", "info": {"import": "consumer_offsets", **source, "format": 1}}
        self.kinds: dict[str, int] = {}
        self.events = self.inferred = 0
        self.extra: dict = {}               # more summary sections (broker_log)

    def write(self, events: list[dict]) -> None:
        if not events:
            return
        if self.header is not None:
            first = events[0]["wall_ms"]
            self.header.update(ts_ns=first * 1_000_000, wall_ms=first)
            events, self.header = [self.header] + events, None
        for e in events:
            if e["type"] == "event":
                self.kinds[e["event"]] = self.kinds.get(e["event"], 0) + 1
                self.events += 1
                self.inferred += bool(e.get("inferred"))
        self.sink.write(events)
        self.sink.flush()

    def close(self, history: RecordHistory) -> dict:
        if self.header is not None:         # nothing happened: the header alone says what was read
            self.header.update(ts_ns=0, wall_ms=0)
            self.sink.write([self.header])
        self.sink.close()
        summary = {"source": self.source, "consumer_offsets": history.summary.as_dict(), "records": self.events + 1,
                   "events": self.events, "inferred_events": self.inferred, "events_by_kind": self.kinds,
                   "files": [str(p) for p in getattr(self.sink, "files", [])],
                   "seconds": round(time.monotonic() - self.t0, 2), **self.extra}
        (self.out / SUMMARY_FILE).write_text(json.dumps(summary, indent=1, default=str))
        return summary


def records_losses(s: dict) -> list[dict]:
    """[{"what", "fix"}]: what the records read cannot tell (losses.py puts them with a capture's)."""
    read = s.get("consumer_offsets")
    if not read:
        return []
    out = []
    for p, r in sorted((read.get("partitions") or {}).items(), key=lambda kv: int(kv[0])):
        if r.get("missing_offsets"):
            out.append({"what": f"__consumer_offsets-{p}: {r['missing_offsets']} record(s) compacted away before "
                                f"offset {r['complete_from']}: the history before it is each key's last record "
                                f"only (the state in force then, not its changes)",
                        "fix": "import more often (or `--follow`) to keep the history before the log cleaner "
                               "compacts it"})
        elif r.get("start") and r.get("log_start") is not None and r["start"] > 0 and r["log_start"] > 0 \
                and r["start"] == r["log_start"]:
            out.append({"what": f"__consumer_offsets-{p}: the log starts at offset {r['log_start']}: what came "
                                f"before is gone", "fix": None})
    if (s.get("source") or {}).get("since"):
        out.append({"what": f"records before {s['source']['since']} were not read: each group's first record "
                            "after it is the state in force, not a change", "fix": None})
    for what, n in sorted((read.get("skipped") or {}).items()):
        out.append({"what": f"{n} record(s) skipped: {what}", "fix": "a newer kshim reads newer record versions"})
    return out


def summary_text(s: dict) -> str:
    read = s["consumer_offsets"]
    parts = read["partitions"]
    lines = [f"read {read['records']} records of __consumer_offsets ({len(parts)} partition(s)) in {s['seconds']} s; "
             f"{len(read['groups'])} group(s)",
             f"{s['events']} coordinator events ({s['inferred_events']} with an inferred reason): "
             + ", ".join(f"{k} {v}" for k, v in sorted(s["events_by_kind"].items()))]
    lines += [f"lost: {x['what']}" + (f"; {x['fix']}" if x["fix"] else "") for x in records_losses(s)]
    if s.get("broker_log"):
        b = s["broker_log"]
        lines.append(f"broker log: {b.get('events_used', 0)} coordinator event(s) used (of {b.get('events', 0)} from "
                     f"{b.get('lines_read', 0)} line(s)); the coordinator's clock stamps both: no alignment")
    lines.append(f"trace records: {s['records']} in {len(s['files'])} file(s); summary: {SUMMARY_FILE}")
    return "\n".join(lines)
