"""Records of `__consumer_offsets` as stored: a record batch blob (a Fetch answer's, or a segment
file's: Kafka's `.log` files are batches back to back) into `RawRecord`s; and a broker's log directory
(`--log-dir`: a broker's disk or a support bundle) read partition by partition, segment by segment."""

from __future__ import annotations

import re
from pathlib import Path

from kcodec.records import iter_batches

from .history import RawRecord, RecordHistory

TOPIC = "__consumer_offsets"
_PARTITION_DIR = re.compile(rf"^{TOPIC}-(\d+)$")


def raw_records(partition: int, data, history: RecordHistory, start: int = 0) -> int:
    """Feeds the records of a batch blob at or after `start` to `history`; transaction markers only mark
    their offsets as read. Returns the next offset (or `start` when the blob held none)."""
    nxt = start
    for batch in iter_batches(data):
        if batch.base_offset + batch.last_offset_delta < start:
            continue
        for r in batch.records:
            if r.offset < start:
                continue
            if batch.is_control:
                history.marker(partition, r.offset, r.timestamp)
            else:
                history.add(RawRecord(partition, r.offset, r.timestamp, r.key, r.value))
            nxt = r.offset + 1
        nxt = max(nxt, batch.base_offset + batch.last_offset_delta + 1)
    return nxt


def partition_dirs(log_dir: Path, partitions=None) -> list[tuple[int, Path]]:
    """(partition, directory) of every `__consumer_offsets-N` under `log_dir` (the directory itself may
    be one), restricted to `partitions` when given."""
    log_dir = Path(log_dir)
    cands = [log_dir] if _PARTITION_DIR.match(log_dir.name) else sorted(log_dir.iterdir())
    out = []
    for d in cands:
        m = _PARTITION_DIR.match(d.name)
        if m and d.is_dir() and (partitions is None or int(m.group(1)) in partitions):
            out.append((int(m.group(1)), d))
    return out


def read_log_dir(log_dir: Path, history: RecordHistory, partitions=None) -> int:
    """Reads every segment of the offsets partitions under `log_dir` into `history`; returns the number
    of partitions read. The first segment's base offset is the partition's log start."""
    n = 0
    for p, d in partition_dirs(log_dir, partitions):
        segs = sorted(d.glob("*.log"), key=lambda f: int(f.stem))
        if not segs:
            continue
        read = history.partition(p)
        read.log_start = int(segs[0].stem)
        read.read_from = read.log_start if history.since_ms is None else None
        nxt = 0
        for seg in segs:
            nxt = raw_records(p, seg.read_bytes(), history, nxt)
        n += 1
    return n
