"""The outputs of `kshim trace analyze`: Parquet tables, a self-contained interactive HTML report
(viewer.py: per group a zoomable member-lane and partition view drawn from one embedded JSON blob),
a PNG of it made by headless chromium and a Chrome trace-event / Perfetto JSON file (perfetto.py).

REPORT/rebalances.parquet  one row per generation formed (timeline.py's rounds)
REPORT/generation_members.parquet  one row per member incarnation per generation
REPORT/changes.parquet     joins, leaves, removals, fencing, static rejoins, SkipAssignment
REPORT/members.parquet     heartbeat gaps and commit cadence per member (members.py)
REPORT/anomalies.parquet   anomalies.py's flags
REPORT/share_timeline.parquet, streams_timeline.parquet  share/streams members' joins, epochs,
                           assignments, leaves, fencing, errors (member_timeline.py)
REPORT/share_members.parquet, streams_members.parquet    one row per share/streams member
REPORT/share_epochs.parquet, streams_epochs.parquet      one row per (member, epoch) span
REPORT/partition_owners.parquet, partition_gaps, rebalance_impact, causes, reconciliation (partition_tables.py)
REPORT/summary.json        per-group counts, inputs, timings
REPORT/report.html, REPORT/report.png
REPORT/trace.perfetto.json the timelines as Chrome trace events (ui.perfetto.dev, chrome://tracing)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from .perfetto import write_trace_events
from .viewer import _e, page, table, viewer_data

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                  "--disable-dev-shm-usage", "--disable-quic", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync")


def write_parquet(rows: list[dict], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    clean = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    t = pa.Table.from_pylist(clean) if clean else pa.table({"group": pa.array([], pa.string())})
    pq.write_table(t, path, compression="zstd")


def group_summary(rounds, changes, members, anomalies, impact=()) -> list[dict]:
    """Per group (classic, and KIP-848 groups from `impact`, the rebalance_impact rows: their rebalances
    are group epochs)."""
    groups = sorted({r["group"] for r in rounds} | {c["group"] for c in changes} | {m["group"] for m in members}
                    | {r["group"] for r in impact})
    out = []
    for g in groups:
        rs = [r for r in rounds if r["group"] == g and r["generation"] is not None]
        most = max((r["members"] or 0 for r in rs), default=0)
        if not rs:         # a KIP-848 group: its group epochs; members counted from their heartbeats
            rs = [{"generation": r["generation"], "join_to_sync_ms": None, "members": None, "partitions_moved": None}
                  for r in impact if r["group"] == g and r["generation"] is not None]
            most = most_at_once([m for m in members if m["group"] == g and m.get("heartbeats")])
        durations = [r["join_to_sync_ms"] for r in rs if r["join_to_sync_ms"] is not None]
        cs = [c for c in changes if c["group"] == g]
        out.append({"group": g, "rebalances": len(rs),
                    "generations": [r["generation"] for r in rs],
                    "static_rejoins_without_rebalance": sum(c["kind"] == "static_rejoin" for c in cs),
                    "fenced": sum(c["kind"] == "fenced" for c in cs),
                    "max_members": most,
                    "join_to_sync_ms_max": max(durations, default=None),
                    "partitions_moved": sum(r["partitions_moved"] or 0 for r in rs),
                    "anomalies": sum(a["group"] == g for a in anomalies)})
    return out


def most_at_once(members: list[dict]) -> int:
    """The most members heartbeating at once: each from its first to its last heartbeat."""
    edges = sorted(e for m in members if m.get("first_wall_ms") is not None
                   for e in ((m["first_wall_ms"], 1), ((m.get("last_wall_ms") or m["first_wall_ms"]), 2)))
    n = most = 0
    for _, kind in edges:       # at equal times a start (1) counts before an end (2): both were in
        n += 1 if kind == 1 else -1
        most = max(most, n)
    return most


# ---------------------------------------------------------------------- HTML
REBALANCE_COLS = ["generation", "reason", "start_wall_ms", "join_to_sync_ms", "members", "leader", "joined", "left",
                  "fenced", "skip_assignment", "partitions_moved", "slow_rejoins"]
IMPACT_COLS = ["generation", "protocol", "start_wall_ms", "partitions_unavailable", "max_gap_ms", "max_stalled_ms",
               "unavailable_partition_ms", "partitions_owner_unknown", "slowest_revoke_member", "slowest_revoke_ms",
               "slowest_rejoin_member", "slowest_rejoin_ms", "cause"]
UNKNOWN_FIGURES = ("partitions_unavailable", "max_gap_ms", "max_stalled_ms", "unavailable_partition_ms")


def unknown_figures(r: dict) -> dict:
    """A rebalance_impact row as shown: its figures "unknown" where the trace did not show the owners before it."""
    if not r.get("partitions_owner_unknown"):
        return r
    return {**r, **{c: "unknown" for c in UNKNOWN_FIGURES if r.get(c) is None}}
CAUSE_COLS = ["cause_id", "seq", "wall_ms", "kind", "member", "instance", "client_id", "reason", "detail", "source",
              "last_heartbeat_wall_ms", "timeout_ms"]
RECONCILE_COLS = ["member", "instance", "epoch", "target_wall_ms", "assigned", "revoked", "acked_wall_ms", "latency_ms",
                  "revoked_wall_ms", "revocation_latency_ms", "superseded"]
MEMBER_COLS = ["member", "instance", "heartbeats", "heartbeat_gap_avg_ms", "heartbeat_gap_max_ms", "session_timeout_ms",
               "silence_max_ms", "silences_over_session_timeout", "commits", "commit_interval_avg_ms"]


def _shown(groups: list[dict], max_groups: int) -> list[dict]:
    return sorted(groups, key=lambda g: (-g["rebalances"], g["group"]))[:max_groups]


def report_data(summary: dict, groups: list[dict], tables: dict[str, list[dict]], max_groups: int = 50,
                linked: dict | None = None) -> dict:
    """The page's JSON blob (viewer.py): the shown groups, then the share and streams groups."""
    hb = {kind: [g["group"] for g in summary.get(f"{kind}_groups") or ()][:max_groups] for kind, _, _ in HEARTBEAT_TYPES}
    return viewer_data(tables, [g["group"] for g in _shown(groups, max_groups)], hb, linked,
                       trace_end_wall_ms=summary.get("trace_end_wall_ms"))


