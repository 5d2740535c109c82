"""The `kshim trace analyze` subcommand (added under `kshim trace` by shim/cli.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

MISSING = ("kshim trace analyze needs PySpark (and a JDK 17+): pip install 'kshim[analyze]' "
           "(or scripts/setup --test, which installs it into .venv)")


def cmd_analyze(args) -> int:
    directory = Path(args.dir)
    if not directory.is_dir():
        print(f"kshim trace analyze: {directory} is not a directory", file=sys.stderr)
        return 2
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError:
        print(MISSING, file=sys.stderr)
        return 3
    if not any(p.name.startswith("trace-") for p in directory.iterdir()):
        print(f"kshim trace analyze: no trace files (trace-*.jsonl.gz, trace-*.parquet) in {directory}",
              file=sys.stderr)
        return 1
    from .pipeline import analyze
    from .session import Progress, spark_session
    progress = Progress(None)
    progress.stage(f"starting Spark (master {args.master})")
    spark = spark_session(args.master, args.shuffle_partitions, args.driver_memory, python=args.python)
    progress.spark = spark
    progress.start()
    try:
        summary = analyze(spark, directory, Path(args.out), args.group, args.max_groups, not args.no_png,
                          progress, args.master, args.count_all, live=not args.no_live)
    except FileNotFoundError as e:
        print(f"kshim trace analyze: {e}", file=sys.stderr)
        return 1
    finally:
        progress.stop()
        spark.stop()
    print("\n".join(summary_lines(summary)))
    print(f"report: {Path(args.out) / 'report.html'}")
    if args.perfetto:         # the trace-event JSON is always in REPORT; also where --perfetto says
        import shutil
        shutil.copyfile(Path(args.out) / "trace.perfetto.json", args.perfetto)
        print(f"trace events: {args.perfetto} (ui.perfetto.dev, chrome://tracing)")
    if args.json:
        print(json.dumps(summary, default=str))
    return 0


def summary_lines(summary: dict) -> list[str]:
    """What the command prints: first what the import lost (a trace made by `kshim trace import`, of a
    capture or the coordinator's records: its import-summary.json), then per group, then how far the
    data goes."""
    lines = [f"warning: the import lost data (import-summary.json): {x['what']}"
             + (f"; {x['fix']}" if x["fix"] else "") for x in summary.get("import_losses") or ()]
    for g in summary["groups"][:20]:
        lines.append(f"{g['group']}: {g['rebalances']} rebalance(s), {g['static_rejoins_without_rebalance']} static "
                     f"rejoin(s) without rebalance, {g['anomalies']} anomaly flag(s)")
    if len(summary["groups"]) > 20:
        lines.append(f"... {len(summary['groups']) - 20} more groups")
    for g in (summary.get("share_groups", []) + summary.get("streams_groups", []))[:20]:
        lines.append(f"{g['group']} ({g['group_type']} group): {g['members']} member(s), {g['joins']} join(s), "
                     f"{g['left']} left, {g['fenced']} fenced, max epoch {g['max_epoch']}")
    for g in summary.get("partition_groups", [])[:20]:
        unknown = (f"; owner before the first assignment not in the trace for {g['owner_unknown_partitions']}"
                   if g.get("owner_unknown_partitions") else "")
        lines.append(f"{g['group']} partitions: {g['gaps']} gap(s) in {g['partitions']} partition(s), "
                     f"{g['unavailable_partition_ms']} partition-ms unavailable, longest {g['max_gap_ms']} ms{unknown}")
    if not summary["groups"] and not summary.get("share_groups") and not summary.get("streams_groups"):
        lines.append("groups: none in the trace")
    lines.append(f"data: {summary['data']['note']}")
    return lines


def add_parser(trace_parser: argparse.ArgumentParser) -> None:
    """Adds `analyze` next to `show` under the `kshim trace` parser."""
    tsub = next(a for a in trace_parser._actions if isinstance(a, argparse._SubParsersAction))
    a = tsub.add_parser("analyze", help="PySpark pipeline: rebalance timelines, member health, anomalies, "
                                        "HTML report (pip install 'kshim[analyze]')",
                        description="Reads every trace file of DIR (JSON lines and Parquet; of a running kshim "
                                    "also the JSON lines file being written, up to its last complete record) "
                                    "with Spark and writes Parquet tables, report.html and report.png to "
                                    "REPORT; see docs/kshim-trace.md.")
    a.add_argument("dir", help="the trace directory (kshim run --trace DIR)")
    a.add_argument("--out", required=True, metavar="REPORT", help="output directory (created)")
    a.add_argument("--master", default="local[*]", help="Spark master: local[*] (default), local[N], "
                                                        "spark://host:port, yarn")
    a.add_argument("--group", default=None, help="only this group")
    a.add_argument("--max-groups", type=int, default=50, help="groups drawn in the HTML report (default 50, "
                                                               "most rebalances first; the tables have all)")
    a.add_argument("--shuffle-partitions", type=int, default=None, help="spark.sql.shuffle.partitions")
    a.add_argument("--driver-memory", default="2g", help="spark.driver.memory (default 2g)")
    a.add_argument("--python", default=None, help="the executors' Python (default: this interpreter)")
    a.add_argument("--count-all", action="store_true", help="also count every record (one more pass over the files)")
    a.add_argument("--no-live", action="store_true", help="leave out the file a running kshim is writing")
    a.add_argument("--no-png", action="store_true", help="skip the PNG export")
    a.add_argument("--json", action="store_true", help="also print the summary as JSON")
    a.add_argument("--perfetto", metavar="FILE", default=None,
                   help="also write the Chrome trace-event JSON (REPORT/trace.perfetto.json) to FILE")
    a.set_defaults(func=cmd_analyze)
