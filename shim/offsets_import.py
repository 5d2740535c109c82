"""`kshim trace import --consumer-offsets HOST:PORT` / `--log-dir DIR`: the group coordinator's own
records into a trace directory that `kshim trace show` and `kshim trace analyze` read
(docs/kshim-trace-import.md). Captures go the other way (shim/trace/capture/command.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import signal
import sys
import time
from pathlib import Path

from .config import Config, ConfigError, add_flags, flags_from_args, load
from .offsets_reader import OffsetsReadError, OffsetsTopicReader, partition_for
from .trace.capture.command import cmd_import as cmd_import_captures
from .trace.offsets_topic.history import RecordHistory
from .trace.offsets_topic.output import RecordsTrace, summary_text
from .trace.offsets_topic.segments import TOPIC, read_log_dir
from .trace.offsets_topic.with_log import merge_broker_log

_SPAN = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_PLAIN_GROUP = re.compile(r"^[A-Za-z0-9._-]+$")     # a regex that can match only itself


def add_args(import_parser) -> None:
    r = import_parser.add_argument_group("the group coordinator's own records (__consumer_offsets), instead of "
                                         "captures")
    r.add_argument("--consumer-offsets", metavar="HOST:PORT[,...]", default=None,
                   help="read __consumer_offsets from this cluster (needs DESCRIBE and READ on it; TLS and SASL "
                        "with the --upstream-* options, as `kshim run`)")
    r.add_argument("--log-dir", metavar="DIR", default=None,
                   help="read the __consumer_offsets-N segment files under DIR (a broker's log.dirs, or a copy)")
    r.add_argument("--group", action="append", metavar="REGEX",
                   help="only groups whose id fully matches REGEX (repeatable); a plain group id reads only its "
                        "own partition")
    r.add_argument("--follow", action="store_true",
                   help="--consumer-offsets: keep reading as the coordinator writes (the trace grows: `kshim "
                        "trace show --follow`, a live `kshim trace analyze`) until Ctrl-C")
    r.add_argument("--since", metavar="TIME", default=None,
                   help="only records from TIME on: ISO 8601 (UTC unless it says), Unix ms, or a span ago (30m, "
                        "2h, 1d)")
    add_flags(r, only=[f for f in Config.__dataclass_fields__ if f.startswith("upstream_")])
    import_parser.set_defaults(func=cmd_trace_import)


def parse_since(text: str | None, now_ms: int) -> int | None:
    if text is None:
        return None
    t = text.strip()
    if t.isdigit():
        return int(t)
    m = _SPAN.match(t)
    if m:
        return now_ms - int(float(m.group(1)) * _UNIT_MS[m.group(2)])
    try:
        when = dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since {text!r}: give ISO 8601 (2026-11-29T08:00:00Z), Unix ms, or a span (30m, 2h)")
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1000)


def _wanted(patterns):
    if not patterns:
        return None
    rx = [re.compile(p) for p in patterns]
    return lambda g: any(r.fullmatch(g) for r in rx)


def cmd_trace_import(args) -> int:
    if not (args.consumer_offsets or args.log_dir):
        return cmd_import_captures(args)
    err = "kshim trace import"
    if args.captures:
        print(f"{err}: captures and the coordinator's records go into separate trace directories (import "
              f"each on its own)", file=sys.stderr)
        return 2
    if args.broker_log and args.follow:
        print(f"{err}: --broker-log is read once: not with --follow", file=sys.stderr)
        return 2
    if args.follow and not args.consumer_offsets:
        print(f"{err}: --follow reads a cluster (--consumer-offsets)", file=sys.stderr)
        return 2
    if args.consumer_offsets and args.log_dir:
        print(f"{err}: give --consumer-offsets or --log-dir, not both", file=sys.stderr)
        return 2
    out = Path(args.out)
    if out.exists() and any(out.glob("trace-*")) and not args.force:
        print(f"{err}: {out} already holds trace files (--force adds to them)", file=sys.stderr)
        return 2
    logs = [Path(p) for p in args.broker_log or ()]
    missing = [str(p) for p in logs if not p.exists()]
    if missing:
        print(f"{err}: no such broker log: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        since = parse_since(args.since, int(time.time() * 1000))
        _wanted(args.group)
    except (ValueError, re.error) as e:
        print(f"{err}: {e}", file=sys.stderr)
        return 2
    try:
        if args.log_dir:
            if not Path(args.log_dir).is_dir():
                print(f"{err}: --log-dir {args.log_dir}: no such directory", file=sys.stderr)
                return 2
            s = import_log_dir(Path(args.log_dir), out, args.group, since, args.since, args.trace_format,
                               broker_logs=logs, log_tz=args.log_tz)
        else:
            flags = {k: v for k, v in flags_from_args(args).items() if v is not None}
            cfg = load(None, {**flags, "upstream": args.consumer_offsets})
            s = import_from_cluster(cfg, out, args.group, since, args.since, args.trace_format,
                                    follow=args.follow, broker_logs=logs, log_tz=args.log_tz)
    except ConfigError as e:
        print(f"{err}: {e}", file=sys.stderr)
        return 2
    except (OffsetsReadError, ConnectionError, OSError, TimeoutError) as e:
        print(f"{err}: {e}", file=sys.stderr)
        return 1
    print(summary_text(s))
    return 0


def import_from_cluster(cfg: Config, out: Path, groups=None, since_ms: int | None = None, since_text: str | None = None,
                        fmt: str = "jsonl", follow: bool = False, stop: "asyncio.Event | None" = None,
                        broker_logs: list[Path] | None = None, log_tz: str | None = None) -> dict:
    """Reads the cluster's __consumer_offsets (only the partitions of `groups` when each is a plain
    group id) into the trace directory `out`, with the brokers' `broker_logs` when given; returns the
    import summary. `follow`: then keeps reading until `stop` (read with is_set(): another thread may
    set it) is set; without one, SIGINT / SIGTERM."""
    t0 = time.monotonic()
    trace = RecordsTrace(out, {"bootstrap": cfg.upstream, "group": groups, "since": since_text, "since_ms": since_ms,
                               "follow": follow}, fmt, t0)
    first = _with_logs(trace, broker_logs, log_tz, _wanted(groups), since_ms)
    history = asyncio.run(_read(cfg, groups, _wanted(groups), since_ms, trace, follow, stop, first))
    return trace.close(history)


def import_log_dir(log_dir: Path, out: Path, groups=None, since_ms: int | None = None, since_text: str | None = None,
                   fmt: str = "jsonl", broker_logs: list[Path] | None = None, log_tz: str | None = None) -> dict:
    """The same from a broker's segment files."""
    t0 = time.monotonic()
    history = RecordHistory(_wanted(groups), since_ms=since_ms)
    if read_log_dir(log_dir, history) == 0:
        raise OffsetsReadError(f"no __consumer_offsets-N directory with segment files under {log_dir}")
    trace = RecordsTrace(out, {"log_dir": str(log_dir), "group": groups, "since": since_text, "since_ms": since_ms},
                         fmt, t0)
    trace.write(_with_logs(trace, broker_logs, log_tz, _wanted(groups), since_ms)(history.drain()))
    return trace.close(history)