def render_html(summary: dict, groups: list[dict], tables: dict[str, list[dict]], max_groups: int = 50,
                linked: dict | None = None, data: dict | None = None) -> str:
    """The page: summary tables, then per group its interactive view (viewer.js draws it from the
    blob) and its tables; share and streams groups after. `linked`: frames.py's frames to embed;
    `data`: report_data's blob when already made."""
    shown = _shown(groups, max_groups)
    data = data or report_data(summary, groups, tables, max_groups, linked)
    anomalies = tables.get("anomalies") or []
    head = (f"<h1>kshim trace analysis</h1><p>trace <code>{_e(summary['trace'])}</code>: "
            f"{summary['records'] if summary['records'] is not None else 'not counted'} records, "
            f"{summary['group_records']} group records, {len(groups)} group(s); "
            f"Spark master <code>{_e(summary['master'])}</code>; made {_e(summary['made'])}.</p>"
            + (f"<p>data: {_e(summary['data']['note'])}</p>" if (summary.get('data') or {}).get('note') else "")
            + import_loss_box(summary.get("import_losses")))
    out = ["<h2>Groups</h2>", table(groups, ["group", "rebalances", "static_rejoins_without_rebalance", "fenced",
                                             "max_members", "join_to_sync_ms_max", "partitions_moved", "anomalies"]),
           _heartbeat_groups_table(summary),
           f"<h2>Anomalies</h2><details{' open' if len(anomalies) <= 12 else ''}><summary>{len(anomalies)} flag(s)"
           f"</summary>{table(anomalies, ['group', 'kind', 'severity', 'wall_ms', 'subject', 'detail'])}</details>"
           if anomalies else "<p>none</p>"]
    if len(groups) > len(shown):
        out.append(f"<p>Timelines below: the {len(shown)} groups with the most rebalances (of {len(groups)}).</p>")
    for i, g in enumerate(shown):
        name = g["group"]
        mine = lambda t: [r for r in tables.get(t) or () if r["group"] == name]  # noqa: E731
        out.append(f'<section class="group" id="group-{_e(name)}" data-group="{_e(name)}"><h2>Group {_e(name)}</h2>')
        out.append(f"<p>{g['rebalances']} rebalance(s); {g['static_rejoins_without_rebalance']} static rejoin(s) "
                   f"without rebalance.</p>")
        out.append(f'<div class="view" id="view-{i}"></div>')
        if mine("rebalance_impact"):
            out.append("<h3>Rebalances: partitions unavailable</h3>" + table(
                [unknown_figures(r) for r in mine("rebalance_impact")], IMPACT_COLS))
        if mine("causes"):
            out.append("<h3>Causes</h3>" + table(mine("causes"), CAUSE_COLS, 200))
        if mine("rebalances"):
            out.append("<h3>Rebalances</h3>" + table(mine("rebalances"), REBALANCE_COLS))
        if mine("reconciliation"):
            out.append("<h3>Reconciliation (KIP-848)</h3>" + table(mine("reconciliation"), RECONCILE_COLS, 200))
        out.append("<h3>Members</h3>" + table(mine("members"), MEMBER_COLS, 100))
        out.append("</section>")
    out.append(heartbeat_sections(summary, tables, max_groups, first_view=len(shown)))
    return page(head, out, data)


