"""The analysis job: load -> group records (cached) -> timelines, member stats -> anomalies -> report."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

from ..capture.losses import capture_end_wall_ms, import_losses, read_import_summary
from .anomalies import anomalies
from .frames import linked_frames
from .heartbeats import member_timelines, topic_names
from .inputs import collect_inputs
from .load import file_stats, group_records, load, scanned_records
from .members import member_stats
from .partitions import partition_analysis, partition_summary
from .report import write_report
from .session import Progress


def analyze(spark, directory: Path, out: Path, group: str | None = None, max_groups: int = 50,
            png: bool = True, progress: Progress | None = None, master: str = "", count_all: bool = False,
            live: bool = True) -> dict:
    """`count_all`: also count every record of the trace (a second pass over all files); `live`: also
    read the files a running kshim is writing, up to their last complete record (inputs.py)."""
    from pyspark import StorageLevel
    prog = progress or Progress(None)
    t0 = time.monotonic()
    inputs = collect_inputs(directory, live)
    if inputs.empty:
        raise FileNotFoundError(f"no readable trace files in {directory}: {inputs.note()}")
    jsonl, parquet = inputs.jsonl, inputs.parquet
    mb = sum(f.get("bytes") or 0 for f in inputs.files) / 1e6
    prog.stage(f"load: {len(jsonl)} JSON lines file(s), {len(parquet)} Parquet file(s), {mb:.0f} MB from {directory}"
               + (f"; {inputs.note()}" if inputs.live or inputs.left_out else ""))
    df = load(spark, directory, inputs, with_file=True)
    scan_files = scanned_records(df, group).persist(StorageLevel.MEMORY_AND_DISK)
    scan = scan_files.drop("_file")   # read from the cached rows
    prog.stage("scan: selecting group records (JoinGroup, SyncGroup, LeaveGroup, Heartbeat, OffsetCommit, events; "
               "share/streams heartbeats; Metadata answers)")
    n_scan = scan.count()
    inputs.add_stats({inputs.name_of(f): v for f, v in file_stats(scan_files).items()})
    grp = group_records(scan, group)
    n_group = grp.count()
    n_all = None
    if count_all:
        prog.stage(f"scan: {n_group} group records; counting all records")
        n_all = df.count()
    prog.stage("rebalances: per-group timelines; partitions: owners, gaps, rebalance impact and causes "
               "(classic and KIP-848 groups), in one pass")
    names = topic_names(scan)
    parts = partition_analysis(scan, names, group, with_timelines=True)
    tl = parts.pop("timelines")
    prog.stage(f"rebalances: {sum(r['generation'] is not None for r in tl['rounds'])} generations in "
               f"{len({r['group'] for r in tl['rounds']})} group(s); members: heartbeat gaps, commit cadence")
    members = [r.asDict() for r in member_stats(scan, group).collect()]
    prog.stage(f"members: {len(members)} member(s); share and streams groups: member timelines")
    hb = member_timelines(scan, names, group)
    prog.stage(f"share/streams: {len(hb['share']['members'])} share and {len(hb['streams']['members'])} streams "
               f"member(s); anomalies")
    flags = anomalies(tl["rounds"], tl["changes"], members)
    prog.stage(f"report: {len(parts['partition_gaps'])} partition gap row(s), {len(flags)} anomaly flag(s); "
               f"writing Parquet tables, HTML and PNG to {out}")
    imported = read_import_summary(directory)       # a trace made by `kshim trace import`: what it lost
    summary = {"trace": str(directory), "records": n_all, "group_records": n_group, "scanned_records": n_scan,
               "group_filter": group,
               "master": master, "made": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
               "inputs": {"jsonl": len(jsonl), "parquet": len(parquet)}, "data": inputs.summary(),
               "import_losses": import_losses(imported) if imported else None,
               "trace_end_wall_ms": max((t for t in (inputs.until_wall_ms, capture_end_wall_ms(imported))
                                         if t is not None), default=None),
               "partition_groups": partition_summary(parts)}
    tables = {"rebalances": tl["rounds"], "generation_members": tl["members"], "changes": tl["changes"],
              "members": members, "anomalies": flags, **parts}
    for kind, t in hb.items():   # share_timeline, share_members, share_epochs, streams_...
        tables.update({f"{kind}_timeline": t["timeline"], f"{kind}_members": t["members"],
                       f"{kind}_epochs": t["segments"]})
    linked = linked_frames(grp, tables)     # the frames behind causes and changes, shown in report.html
    scan_files.unpersist()
    summary = write_report(out, summary, tables, max_groups=max_groups, png=png, linked=linked)
    inputs.close()
    summary["seconds"] = round(time.monotonic() - t0, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    prog.stage(f"data: {inputs.note()}")
    prog.stage(f"done in {summary['seconds']} s: {out / 'report.html'}"
               + (f", {out / 'report.png'}" if summary.get("png") else " (no PNG: chromium not found)" if png else ""))
    return summary
