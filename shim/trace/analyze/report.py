"""The outputs of `kshim trace analyze`: Parquet tables, a self-contained HTML report (inline CSS and
one SVG timeline per group: members as lanes, generations as bands) and a PNG of it made by headless
chromium.

REPORT/rebalances.parquet  one row per generation formed (timeline.py's rounds)
REPORT/generation_members.parquet  one row per member incarnation per generation
REPORT/changes.parquet     joins, leaves, removals, fencing, static rejoins, SkipAssignment
REPORT/members.parquet     heartbeat gaps and commit cadence per member (members.py)
REPORT/anomalies.parquet   anomalies.py's flags
REPORT/share_timeline.parquet, streams_timeline.parquet  share/streams members' joins, epochs,
                           assignments, leaves, fencing, errors (member_timeline.py)
REPORT/share_members.parquet, streams_members.parquet    one row per share/streams member
REPORT/share_epochs.parquet, streams_epochs.parquet      one row per (member, epoch) span
REPORT/summary.json        per-group counts, inputs, timings
REPORT/report.html, REPORT/report.png
"""

from __future__ import annotations

import datetime as dt
import html
import json
import os
import shutil
import subprocess
from pathlib import Path

LANES_MAX = 60
WIDTH, LANE_H, TOP, LEFT = 1100, 18, 34, 230


def write_parquet(rows: list[dict], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    clean = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    table = pa.Table.from_pylist(clean) if clean else pa.table({"group": pa.array([], pa.string())})
    pq.write_table(table, path, compression="zstd")


def group_summary(rounds, changes, members, anomalies) -> list[dict]:
    groups = sorted({r["group"] for r in rounds} | {c["group"] for c in changes} | {m["group"] for m in members})
    out = []
    for g in groups:
        rs = [r for r in rounds if r["group"] == g and r["generation"] is not None]
        durations = [r["join_to_sync_ms"] for r in rs if r["join_to_sync_ms"] is not None]
        cs = [c for c in changes if c["group"] == g]
        out.append({"group": g, "rebalances": len(rs),
                    "generations": [r["generation"] for r in rs],
                    "static_rejoins_without_rebalance": sum(c["kind"] == "static_rejoin" for c in cs),
                    "fenced": sum(c["kind"] == "fenced" for c in cs),
                    "max_members": max((r["members"] or 0 for r in rs), default=0),
                    "join_to_sync_ms_max": max(durations, default=None),
                    "partitions_moved": sum(r["partitions_moved"] or 0 for r in rs),
                    "anomalies": sum(a["group"] == g for a in anomalies)})
    return out


# ---------------------------------------------------------------------- HTML
CSS = """
body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:2px 6px;vertical-align:top}
th{background:#f2f2f2;text-align:left}td.n{text-align:right}.warn{color:#b00}.info{color:#06c}
svg{background:#fafafa;border:1px solid #ddd}.gen-band.odd{fill:#e8f0fb}.gen-band.even{fill:#f6f9fe}
.member-bar{fill:#4a8}.member-bar.leader{fill:#286}.lane-label{font-size:11px;fill:#333}
.gen-label{font-size:10px;fill:#557}.change{stroke:#fff;stroke-width:1}.change.left,.change.removed,
.change.session_timeout{fill:#d33}.change.fenced{fill:#a0a}.change.static_rejoin,.change.static_replaced{fill:#e90}
.change.joined,.change.first_seen{fill:#36c}.change.error{fill:#b60}
.change.epoch,.change.assignment,.change.status{fill:#999}
svg[data-unit=epoch] .member-bar{stroke:#fff;stroke-width:1}
.change.skip_assignment{fill:#888}.axis{font-size:10px;fill:#666}
"""


def _e(x) -> str:
    return html.escape("" if x is None else str(x))


def _clock(ms) -> str:
    if ms is None:
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def _table(rows: list[dict], cols: list[str], limit: int = 500) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    body = []
    for r in rows[:limit]:
        cells = []
        for c in cols:
            v = r.get(c)
            if isinstance(v, list):
                v = "; ".join(map(str, v))
            if c.endswith("wall_ms"):
                v = _clock(v)
            cls = ' class="n"' if isinstance(v, (int, float)) else (f' class="{_e(v)}"' if c == "severity" else "")
            cells.append(f"<td{cls}>{_e(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = f"<p>{len(rows) - limit} more rows in the Parquet table.</p>" if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def timeline_svg(group: str, rounds, members, changes, unit: str = "generation") -> str:
    """Lanes: one per member identity (group.instance.id, else member id); bands: one per generation.
    `unit`: the members' key their bars are labelled with (share/streams spans: "epoch")."""
    times = [x for r in rounds for x in (r.get("start_wall_ms"), r.get("last_sync_wall_ms"), r.get("generation_wall_ms"))
             if x is not None]
    times += [x for m in members for x in (m["from_wall_ms"], m["to_wall_ms"]) if x is not None]
    times += [c["wall_ms"] for c in changes if c.get("wall_ms") is not None]
    if not times:
        return "<p>no timeline</p>"
    t0, t1 = min(times), max(times)
    span = max(t1 - t0, 1)
    lanes: list[str] = []
    for m in members:
        ident = m.get("instance") or m["member"]
        if ident not in lanes:
            lanes.append(ident)
    hidden = max(len(lanes) - LANES_MAX, 0)
    lanes = lanes[:LANES_MAX]
    lane_of = {ident: i for i, ident in enumerate(lanes)}
    height = TOP + LANE_H * max(len(lanes), 1) + 24
    x = lambda t: LEFT + (t - t0) * (WIDTH - LEFT - 10) / span  # noqa: E731
    parts = [f'<svg class="timeline" data-group="{_e(group)}" data-unit="{unit}" width="{WIDTH}" height="{height}" '
             f'xmlns="http://www.w3.org/2000/svg">']
    gens = [r for r in rounds if r["generation"] is not None]
    for i, r in enumerate(gens):
        start = r.get("start_wall_ms") or r.get("generation_wall_ms") or t0
        end = gens[i + 1].get("start_wall_ms") or gens[i + 1].get("generation_wall_ms") if i + 1 < len(gens) else t1
        parts.append(f'<rect class="gen-band {"odd" if i % 2 else "even"}" data-generation="{r["generation"]}" '
                     f'x="{x(start):.1f}" y="{TOP - 14}" width="{max(x(end) - x(start), 1):.1f}" '
                     f'height="{height - TOP - 10 + 14}"><title>generation {r["generation"]}: '
                     f'{_e(r.get("reason"))}</title></rect>')
        parts.append(f'<text class="gen-label" x="{x(start) + 2:.1f}" y="{TOP - 4}">g{r["generation"]}</text>')
    for ident, i in lane_of.items():
        y = TOP + i * LANE_H
        parts.append(f'<g class="lane" data-member="{_e(ident)}"><text class="lane-label" x="4" y="{y + 12}">'
                     f'{_e(str(ident)[:34])}</text>')
        for m in members:
            if (m.get("instance") or m["member"]) != ident:
                continue
            a, b = m["from_wall_ms"], m["to_wall_ms"] if m["to_wall_ms"] is not None else t1
            parts.append(f'<rect class="member-bar{" leader" if m.get("leader") else ""}" x="{x(a):.1f}" '
                         f'y="{y + 3}" width="{max(x(b) - x(a), 1.5):.1f}" height="{LANE_H - 6}"><title>'
                         f'{_e(m["member"])} {unit} {m[unit]}: '
                         f'{_e(", ".join(m.get("assignment") or []))}</title></rect>')
        parts.append("</g>")
    for c in changes:
        i = lane_of.get(c.get("instance") or c.get("member"))
        if i is None or c.get("wall_ms") is None:
            continue
        parts.append(f'<circle class="change {c["kind"]}" cx="{x(c["wall_ms"]):.1f}" cy="{TOP + i * LANE_H + LANE_H / 2}" '
                     f'r="4"><title>{_e(c["kind"])} {_e(c.get("reason") or c.get("detail") or "")}</title></circle>')
    parts.append(f'<text class="axis" x="{LEFT}" y="{height - 6}">{_clock(t0)} UTC</text>'
                 f'<text class="axis" x="{WIDTH - 90}" y="{height - 6}">+{span / 1000:.1f} s</text></svg>')
    if hidden:
        parts.append(f"<p>{hidden} more member lanes not drawn.</p>")
    return "".join(parts)


def render_html(summary: dict, groups: list[dict], rounds, members, changes, member_stats, anomalies,
                max_groups: int = 50, tables_hb: dict | None = None) -> str:
    """`tables_hb`: the share_*/streams_* tables (member timelines of KIP-932 / KIP-1071 groups)."""
    shown = sorted(groups, key=lambda g: (-g["rebalances"], g["group"]))[:max_groups]
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>kshim trace analysis</title>"
           f"<style>{CSS}</style></head><body>",
           f"<h1>kshim trace analysis</h1><p>trace <code>{_e(summary['trace'])}</code>: "
           f"{summary['records'] if summary['records'] is not None else 'not counted'} records, "
           f"{summary['group_records']} group records, {len(groups)} group(s); "
           f"Spark master <code>{_e(summary['master'])}</code>; made {_e(summary['made'])}.</p>",
           "<h2>Groups</h2>", _table(groups, ["group", "rebalances", "static_rejoins_without_rebalance", "fenced",
                                             "max_members", "join_to_sync_ms_max", "partitions_moved", "anomalies"]),
           _heartbeat_groups_table(summary),
           "<h2>Anomalies</h2>", _table(anomalies, ["group", "kind", "severity", "wall_ms", "subject", "detail"])
           if anomalies else "<p>none</p>"]
    if len(groups) > len(shown):
        out.append(f"<p>Timelines below: the {len(shown)} groups with the most rebalances (of {len(groups)}).</p>")
    for g in shown:
        name = g["group"]
        rs = [r for r in rounds if r["group"] == name]
        ms = [m for m in members if m["group"] == name]
        cs = [c for c in changes if c["group"] == name]
        out.append(f'<section class="group" id="group-{_e(name)}" data-group="{_e(name)}"><h2>Group {_e(name)}</h2>')
        out.append(f"<p>{g['rebalances']} rebalance(s); {g['static_rejoins_without_rebalance']} static rejoin(s) "
                   f"without rebalance.</p>")
        out.append(timeline_svg(name, rs, ms, cs))
        out.append(_table(rs, ["generation", "reason", "start_wall_ms", "join_to_sync_ms", "members", "leader",
                               "joined", "left", "fenced", "skip_assignment", "partitions_moved", "slow_rejoins"]))
        out.append(_table([m for m in member_stats if m["group"] == name],
                          ["member", "instance", "heartbeats", "heartbeat_gap_avg_ms", "heartbeat_gap_max_ms",
                           "session_timeout_ms", "silence_max_ms", "silences_over_session_timeout", "commits",
                           "commit_interval_avg_ms"], 100))
        out.append("</section>")
    out.append(heartbeat_sections(summary, tables_hb or {}, max_groups))
    out.append("</body></html>")
    return "\n".join(out)


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
    return "<h2>Share and streams groups</h2>" + _table(rows, ["group", "group_type", "members", "joins", "left",
                                                                 "fenced", "errors", "max_epoch"])


def heartbeat_sections(summary: dict, tables: dict[str, list[dict]], max_groups: int = 50) -> str:
    """A section per group type; per group its members as lanes (a bar per epoch), joins, leaves and
    fencing as dots, the member table and the timeline table."""
    out = []
    for kind, title, assign_cols in HEARTBEAT_TYPES:
        groups = summary.get(f"{kind}_groups") or []
        if not groups:
            continue
        out.append(f'<section class="group-type" id="{kind}-groups"><h2>{_e(title)}</h2>')
        for g in groups[:max_groups]:
            name = g["group"]
            tl = [r for r in tables.get(f"{kind}_timeline") or () if r["group"] == name]
            out.append(f'<section class="{kind}-group" data-group="{_e(name)}"><h3>{_e(kind)} group {_e(name)}</h3>')
            out.append(timeline_svg(name, [], [s for s in tables.get(f"{kind}_epochs") or () if s["group"] == name],
                                    tl, unit="epoch"))
            out.append(_table([m for m in tables.get(f"{kind}_members") or () if m["group"] == name],
                              ["member", "instance", "client_id", "joined_wall_ms", "heartbeats", "joins", "epochs",
                               "last_epoch", *assign_cols, "fenced", "errors", "end", "heartbeat_gap_max_ms"], 100))
            out.append(_table(sorted(tl, key=lambda r: r.get("ts_ns") or 0),
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
    """A PNG of the page by headless chromium; False (and no PNG) when chromium is not installed."""
    exe = find_chromium()
    if exe is None:
        return False
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--disable-dev-shm-usage", f"--user-data-dir={png_path.parent / '.chromium-profile'}",
           f"--window-size={width},{height}", f"--screenshot={png_path}", html_path.resolve().as_uri()]
    try:
        subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
    finally:
        shutil.rmtree(png_path.parent / ".chromium-profile", ignore_errors=True)
    return png_path.exists() and png_path.stat().st_size > 0


def page_height(groups_shown: int, lanes: int) -> int:
    return min(600 + groups_shown * 420 + lanes * LANE_H, 12000)


def write_report(out: Path, summary: dict, tables: dict[str, list[dict]], max_groups: int = 50,
                 png: bool = True) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        write_parquet(rows, out / f"{name}.parquet")
    groups = group_summary(tables["rebalances"], tables["changes"], tables["members"], tables["anomalies"])
    summary = {**summary, "groups": groups, **heartbeat_summary(tables)}
    page = render_html(summary, groups, tables["rebalances"], tables["generation_members"], tables["changes"],
                       tables["members"], tables["anomalies"], max_groups, tables)
    (out / "report.html").write_text(page)
    if png:
        shown = min(len(groups), max_groups)
        lanes = len({(m["group"], m.get("instance") or m["member"]) for m in tables["generation_members"]})
        hb_groups = len(summary["share_groups"]) + len(summary["streams_groups"])
        shown += min(hb_groups, 2 * max_groups)
        lanes += sum(len({(m["group"], m["member"]) for m in tables.get(f"{k}_members") or ()})
                     for k in ("share", "streams"))
        summary["png"] = screenshot(out / "report.html", out / "report.png",
                                    height=page_height(shown, min(lanes, shown * LANES_MAX)))
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary
