"""The coordinator's records with its broker's own `server.log` (`--broker-log`): the log says what the
records cannot (when a rebalance started and the coordinator's reason for it, a session timeout, a
member's LeaveGroup and its KIP-800 reason, a KIP-848 bump's reason, the generations that formed and
were replaced before their SyncGroup), the records what the log does not (members, assignments,
reconciliation steps). Both are stamped by the coordinator's own clock: no alignment is needed (the
log's zone: `--log-tz`), only a choice where both tell the same thing:

  a generation        the record's (it lists the members and assignments); the log's only for a
                      generation without a record
  an assignment       the record's
  a group epoch bump  the log's (its reason is the coordinator's); the record's when the log lacks it
  everything else     both (the log's events are the coordinator's words: `source: "broker_log"`)
"""

from __future__ import annotations

from pathlib import Path


def merge_broker_log(events: list[dict], logs: list[Path], log_tz: str | None = None, wanted=None,
                     since_ms: int | None = None) -> tuple[list[dict], dict]:
    """`events` (the records') with the log's; (merged events in time order, the log's figures)."""
    from ..capture.broker_log import parse_broker_logs
    tz = None
    if log_tz:
        from zoneinfo import ZoneInfo
        tz = ZoneInfo(log_tz)
    logged, stats = parse_broker_logs(logs, tz)
    recorded = {(e["group"], e["body"].get("generation")) for e in events if e["event"] == "generation"}
    kept, before = [], 0
    for ev in logged:
        group, kind = ev.get("group"), ev.get("event")
        if group is None or (wanted is not None and not wanted(group)):
            continue
        if since_ms is not None and ev["wall_ms"] < since_ms:
            before += 1
            continue
        body = {**(ev.get("body") or {}), "source": "broker_log"}
        if kind == "assignment" or (kind == "generation" and (group, body.get("generation")) in recorded):
            continue
        kept.append({**ev, "ts_ns": ev["wall_ms"] * 1_000_000, "body": body})
    bumps = {(e["group"], e["body"].get("epoch")) for e in kept if e["event"] == "group_epoch"}
    out = [e for e in events if not (e["event"] == "group_epoch" and not e["body"].get("in_force")
                                     and (e["group"], e["body"].get("epoch")) in bumps)] + kept
    out.sort(key=lambda e: e["ts_ns"])
    stats.update(events_used=len(kept), events_before_since=before,
                 replaced_records_events=len(events) - (len(out) - len(kept)))
    return out, stats
