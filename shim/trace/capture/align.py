"""Brokers' own coordinator events (broker_log.py) put on the capture's clock and merged with the
events inferred from the frames (infer.py).

Clocks. A broker log's stamps are the broker host's wall clock, to the millisecond, in its local zone
(`--log-tz`); the capture's are the capturing host's. They differ by the hosts' clock offset (zero
when the capture ran on the broker) plus a zone given wrongly.

Alignment by cause and effect. The generations (classic) and group epochs (KIP-848) both sides saw are
paired by (group, generation / epoch). The broker writes "Stabilized group G generation N" / "Bumped
group epoch to E" while it handles the request that completes the round (the round's last JoinGroup,
the heartbeat that joined or left), and before it sends the answer that shows it. So for each pair,
with the log line written at some moment of its millisecond stamp L (L <= t < L + 1):

    cause frame <= t + offset <= answer frame

that is `answer - L` bounds the offset from above (every pair) and `cause - (L + 1)` from below (where
the capture shows the request that caused it: the round's JoinGroups, a join's or a leave's heartbeat;
not a session timer's bump). The offset taken is
the smallest upper bound: no log event lands after the answer that showed it, and none before its
cause by more than the width of the bounds. A request the broker refused (NOT_COORDINATOR, ...) is
never a cause (infer.py withdraws it). The summary gives the offset, the pairs, the spread of the upper
bounds and the range the bounds leave (`offset_range_ms`: the offset's honest uncertainty).

Then each log event that has an inferred counterpart timed at its cause (same group and kind, same
member or generation / epoch, within a few ms) is kept at or after that cause, and at or before the
answer that showed it: a millisecond stamp cannot put an event before the frame that caused it.

Merging. Only log events inside the capture's time span are kept (what the broker did before the
capture or after it is not in the capture's story). For each group, an event kind the log has replaces
the inferred events of that kind: the coordinator's own reasons win, inference fills in what the log
does not say (INFO logs have no member heartbeats). A log event missing an identity its inferred
counterpart has (a classic static replacement's new member id, a member's client id or instance id)
takes it from there.
"""

from __future__ import annotations

from pathlib import Path

PAIRED = {"generation": "generation", "group_epoch": "epoch"}
NEAR_NS = 50_000_000          # a log event and its inferred counterpart: this close after alignment
STATIC_NEAR_NS = 5_000_000_000
IDENTITY = ("member", "instance", "client_id")


def _key(ev: dict):
    field = PAIRED.get(ev.get("event"))
    if field is None:
        return None
    v = (ev.get("body") or {}).get(field)
    return None if v is None else (ev.get("event"), ev.get("group"), v)


def offset_bounds(inferred: list[dict], logged: list[dict]) -> dict:
    """The clock offset (ms to add to log times) from the generation / epoch pairs: `offset_ms` (the
    smallest upper bound), `pairs`, `spread_ms`, `offset_range_ms` ([largest lower bound, offset])."""
    mine = {}
    for ev in inferred:
        k = _key(ev)
        if k is not None and ev.get("answer_ns") is not None:
            mine.setdefault(k, ev)
    upper, lower, seen = [], [], set()
    for ev in logged:
        k = _key(ev)
        if k is None or k not in mine or k in seen:
            continue
        seen.add(k)
        mate = mine[k]
        upper.append(mate["answer_ns"] / 1e6 - ev["wall_ms"])
        if mate.get("cause_ns") is not None:
            lower.append(mate["cause_ns"] / 1e6 - (ev["wall_ms"] + 1))
    if not upper:
        return {"offset_ms": 0, "pairs": 0, "spread_ms": 0, "offset_range_ms": None}
    off = min(upper)
    low = max(lower) if lower else None
    return {"offset_ms": round(off, 3), "pairs": len(upper), "spread_ms": round(max(upper) - off, 3),
            "offset_range_ms": [round(low, 3) if low is not None else None, round(off, 3)],
            "cause_pairs": len(lower)}


def _counterparts(inferred: list[dict]) -> dict:
    by = {}
    for ev in inferred:
        body = ev.get("body") or {}
        field = PAIRED.get(ev["event"])
        ident = body.get(field) if field else (ev.get("member") or body.get("member") or body.get("instance"))
        by.setdefault((ev["group"], ev["event"], ident), []).append(ev)
    return by


def _mate(by: dict, ev: dict, near_ns: int = NEAR_NS) -> dict | None:
    body = ev.get("body") or {}
    field = PAIRED.get(ev["event"])
    ident = body.get(field) if field else (ev.get("member") or body.get("member") or body.get("instance"))
    if ident is None:
        return None
    best = None
    for m in by.get((ev["group"], ev["event"], ident), ()):
        d = abs(m["ts_ns"] - ev["ts_ns"])
        if d <= near_ns and (best is None or d < best[0]):
            best = (d, m)
    return None if best is None else best[1]


def _by_cause(ev: dict, mate: dict | None) -> None:
    """No log event before the frame that caused it, none after the answer that showed it."""
    if mate is None:
        return
    ts = ev["ts_ns"]
    if mate.get("cause_ns") is not None:
        ts = max(ts, mate["cause_ns"])
    if mate.get("answer_ns") is not None and ev["event"] in PAIRED:
        ts = min(ts, mate["answer_ns"] - 1000)
    if ts != ev["ts_ns"]:
        ev["ts_ns"], ev["wall_ms"] = ts, ts // 1_000_000


def _identity(ev: dict, by: dict, mate: dict | None) -> None:
    body = ev["body"]
    if ev["event"] == "static_member_replaced" and not body.get("member") and body.get("instance"):
        # a classic "Replacing previously mapped member O" line has no new member id: the answer has it
        cands = []
        for (g, kind, _), evs in by.items():
            if g == ev["group"] and kind == "static_member_replaced":
                cands += [m for m in evs if (m.get("body") or {}).get("instance") == body["instance"]
                          and abs(m["ts_ns"] - ev["ts_ns"]) <= STATIC_NEAR_NS]
        if cands:
            mate = min(cands, key=lambda m: abs(m["ts_ns"] - ev["ts_ns"]))
    if mate is None:
        return
    mb = mate.get("body") or {}
    for k in IDENTITY:
        if body.get(k) is None and mb.get(k) is not None:
            body[k] = mb[k]
            if k in ("member", "instance"):
                ev[k] = mb[k]


def merge_broker_events(inferred: list[dict], logs: list[Path], log_tz: str | None = None,
                        window_ms: tuple[int, int] | None = None) -> tuple[list[dict], dict]:
    from .broker_log import parse_broker_logs
    tz = None
    if log_tz:
        from zoneinfo import ZoneInfo
        tz = ZoneInfo(log_tz)
    logged, stats = parse_broker_logs(logs, tz)
    bounds = offset_bounds(inferred, logged)
    offset = bounds["offset_ms"]
    by = _counterparts(inferred)
    kept, outside = [], 0
    for ev in logged:
        ts = int(round((ev["wall_ms"] + offset) * 1_000_000))
        if window_ms is not None and not window_ms[0] * 1_000_000 <= ts <= (window_ms[1] + 1) * 1_000_000:
            outside += 1
            continue
        body = dict(ev.get("body") or {})
        body["source"] = "broker_log"
        placed = {**ev, "wall_ms": ts // 1_000_000, "ts_ns": ts, "body": body}
        mate = _mate(by, placed)
        _by_cause(placed, mate)
        _identity(placed, by, mate)
        kept.append(placed)
    covered = {(ev["group"], ev["event"]) for ev in kept}
    out = [ev for ev in inferred if (ev["group"], ev["event"]) not in covered] + kept
    pairs, spread = bounds["pairs"], bounds["spread_ms"]
    stats.update(offset_ms=offset, pairs=pairs, spread_ms=spread, offset_range_ms=bounds["offset_range_ms"],
                 events_in_capture=len(kept), events_outside_capture=outside,
                 replaced_inferred=len(inferred) + len(kept) - len(out),
                 alignment=(f"{pairs} generation/epoch pair(s), each log line between its cause and its answer; "
                            f"upper bounds spread {spread:g} ms" if pairs
                            else "no generation or epoch in both: offset 0 (the clocks are taken as equal)"))
    return out, stats
