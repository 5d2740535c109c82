"""`__consumer_offsets` records (raw key and value bytes, as a Fetch or a segment file gives them) into
one time-ordered list of coordinator events per group, and a summary of what was read and what was not.

Where the history is complete. A compacted partition keeps only each key's newest record: offsets
missing inside what was read mean compaction removed records there. History is complete only after the
last such gap; the records before it are the state in force (`in_force`), not changes. A key's first
record is a change only when the partition was read from offset 0 with no gap (`from_start`): otherwise
what came before it is unknown and that record is the state in force too (classic.py, consumer.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kcodec.coordinator_records import (VALUE_VERSIONS, UnknownRecordType, UnknownRecordVersion, decode_key,
                                        decode_value, record_name)
from kcodec.errors import DecodeError

from .classic import ClassicRecords
from .consumer import ConsumerRecords
from .events import EventOut

OFFSET_COMMITS = ("OffsetCommit", "LegacyOffsetCommit")


@dataclass
class RawRecord:
    partition: int
    offset: int
    ts_ms: int
    key: bytes | None
    value: bytes | None


@dataclass
class PartitionRead:
    """What was read of one partition: `read_from` (the offset asked for first), `start` (the first
    offset read), `end` (next offset), `log_start`, `gaps` (offset ranges missing: compacted, the
    first one from `read_from` when the first record came later), `control` (transaction markers)."""
    partition: int
    start: int | None = None
    end: int | None = None
    log_start: int | None = None
    gaps: list = field(default_factory=list)
    control: int = 0
    last: int | None = None
    read_from: int | None = None     # the offset the read asked for first (records before it: not read)

    def saw(self, offset: int) -> None:
        if self.start is None:
            self.start = offset
            if self.read_from is not None and offset > self.read_from:      # compacted before the first
                self.gaps.append((self.read_from, offset - 1))
        elif offset > self.last + 1:
            self.gaps.append((self.last + 1, offset - 1))
        self.last = offset
        self.end = offset + 1

    @property
    def complete_from(self) -> int | None:
        """The first offset from which nothing is missing (after the last gap)."""
        return self.gaps[-1][1] + 1 if self.gaps else self.start

    @property
    def from_start(self) -> bool:
        return self.start == 0 and not self.gaps and self.read_from in (None, 0)


@dataclass
class ReadSummary:
    records: int = 0
    by_type: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)     # "unknown record type 99" / "GroupMetadata v9" -> count
    groups: set = field(default_factory=set)
    offset_commits: Counter = field(default_factory=Counter)   # group -> commits read
    partitions: dict = field(default_factory=dict)        # partition -> PartitionRead

    def as_dict(self) -> dict:
        return {"records": self.records, "by_type": dict(self.by_type), "skipped": dict(self.skipped),
                "groups": sorted(self.groups), "offset_commits": dict(self.offset_commits),
                "partitions": {p: {"start": r.start, "end": r.end, "log_start": r.log_start, "gaps": len(r.gaps),
                                   "missing_offsets": sum(b - a + 1 for a, b in r.gaps),
                                   "complete_from": r.complete_from, "transaction_markers": r.control}
                               for p, r in sorted(self.partitions.items())}}


def group_of(key) -> str | None:
    return key.get("group") if "group" in key else key.get("groupId")


class RecordHistory:
    """`add(raw)` per record in each partition's offset order, then `events()`."""

    def __init__(self, groups=None, names: dict | None = None, since_ms: int | None = None):
        self.wanted = groups          # a predicate on the group id, or None for every group
        self.names = names if names is not None else {}
        self.since_ms = since_ms      # records stamped before it are not read (`--since`)
        self.summary = ReadSummary()
        self.pending: list[dict] = []       # decoded, not folded yet (drain)
        self.folds: dict[str, tuple] = {}   # group -> (EventOut, ClassicRecords, ConsumerRecords, events taken)
        self.settled: set[str] = set()      # groups whose records from here on are changes

    def partition(self, p: int) -> PartitionRead:
        return self.summary.partitions.setdefault(p, PartitionRead(p))

    def marker(self, partition: int, offset: int, ts_ms: int) -> None:
        """A transaction marker: its offset was read (no gap), nothing else."""
        if self.since_ms is None or ts_ms >= self.since_ms:
            read = self.partition(partition)
            read.saw(offset)
            read.control += 1

    def add(self, raw: RawRecord) -> None:
        if self.since_ms is not None and raw.ts_ms < self.since_ms:
            return
        self.partition(raw.partition).saw(raw.offset)
        s = self.summary
        s.records += 1
        if raw.key is None:
            return
        try:
            rtype, key = decode_key(raw.key)
        except UnknownRecordType as e:
            s.skipped[f"unknown record type {e.record_type}"] += 1
            return
        except DecodeError as e:
            s.skipped[f"undecodable key ({e})"] += 1
            return
        name = record_name(rtype)
        key = key.to_json(0)
        group = group_of(key)
        if group is None or (self.wanted is not None and not self.wanted(group)):
            return
        try:
            decoded = decode_value(rtype, raw.value)
        except UnknownRecordVersion as e:
            lo, hi = VALUE_VERSIONS[rtype]
            s.skipped[f"{name} value version {e.version} (this kshim reads {lo}-{hi})"] += 1
            return
        except DecodeError as e:
            s.skipped[f"undecodable {name} value ({e})"] += 1
            return
        s.by_type[name] += 1
        s.groups.add(group)
        if name in OFFSET_COMMITS:
            s.offset_commits[group] += 1
            return
        version, value = decoded if decoded is not None else (None, None)
        self.pending.append({
            "record": name, "group": group, "key": key, "version": version,
            "value": value.to_json(version) if value is not None else None,
            "ts_ms": raw.ts_ms, "partition": raw.partition, "offset": raw.offset})

    def drain(self) -> list[dict]:
        """The events of the records added since the last call, in time order (`--follow` calls it after
        each read; an import once, at the end, when the read's gaps are known)."""
        pending, self.pending = self.pending, []
        for rec in pending:
            read = self.summary.partitions[rec["partition"]]
            g = rec["group"]
            # before the complete history, and a group's first record in it when some were compacted
            # (what came before it for the group may be gone): the state in force
            before = rec["offset"] < read.complete_from
            rec["in_force"] = before or (bool(read.gaps) and g not in self.settled)
            if not before:
                self.settled.add(g)
            rec["from_start"] = read.from_start
            if g not in self.folds:
                ev = EventOut(g)
                self.folds[g] = [ev, ClassicRecords(ev), ConsumerRecords(ev, self.names), 0]
            fold = self.folds[g]
            if rec["record"] == "GroupMetadata":
                fold[1].add(rec)
            elif rec["record"].startswith("ConsumerGroup"):
                fold[2].add(rec)
        out: list[dict] = []
        for fold in self.folds.values():
            fold[2].flush()
            out += fold[0].out[fold[3]:]
            fold[3] = len(fold[0].out)
        out.sort(key=lambda e: e["ts_ns"])
        return out

    def events(self) -> list[dict]:
        return self.drain()