def import_loss_box(losses: list[dict] | None) -> str:
    """The warning at the top of the page for a trace imported from a capture (or records) that lost data
    (capture/losses.py, from the trace directory's import-summary.json): what was lost and what to do."""
    if not losses:
        return ""
    items = "".join(f"<li>{_e(x['what'])}" + (f"<br><b>What to do:</b> {_e(x['fix'])}" if x["fix"] else "") + "</li>"
                    for x in losses)
    return ("<div class='loss' id='import-losses'><b>This trace was imported, and the import lost data</b> "
            "(import-summary.json); everything below shows only what it kept:"
            f"<ul>{items}</ul></div>")


# ---------------------------------------------------------------------- share and streams groups
HEARTBEAT_TYPES = (("share", "Share groups (KIP-932)", ["assignment"]),
                   ("streams", "Streams groups (KIP-1071)", ["active_tasks", "standby_tasks", "warmup_tasks"]))


def heartbeat_summary(tables: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """{"share_groups": [...], "streams_groups": [...]}: per group, its members' joins, leaves, fencing."""
    out = {}
    for kind, _, _ in HEARTBEAT_TYPES:
        ms = tables.get(f"{kind}_members") or []
        rows = []
        for g in sorted({m["group"] for m in ms}):
            mine = [m for m in ms if m["group"] == g]
            epochs = [e for m in mine for e in m["epochs"] or () if e is not None]
            rows.append({"group": g, "group_type": kind, "members": len(mine), "joins": sum(m["joins"] for m in mine),
                         "left": sum(m["end"] == "left" for m in mine), "fenced": sum(m["fenced"] for m in mine),
                         "errors": sum(len(m["errors"] or ()) for m in mine), "max_epoch": max(epochs, default=None)})
        out[f"{kind}_groups"] = rows
    return out


def _heartbeat_groups_table(summary: dict) -> str:
    rows = summary.get("share_groups", []) + summary.get("streams_groups", [])
    if not rows:
        return ""
    return "<h2>Share and streams groups</h2>" + table(rows, ["group", "group_type", "members", "joins", "left",
                                                                 "fenced", "errors", "max_epoch"])


def heartbeat_sections(summary: dict, tables: dict[str, list[dict]], max_groups: int = 50, first_view: int = 0) -> str:
    """A section per group type; per group its view (members as lanes, a bar per epoch, joins, leaves
    and fencing as marks: viewer_data's groups after the classic ones), the member and timeline tables."""
    out = []
    view = first_view
    for kind, title, assign_cols in HEARTBEAT_TYPES:
        groups = summary.get(f"{kind}_groups") or []
        if not groups:
            continue
        out.append(f'<section class="group-type" id="{kind}-groups"><h2>{_e(title)}</h2>')
        for g in groups[:max_groups]:
            name = g["group"]
            tl = [r for r in tables.get(f"{kind}_timeline") or () if r["group"] == name]
            out.append(f'<section class="{kind}-group" data-group="{_e(name)}"><h3>{_e(kind)} group {_e(name)}</h3>')
            out.append(f'<div class="view" id="view-{view}"></div>')
            view += 1
            out.append(table([m for m in tables.get(f"{kind}_members") or () if m["group"] == name],
                              ["member", "instance", "client_id", "joined_wall_ms", "heartbeats", "joins", "epochs",
                               "last_epoch", *assign_cols, "fenced", "errors", "end", "heartbeat_gap_max_ms"], 100))
            out.append(table(sorted(tl, key=lambda r: r.get("ts_ns") or 0),
                              ["wall_ms", "member", "kind", "epoch", *assign_cols, "detail"], 300))
            out.append("</section>")
        if len(groups) > max_groups:
            out.append(f"<p>{len(groups) - max_groups} more {kind} groups in the Parquet tables.</p>")
        out.append("</section>")
    return "\n".join(out)


# ---------------------------------------------------------------------- PNG
def find_chromium() -> str | None:
    for name in (os.environ.get("KSHIM_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def screenshot(html_path: Path, png_path: Path, width: int = 1280, height: int = 2000, timeout: float = 90) -> bool:
    """A PNG of the page by headless chromium (after its script ran); False (and no PNG) when chromium
    is not installed."""
    exe = find_chromium()
    if exe is None:
        return False
    profile = png_path.parent / ".chromium-profile"
    cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=5000",
           f"--window-size={width},{height}", f"--screenshot={png_path}", html_path.resolve().as_uri()]
    try:
        subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return png_path.exists() and png_path.stat().st_size > 0


def page_height(data: dict) -> int:
    """The PNG's height: what the page draws before any interaction (lanes, the partition strip and
    the open topic's rows), plus the tables."""
    h = 700
    for g in data["groups"]:
        h += 300 + (16 if len(g["lanes"]) <= 80 else 10) * len(g["lanes"])
        p = g["parts"]
        if p:
            rows = len(p["topics"]) + (len(p["topics"][0]["rows"]) if p["topics"] else 0)
            h += 120 + min(rows * (12 if rows <= 64 else 6), 460)
    return min(h, 16000)


def write_report(out: Path, summary: dict, tables: dict[str, list[dict]], max_groups: int = 50,
                 png: bool = True, linked: dict | None = None) -> dict:
    """`linked`: the frames behind causes and membership changes (frames.py), embedded in the HTML."""
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        write_parquet(rows, out / f"{name}.parquet")
    groups = group_summary(tables["rebalances"], tables["changes"], tables["members"], tables["anomalies"],
                           tables.get("rebalance_impact") or ())
    summary = {**summary, "groups": groups, **heartbeat_summary(tables)}
    data = report_data(summary, groups, tables, max_groups, linked)
    (out / "report.html").write_text(render_html(summary, groups, tables, max_groups, data=data))
    summary["perfetto"] = write_trace_events(out / "trace.perfetto.json", tables)
    if png:
        summary["png"] = screenshot(out / "report.html", out / "report.png", height=page_height(data))
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary
