"""`kshim trace show DIR`: a quick, filtered timeline of a trace, one line per frame or event."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Iterable, Iterator

from kcodec.api import API_KEYS
from kcodec.protocol import ERROR_INFO

from .live import GzipLines, final_name
from .share_streams import SHARE_APIS, STREAMS_APIS, SUMMARISED

SHORT_DIR = {"client->kshim": "c->k", "kshim->upstream": "k->u", "upstream->kshim": "u->k",
             "kshim->client": "k->c", "client->broker": "c->b", "broker->client": "b->c"}


# `--api share` / `--api streams`: every API of that group type (KIP-932, KIP-1071)
API_FAMILIES = {"share": {API_KEYS[k].lower() for k in SHARE_APIS},
                "streams": {API_KEYS[k].lower() for k in STREAMS_APIS}}


def api_filter(api: str | None) -> set[str] | None:
    """The lower-case API names (and `events`) a `--api` list keeps; family names expanded."""
    if not api:
        return None
    names = {a.strip().lower() for a in api.split(",") if a.strip()}
    for family in names & set(API_FAMILIES):
        names |= API_FAMILIES[family]
    return names


def _error_names() -> dict[int, str]:
    """Kafka's name of every error code (kcodec.protocol); format_line shows others as ERROR(<code>)."""
    return {code: info.name for code, info in ERROR_INFO.items()}


def trace_files(directory: Path) -> list[Path]:
    """Trace files in time order (names sort by start time), `.part` files of a running kshim included."""
    files = [p for p in Path(directory).iterdir()
             if p.name.startswith("trace-") and (p.name.endswith((".jsonl.gz", ".parquet", ".jsonl.gz.part")))]
    return sorted(files, key=lambda p: p.name.removesuffix(".part"))


def _parquet(path: Path) -> Iterator[dict]:
    import pyarrow.parquet as pq  # kshim[trace]
    table = pq.read_table(path)
    for row in table.to_pylist():
        rec = {k: v for k, v in row.items() if v is not None}
        for key in ("body", "batches", "info"):
            if key in rec:
                rec[key] = json.loads(rec[key])
        yield rec


def read_trace(directory: Path) -> Iterator[dict]:
    for path in trace_files(directory):
        if path.name.endswith(".parquet"):
            yield from _parquet(path)
        else:
            yield from GzipLines(path).records()


def matches(rec: dict, group: str | None, member: str | None, apis: set[str] | None) -> bool:
    kind = rec.get("type")
    if kind not in ("frame", "event", "dropped"):
        return False
    if apis is not None:
        if kind == "frame" and rec.get("api", "").lower() not in apis:
            return False
        if kind != "frame" and "events" not in apis:
            return False
    if group is not None and rec.get("group") != group and group not in (rec.get("groups") or ()):
        return False
    if member is not None:
        ids = {rec.get("member"), rec.get("instance")}
        if kind == "event":
            ids.add((rec.get("body") or {}).get("old_member"))
        if member not in ids:
            return False
    return True


def _clock(wall_ms: int | None) -> str:
    if wall_ms is None:
        return "--:--:--.---"
    return time.strftime("%H:%M:%S", time.localtime(wall_ms / 1000)) + f".{wall_ms % 1000:03d}"


def format_line(rec: dict, errors: dict[int, str]) -> str:
    head = _clock(rec.get("wall_ms"))
    kind = rec.get("type")
    if kind == "dropped":
        info = rec.get("info", {})
        return f"{head}  !! {info.get('count')} trace records dropped (writer behind; {info.get('total')} so far)"
    fields = []
    for key, label in (("group", "group"), ("member", "member"), ("instance", "instance"),
                       ("generation", "gen"), ("epoch", "epoch")):
        if rec.get(key) not in (None, ""):
            fields.append(f"{label}={rec[key]}")
    if kind == "event":
        body = rec.get("body") or {}
        for k, v in body.items():
            if k in ("event", "group", "ts", "member", "instance", "generation"):
                continue
            if k == "assignments" and isinstance(v, dict):
                v = f"{len(v)} members"
            fields.append(f"{k}={v}")
        return f"{head} {'':>6}  event  {rec.get('event')}  " + " ".join(fields)
    codes = rec.get("error_codes") or []
    if codes:
        fields.append("err=" + ",".join(f"{errors.get(c, 'ERROR')}({c})" for c in codes))
    if rec.get("groups"):
        fields.append("groups=" + ",".join(rec["groups"]))
    if rec.get("api_key") in SUMMARISED and rec.get("body"):
        fields.append(_share_line(rec["body"]))
    batches = rec.get("batches")
    if batches:
        fields.append(f"batches={len(batches)} records={sum(b.get('count', 0) for b in batches)}")
    if rec.get("decode_error"):
        fields.append(f"decode_error={rec['decode_error'][:80]!r}")
    api = f"{rec.get('api')} v{rec.get('api_version')} #{rec.get('corr')}"
    return (f"{head} c{rec.get('conn', '?'):<5} {SHORT_DIR.get(rec.get('dir'), rec.get('dir'))}  {api:<28} "
            f"{rec.get('size', 0):>7}B  " + " ".join(fields)).rstrip()


def _share_line(body: dict) -> str:
    """ShareFetch/ShareAcknowledge: partitions, acknowledged offsets, acquired records."""
    parts = [p for t in body.get("topics") or body.get("responses") or () for p in t.get("partitions") or ()]
    out = f"partitions={len(parts)}"
    acks: dict[str, int] = {}
    for p in parts:
        for kind, n in (p.get("acknowledged") or {}).items():
            acks[kind] = acks.get(kind, 0) + n
    if acks:
        out += " acks=" + ",".join(f"{k}:{n}" for k, n in sorted(acks.items()))
    if any("acquiredRecords" in p for p in parts):
        out += f" acquired={sum(p.get('acquiredRecords', 0) for p in parts)}"
    return out


def show(directory: Path, group: str | None = None, member: str | None = None, api: str | None = None,
         limit: int | None = None, as_json: bool = False, out=None) -> int:
    """Print the filtered timeline; returns the number of lines printed."""
    out = out or sys.stdout
    apis = api_filter(api)
    errors = _error_names()
    n = 0
    for rec in _filtered(read_trace(directory), group, member, apis):
        if limit is not None and n >= limit:
            break
        out.write((json.dumps(rec, separators=(",", ":")) if as_json else format_line(rec, errors)) + "\n")
        n += 1
    return n


def follow(directory: Path, group: str | None = None, member: str | None = None, api: str | None = None,
           limit: int | None = None, as_json: bool = False, out=None, new_only: bool = False,
           interval: float = 0.5, stop: threading.Event | None = None) -> int:
    """`--follow`: print matching records as they are written (polling every `interval` s), the files of
    the trace in name order, a `.part` file up to its last complete line and on from there, then the
    next file after a rotation; until `stop` is set, Ctrl-C or `limit` lines. `new_only`: skip what is
    already written. JSON lines files are read while written; Parquet files once they are closed."""
    out = out or sys.stdout
    apis, errors = api_filter(api), _error_names()
    readers: dict[Path, GzipLines] = {}
    finished: set[Path] = set()
    n, first = 0, True
    while True:
        for path in trace_files(directory):
            name = final_name(path)
            if name in finished:
                continue
            if first and new_only and name == path:      # complete before we started: skip unread
                finished.add(name)
                continue
            if name.name.endswith(".parquet"):
                recs, reader = _parquet(path), None
            else:
                reader = readers.setdefault(name, GzipLines(path))
                recs = reader.records()
                if first and new_only:                       # a file being written: skip to its end
                    for _ in reader.blocks():
                        pass
                    recs = ()
            for rec in recs:
                if rec.get("type") == "trace_stop" and not as_json:
                    info = rec.get("info") or {}
                    out.write(f"{_clock(rec.get('wall_ms'))}  -- trace_stop: kshim stopped writing {name.name} "
                              f"({info.get('records')} records, {info.get('dropped')} dropped)\n")
                elif matches(rec, group, member, apis):
                    out.write((json.dumps(rec, separators=(",", ":")) if as_json else format_line(rec, errors)) + "\n")
                    n += 1
                    if limit is not None and n >= limit:
                        out.flush()
                        return n
            if reader is None or reader.done or reader.error or reader.missing:
                finished.add(name)
                readers.pop(name, None)
        out.flush()
        first = False
        if stop is not None:
            if stop.is_set():
                return n
            stop.wait(interval)
        else:
            time.sleep(interval)


def _filtered(recs: Iterable[dict], group, member, apis) -> Iterator[dict]:
    for rec in recs:
        if matches(rec, group, member, apis):
            yield rec


def cmd_show(args) -> int:
    directory = Path(args.dir)
    if not directory.is_dir():
        print(f"kshim trace show: {directory} is not a directory", file=sys.stderr)
        return 2
    if not trace_files(directory) and not args.follow:
        print(f"kshim trace show: no trace files (trace-*.jsonl.gz, trace-*.parquet) in {directory}", file=sys.stderr)
        return 1
    try:
        if args.follow:
            if any(p.name.endswith(".parquet.part") for p in directory.iterdir()):
                print("kshim trace show --follow: Parquet files are read once closed (the sink closes one at most "
                      "60 s after it starts)", file=sys.stderr)
            follow(directory, args.group, args.member, args.api, args.limit, args.json, new_only=args.new)
        else:
            show(directory, args.group, args.member, args.api, args.limit, args.json)
    except (BrokenPipeError, KeyboardInterrupt):  # `| head`, Ctrl-C
        pass
    return 0


def add_parser(sub) -> None:
    t = sub.add_parser("trace", help="read wire traces written by `kshim run --trace DIR`")
    tsub = t.add_subparsers(dest="trace_command", metavar="ACTION", required=True)
    s = tsub.add_parser("show", help="a filtered timeline: one line per frame or coordinator event",
                        description="Lines: local time, connection, direction (c->k client to kshim, k->u kshim "
                                    "to upstream, u->k, k->c; c->b, b->c in an imported capture), api version #correlation, frame size, group/"
                                    "member fields and error codes; coordinator events in between.")
    s.add_argument("dir", help="the trace directory (kshim run --trace DIR)")
    s.add_argument("--group", help="only this group's frames and events")
    s.add_argument("--member", help="only frames/events of this member id or group.instance.id")
    s.add_argument("--api", help="only these APIs (comma list, e.g. JoinGroup,SyncGroup; add 'events' for "
                                 "coordinator events; 'share' or 'streams' for every API of those group types)")
    s.add_argument("--limit", type=int, default=None, help="at most N lines")
    s.add_argument("--json", action="store_true", help="print the matching records as JSON lines")
    s.add_argument("-f", "--follow", action="store_true", help="keep printing records as kshim writes them, "
                                                               "across file rotations, until Ctrl-C")
    s.add_argument("--new", action="store_true", help="with --follow: only records written from now on")
    s.set_defaults(func=cmd_show)
