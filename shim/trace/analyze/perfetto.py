"""The analysis as Chrome trace-event JSON (the "JSON Object Format" of the Trace Event Format document,
read by ui.perfetto.dev, chrome://tracing and speedscope): REPORT/trace.perfetto.json.

  process per group ("group G"):  thread "rebalances": an "X" (complete) event per rebalance, from its
                                  start to the last member's assignment, args = its impact and cause;
                                  an "i" (instant) event per cause chain row, args = the frame link
                                  (conn, corr, ts_ns) and the reason;
                                  a thread per member identity (group.instance.id, else member id):
                                  an "X" event per generation / epoch membership, an "i" per change;
                                  a "C" (counter) track "partitions unavailable"
  process per group with partitions ("group G partitions"): a thread per topic-partition, an "X"
                                  event per owner segment (named by the owner) and per gap ("unavailable"),
                                  up to DETAIL_MAX events per group (whole partitions; otherData.notes
                                  says how many partitions were left out; the counter counts all)
Metadata ("M") events name the processes and threads and keep them in order. Timestamps are wall
clock microseconds (the trace's wall_ms x 1000), durations microseconds.
"""

from __future__ import annotations

import json
from pathlib import Path


DETAIL_MAX = 100_000     # owner and gap events of partitions, per group


def _us(ms) -> int:
    return int(ms * 1000)


class Events:
    def __init__(self):
        self.events: list[dict] = []
        self.pids: dict[str, int] = {}
        self.tids: dict[tuple[int, str], int] = {}

    def process(self, name: str) -> int:
        if name not in self.pids:
            pid = self.pids[name] = len(self.pids) + 1
            self.events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
            self.events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                                "args": {"sort_index": pid}})
        return self.pids[name]

    def thread(self, pid: int, name: str) -> int:
        key = (pid, name)
        if key not in self.tids:
            tid = self.tids[key] = sum(p == pid for p, _ in self.tids) + 1
            self.events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
            self.events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                                "args": {"sort_index": tid}})
        return self.tids[key]

    def span(self, pid: int, tid: int, name: str, cat: str, a, b, args: dict) -> None:
        if a is None:
            return
        self.events.append({"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": _us(a),
                            "dur": max(_us(b) - _us(a), 1) if b is not None else 1, "args": _clean(args)})

    def instant(self, pid: int, tid: int, name: str, cat: str, t, args: dict) -> None:
        if t is not None:
            self.events.append({"ph": "i", "s": "t", "name": name, "cat": cat, "pid": pid, "tid": tid,
                                "ts": _us(t), "args": _clean(args)})

    def counter(self, pid: int, name: str, t, value: int) -> None:
        self.events.append({"ph": "C", "name": name, "pid": pid, "tid": 0, "ts": _us(t), "args": {"partitions": value}})


def _clean(args: dict) -> dict:
    return {k: v if isinstance(v, (int, float, str, bool)) else json.dumps(v, default=str)
            for k, v in args.items() if v is not None and not k.startswith("_")}


def _ident(r: dict) -> str:
    return r.get("instance") or r.get("member") or "?"


def _end(tables: dict) -> int | None:
    times = [x for t in tables.values() for r in t for k, x in r.items()
             if k.endswith("wall_ms") and isinstance(x, (int, float))]
    return max(times) if times else None


def trace_events(tables: dict[str, list[dict]]) -> dict:
    """{"traceEvents": [...], "displayTimeUnit": "ms"} of the analysis tables."""
    ev = Events()
    notes: list[str] = []
    end = _end(tables)
    by = lambda name, g: [r for r in tables.get(name) or () if r["group"] == g]  # noqa: E731
    classic = sorted({r["group"] for r in (tables.get("generation_members") or []) + (tables.get("rebalances") or [])
                      + (tables.get("partition_owners") or [])})
    for g in classic:
        pid = ev.process(f"group {g}")
        reb = ev.thread(pid, "rebalances")
        impact = {r.get("generation"): r for r in by("rebalance_impact", g)}
        for r in by("rebalances", g) or by("rebalance_impact", g):     # KIP-848 groups: their group epochs
            i = impact.get(r.get("generation"), {})
            start = r.get("start_wall_ms") or r.get("generation_wall_ms")
            ev.span(pid, reb, f"rebalance g{r.get('generation')}", "rebalance", start,
                    i.get("end_wall_ms") or r.get("last_sync_wall_ms") or start,
                    {"reason": r.get("reason"), "members": r.get("members"), "protocol": i.get("protocol"),
                     "partitions_unavailable": i.get("partitions_unavailable"), "max_gap_ms": i.get("max_gap_ms"),
                     "slowest_rejoin_member": i.get("slowest_rejoin_member"), "cause_id": i.get("cause_id")})
        for c in by("causes", g):
            ev.instant(pid, reb, f"cause: {c['kind']} {_ident(c)}", "cause", c.get("wall_ms"),
                       {k: c.get(k) for k in ("cause_id", "seq", "member", "instance", "client_id", "reason", "detail",
                                              "conn", "corr", "ts_ns")})
        for m in sorted(by("generation_members", g), key=lambda m: m["from_wall_ms"]):
            tid = ev.thread(pid, _ident(m))
            ev.span(pid, tid, f"generation {m.get('generation')}" + (" (leader)" if m.get("leader") else ""),
                    "membership", m["from_wall_ms"], m["to_wall_ms"] if m["to_wall_ms"] is not None else end,
                    {"member": m["member"], "assignment": ", ".join(m.get("assignment") or [])})
        for c in by("changes", g):
            ev.instant(pid, ev.thread(pid, _ident(c)), c["kind"], "change", c.get("wall_ms"),
                       {"member": c.get("member"), "reason": c.get("reason"), "detail": c.get("detail"),
                        "ts_ns": c.get("ts_ns")})
        cut = _partitions(ev, g, pid, by("partition_owners", g), by("partition_gaps", g), end)
        if cut:
            notes.append(f"group {g}: {cut} partition(s) without owner/gap events (over {DETAIL_MAX}); "
                         f"the counter counts them, partition_gaps.parquet has them")
    for kind in ("share", "streams"):
        for g in sorted({r["group"] for r in tables.get(f"{kind}_epochs") or ()}):
            pid = ev.process(f"{kind} group {g}")
            for s in by(f"{kind}_epochs", g):
                ev.span(pid, ev.thread(pid, s["member"]), f"epoch {s.get('epoch')}", "membership", s["from_wall_ms"],
                        s["to_wall_ms"] if s["to_wall_ms"] is not None else end,
                        {k: s.get(k) for k in ("assignment", "active_tasks", "standby_tasks", "warmup_tasks")})
            for r in by(f"{kind}_timeline", g):
                ev.instant(pid, ev.thread(pid, r["member"]), r["kind"], "change", r.get("wall_ms"),
                           {"epoch": r.get("epoch"), "detail": r.get("detail")})
    return {"traceEvents": ev.events, "displayTimeUnit": "ms",
            "otherData": {"source": "kshim trace analyze", "groups": len(classic), "notes": notes}}


def _partitions(ev: Events, g: str, group_pid: int, owners: list[dict], gaps: list[dict], end,
                detail_max: int = DETAIL_MAX) -> int:
    """The partition threads, up to `detail_max` owner and gap events (whole partitions, in topic and
    partition order); the counter counts every gap. The number of partitions left out."""
    if not owners:
        return 0
    pid = ev.process(f"group {g} partitions")
    per_part: dict[tuple, int] = {}
    for x in owners + [gp for gp in gaps if not gp.get("initial")]:
        per_part[(x["topic"], x["partition"])] = per_part.get((x["topic"], x["partition"]), 0) + 1
    keep, budget = set(), detail_max
    for k in sorted(per_part, key=lambda k: (str(k[0]), k[1])):
        budget -= per_part[k]
        if budget >= 0:
            keep.add(k)
    for o in sorted(owners, key=lambda o: (o["topic"], o["partition"], o["from_wall_ms"])):
        if (o["topic"], o["partition"]) not in keep:
            continue
        tid = ev.thread(pid, f"{o['topic']}-{o['partition']}")
        ev.span(pid, tid, _ident(o), "owner", o["from_wall_ms"], o["to_wall_ms"] if o["to_wall_ms"] is not None else end,
                {k: o.get(k) for k in ("member", "client_id", "generation", "epoch", "protocol", "end_kind")})
    steps = []
    for gp in gaps:
        if gp.get("initial"):
            continue
        b = gp["to_wall_ms"] if gp["to_wall_ms"] is not None else end
        steps += [(gp["from_wall_ms"], 1), (b, -1)]
        if (gp["topic"], gp["partition"]) not in keep:
            continue
        ev.span(pid, ev.thread(pid, f"{gp['topic']}-{gp['partition']}"), "unavailable", "gap", gp["from_wall_ms"], b,
                {k: gp.get(k) for k in ("duration_ms", "stalled_ms", "previous_member", "previous_end_kind", "next_member",
                                        "generation", "cause_id")})
    delta: dict = {}
    for t, d in steps:
        delta[t] = delta.get(t, 0) + d
    n = 0
    for t in sorted(delta):          # one counter event per change of the count
        if delta[t]:
            n += delta[t]
            ev.counter(group_pid, "partitions unavailable", t, n)
    return len(per_part) - len(keep)


def write_trace_events(path: Path, tables: dict[str, list[dict]]) -> int:
    """Writes the JSON; the number of events."""
    doc = trace_events(tables)
    path.write_text(json.dumps(doc, separators=(",", ":"), default=str))
    return len(doc["traceEvents"])