def _with_logs(trace: RecordsTrace, logs, log_tz, wanted, since_ms):
    """What to do with the first events read: merged with the brokers' logs when there are any."""
    if not logs:
        return lambda events: events

    def merge(events):
        merged, stats = merge_broker_log(events, logs, log_tz, wanted, since_ms)
        trace.extra["broker_log"] = stats
        return merged
    return merge


async def _read(cfg: Config, groups, wanted, since: int | None, trace: RecordsTrace, follow: bool = False,
                stop: "asyncio.Event | None" = None, first=lambda events: events) -> RecordHistory:
    reader = OffsetsTopicReader(cfg)
    try:
        n = await reader.metadata()
        history = RecordHistory(wanted, reader.names, since_ms=since)
        parts = None
        if groups and all(_PLAIN_GROUP.match(g) for g in groups):
            parts = sorted({partition_for(g, n) for g in groups})
        await reader.read(history, parts, since)
        trace.write(first(history.drain()))
        if follow:
            if stop is None:            # the command: Ctrl-C / SIGTERM end it (a caller passes its own)
                stop = asyncio.Event()
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, stop.set)
                print(f"following {TOPIC} (Ctrl-C stops)", flush=True)
            await reader.follow(history, trace.write, stop)
        return history
    finally:
        reader.close()
