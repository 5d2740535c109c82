"""Brokers' own coordinator events (broker_log.py) put on the capture's clock and merged with the
events inferred from the frames (infer.py).

Clocks. A broker log's stamps are the broker host's wall clock, to the millisecond, in its local zone
(`--log-tz`); the capture's are the capturing host's. They differ by the hosts' clock offset (zero
when the capture ran on the broker) plus a zone given wrongly. Alignment: the generations (classic)
and group epochs (KIP-848) both sides saw are paired by (group, generation / epoch); the broker logs
"Stabilized group G generation N" just before it sends the JoinGroup answers that the capture shows,
so capture time - log time is, per pair, the clock offset plus that short delay. The smallest of these
is taken as the offset (every log event then lands at or before the frames it led to) and the spread
of the pairs (largest - smallest) is reported: the accuracy of the alignment. Without a pair the
offset is 0 and the summary says so.

Merging. Only log events inside the capture's time span (plus a second each side) are kept. For
each group, an event kind the log has replaces the inferred events of that kind: the coordinator's
own reasons win, inference fills in what the log does not say (INFO logs have no member heartbeats).
"""

from __future__ import annotations

from pathlib import Path

MARGIN_MS = 1000
PAIRED = {"generation": "generation", "group_epoch": "epoch"}


def _key(ev: dict):
    field = PAIRED.get(ev.get("event"))
    if field is None:
        return None
    v = (ev.get("body") or {}).get(field)
    return None if v is None else (ev.get("event"), ev.get("group"), v)


def clock_offset(inferred: list[dict], logged: list[dict]) -> tuple[int, int, int]:
    """(offset ms to add to log times, pairs, spread ms)."""
    mine = {}
    for ev in inferred:
        k = _key(ev)
        if k is not None:
            mine.setdefault(k, ev["ts_ns"] // 1_000_000)
    diffs = []
    seen = set()
    for ev in logged:
        k = _key(ev)
        if k is not None and k in mine and k not in seen:
            seen.add(k)
            diffs.append(mine[k] - ev["wall_ms"])
    if not diffs:
        return 0, 0, 0
    return min(diffs), len(diffs), max(diffs) - min(diffs)


def merge_broker_events(inferred: list[dict], logs: list[Path], log_tz: str | None = None,
                        window_ms: tuple[int, int] | None = None) -> tuple[list[dict], dict]:
    from .broker_log import parse_broker_logs
    tz = None
    if log_tz:
        from zoneinfo import ZoneInfo
        tz = ZoneInfo(log_tz)
    logged, stats = parse_broker_logs(logs, tz)
    offset, pairs, spread = clock_offset(inferred, logged)
    kept = []
    for ev in logged:
        wall = ev["wall_ms"] + offset
        if window_ms is not None and not window_ms[0] - MARGIN_MS <= wall <= window_ms[1] + MARGIN_MS:
            continue
        body = dict(ev.get("body") or {})
        body["source"] = "broker_log"
        kept.append({**ev, "wall_ms": wall, "ts_ns": wall * 1_000_000, "body": body})
    covered = {(ev["group"], ev["event"]) for ev in kept}
    out = [ev for ev in inferred if (ev["group"], ev["event"]) not in covered] + kept
    stats.update(offset_ms=offset, pairs=pairs, spread_ms=spread, events_in_capture=len(kept),
                 replaced_inferred=len(inferred) + len(kept) - len(out),
                 alignment=(f"{pairs} generation/epoch pair(s), spread {spread} ms" if pairs
                            else "no generation or epoch in both: offset 0"))
    return out, stats
