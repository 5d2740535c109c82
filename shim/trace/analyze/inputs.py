"""What one run of `kshim trace analyze` reads, and how far its data goes.

Complete files (`trace-*.jsonl.gz`, `trace-*.parquet`) are read as they are. The `.jsonl.gz.part`
file of a running kshim is snapshotted (shim/trace/live.py): its readable prefix, up to the last
complete line, copied to a temporary plain JSON lines file that Spark reads and that is removed when
the run ends; a file renamed (closed) between the listing and the copy is simply read whole. An open
Parquet file (`.parquet.part`) has no footer yet and is left out; the sink closes one at most
PARQUET_MAX_AGE_S after it started. `note()` says all of that in one line."""

from __future__ import annotations

import datetime as dt
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..live import PART, final_name, snapshot_part
from ..sink import PARQUET_MAX_AGE_S


def clock(wall_ms: int | None) -> str:
    """HH:MM:SS.mmm UTC of a record's wall_ms."""
    if wall_ms is None:
        return "?"
    return dt.datetime.fromtimestamp(wall_ms / 1000, dt.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


@dataclass
class TraceInputs:
    directory: Path
    jsonl: list[str] = field(default_factory=list)      # what Spark reads (snapshots included)
    parquet: list[str] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)     # per input: name, state, bytes (+ live: records, last)
    left_out: list[dict] = field(default_factory=list)  # name, reason
    _tmp: tempfile.TemporaryDirectory | None = None
    _names: dict[str, str] = field(default_factory=dict)  # snapshot file name -> trace file name

    @property
    def live(self) -> bool:
        return any(f["state"] == "live" for f in self.files)

    @property
    def empty(self) -> bool:
        return not self.jsonl and not self.parquet

    def name_of(self, spark_path: str) -> str:
        """The trace file name of a path Spark read (input_file_name(): a URI, maybe of a snapshot)."""
        base = spark_path.rstrip("/").rsplit("/", 1)[-1]
        return self._names.get(base, base)

    def add_stats(self, stats: dict[str, tuple[int, int | None]]) -> None:
        """Per trace file name: (records the analysis used, last wall_ms among them), from Spark."""
        for f in self.files:
            used, last = stats.get(f["name"], (0, None))
            f["analysed_records"] = used
            f.setdefault("last_wall_ms", last)
            f["last"] = clock(f["last_wall_ms"])

    @property
    def until_wall_ms(self) -> int | None:
        lasts = [f["last_wall_ms"] for f in self.files if f.get("last_wall_ms") is not None]
        return max(lasts) if lasts else None

    def note(self) -> str:
        """One line: how far the data goes (when known), which files were being written, which were left out."""
        live = [f for f in self.files if f["state"] == "live"]
        if live:
            text = "live: includes the file being written " + ", ".join(
                f"{f['name']}{PART} up to {clock(f.get('last_wall_ms'))} UTC ({f['records']} records)" for f in live)
        else:
            text = "complete files only"
            if self.until_wall_ms is not None:    # known once add_stats() has the scan's counts
                text += f", data up to {clock(self.until_wall_ms)} UTC"
        if self.left_out:
            text += "; left out: " + ", ".join(f"{f['name']} ({f['reason']})" for f in self.left_out)
        return text

    def summary(self) -> dict:
        return {"live": self.live, "until_wall_ms": self.until_wall_ms, "until": clock(self.until_wall_ms),
                "note": self.note(), "files": self.files, "left_out": self.left_out}

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def collect_inputs(directory: Path, live: bool = True) -> TraceInputs:
    """The trace files of `directory` as Spark should read them now; `live`: snapshot `.part` files."""
    d = Path(directory)
    inputs = TraceInputs(d)
    for p in _listing(d):
        name = p.name
        if name.endswith((".jsonl.gz", ".parquet")):
            (inputs.jsonl if name.endswith(".gz") else inputs.parquet).append(str(p))
            inputs.files.append({"name": name, "state": "complete", "bytes": _size(p)})
        elif name.endswith(".parquet" + PART):
            opened = name.split("-")[1] if name.count("-") >= 3 else "?"
            inputs.left_out.append({"name": name, "reason": f"open Parquet file, readable once closed (at most "
                                                            f"{PARQUET_MAX_AGE_S} s after {opened} UTC)"})
        elif name.endswith(".jsonl.gz" + PART):
            if not live:
                inputs.left_out.append({"name": name, "reason": "being written (--no-live)"})
                continue
            if inputs._tmp is None:
                inputs._tmp = tempfile.TemporaryDirectory(prefix="kshim-live-")
            snap = snapshot_part(p, Path(inputs._tmp.name))
            if snap is None:
                inputs.left_out.append({"name": name, "reason": "no complete record yet"})
                continue
            inputs.jsonl.append(str(snap.path))
            inputs._names[snap.path.name] = final_name(p).name
            inputs.files.append({"name": final_name(p).name, "state": "closed while read" if snap.complete else "live",
                                 "bytes": _size(p) or _size(final_name(p)), "records": snap.records,
                                 "last_wall_ms": snap.last_wall_ms})
    return inputs


def _listing(d: Path) -> list[Path]:
    """trace-* files by name; a file renamed from `.part` while the directory is read is listed once,
    complete (two listings: a rename during one may show both names or neither)."""
    seen = {p.name for _ in range(2) for p in d.iterdir() if p.name.startswith("trace-")}
    return [d / n for n in sorted(seen) if not (n.endswith(PART) and n.removesuffix(PART) in seen)]


def _size(p: Path) -> int | None:
    try:
        return p.stat().st_size
    except FileNotFoundError:   # renamed (closed) since the listing
        return None
