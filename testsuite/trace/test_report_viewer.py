"""report.html (viewer.py, viewer.js) and the trace-event export (perfetto.py) on synthetic analysis
tables (viewerbuild.py); the page's script runs in headless chromium when it is installed."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest

from shim.trace.analyze.perfetto import trace_events
from shim.trace.analyze.report import CHROMIUM_FLAGS, find_chromium, write_report
from shim.trace.analyze.viewer import viewer_data

from .viewerbuild import SUMMARY, build

SCHEMA = json.loads((Path(__file__).parent / "trace_event_format.schema.json").read_text())
CHROMIUM = find_chromium()


def blob_of(page: str) -> dict:
    start = page.index("id='kshim-data'>") + len("id='kshim-data'>")
    return json.loads(page[start:page.index("</script>", start)])


def test_trace_events_match_the_format_with_a_thread_per_member_and_owner_durations():
    tables, _ = build(6, 24)
    doc = trace_events(tables)
    jsonschema.validate(doc, SCHEMA)
    ev = doc["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
    assert sorted(procs.values()) == ["group orders", "group orders partitions"]
    group_pid = next(p for p, n in procs.items() if n == "group orders")
    threads = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name" and e["pid"] == group_pid}
    idents = {m["instance"] or m["member"] for m in tables["generation_members"]}
    assert set(threads.values()) == idents | {"rebalances"}
    # membership spans sit on their member's thread, with the table's durations
    for m in tables["generation_members"]:
        tid = next(t for t, n in threads.items() if n == (m["instance"] or m["member"]))
        x = [e for e in ev if e["ph"] == "X" and e["pid"] == group_pid and e["tid"] == tid
             and e["ts"] == m["from_wall_ms"] * 1000 and e["args"]["member"] == m["member"]]
        assert len(x) == 1
        if m["to_wall_ms"] is not None:
            assert x[0]["dur"] == (m["to_wall_ms"] - m["from_wall_ms"]) * 1000
    part_pid = next(p for p, n in procs.items() if n.endswith("partitions"))
    owned = [e for e in ev if e["ph"] == "X" and e["pid"] == part_pid and e["cat"] == "owner"]
    assert len(owned) == len(tables["partition_owners"])
    gaps = [g for g in tables["partition_gaps"] if not g["initial"]]
    assert sorted(e["dur"] for e in ev if e.get("cat") == "gap") == sorted(g["duration_ms"] * 1000 for g in gaps)
    counter = [e["args"]["partitions"] for e in ev if e["ph"] == "C"]
    assert max(counter) == max(i["partitions_unavailable"] for i in tables["rebalance_impact"])  # one round at a time
    assert counter[-1] == sum(g["to_wall_ms"] is None for g in gaps)
    causes = [e for e in ev if e.get("cat") == "cause"]
    assert [c["args"]["conn"] for c in causes] == [c["conn"] for c in tables["causes"]]


def test_report_embeds_the_frames_of_a_cause_and_the_static_bounce_as_a_gap(tmp_path):
    tables, linked = build(6, 24)
    summary = write_report(tmp_path, dict(SUMMARY), tables, png=False, linked=linked)
    page = (tmp_path / "report.html").read_text()
    assert "<script src" not in page and "http" not in page.split("id='kshim-data'")[0].split("</style>")[1]
    data = blob_of(page)
    g = data["groups"][0]
    chain = g["causes"]["orders:2"]
    assert chain[0]["kind"] == "poll_interval_exceeded"
    frames = data["frames"][chain[0]["frame"]]
    assert [f["dir"] for f in frames] == ["client->kshim", "kshim->client"]
    assert frames[0]["body"]["reason"] == "consumer poll timeout has expired."
    # the static member's lane: solid until its last frame, pale until its replacement, then a new bar
    lane = next(i for i, lane in enumerate(g["lanes"]) if lane["label"] == "orders-static-0")
    segs = sorted((s for s in g["segs"] if s[0] == lane), key=lambda s: s[1])
    bounced = next(s for s in segs if s[3] < s[2])
    assert (g["t0"] + bounced[3], g["t0"] + bounced[2]) == (1_764_000_118_000, 1_764_000_125_000)
    assert any(m[0] == lane and m[2] == "static_rejoin" and m[4] for m in g["marks"])
    parts = g["parts"]
    assert sum(len(t["rows"]) for t in parts["topics"]) == 24 and parts["max_unavailable"] > 0
    # stalled: the killed member's partitions until its session timeout (the static member's, earlier, are fewer)
    assert parts["max_stalled"] == sum(g["previous_end_kind"] == "session_timeout" for g in tables["partition_gaps"])
    assert json.loads((tmp_path / "trace.perfetto.json").read_text())["traceEvents"] and summary["perfetto"] > 0


def test_report_size_is_bounded_at_100_members_and_1000_partitions(tmp_path):
    tables, linked = build(100, 1000, topics=10)
    write_report(tmp_path, dict(SUMMARY), tables, png=False, linked=linked)
    size = (tmp_path / "report.html").stat().st_size
    assert size < 3_000_000, size
    data = viewer_data(tables, ["orders"], {}, linked, max_frame_bytes=2_000)
    assert 0 < len(data["frames"]) < len(linked["frames"]) and "not embedded" in data["notes"][0]
    assert len(json.dumps(data["frames"])) <= 2_000


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_page_script_runs_in_chromium_and_opens_a_cause(tmp_path):
    tables, linked = build(6, 24)
    write_report(tmp_path, dict(SUMMARY), tables, png=False, linked=linked)
    url = (tmp_path / "report.html").as_uri() + "#cause=orders:3"
    out = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr",
                          "--v=0", "--virtual-time-budget=3000", "--dump-dom", url],
                         capture_output=True, text=True, timeout=90)
    dom = out.stdout
    status = re.search(r'<span id="viewer-status"([^>]*)>', dom).group(1)
    assert 'data-errors="0"' in status and 'data-groups="1"' in status and 'data-lanes="7"' in status
    assert not re.findall(r"CONSOLE.*(Uncaught|Error)", out.stderr)
    detail = re.search(r'<div class="detail" style="display: block;">(.*?)</div>', dom, re.S).group(1)
    assert "cause chain orders:3" in detail and "session_timeout" in detail and "JoinGroup" in detail


def test_a_kip848_group_gets_lanes_per_member_epoch_and_its_group_epochs_as_rebalances():
    from shim.trace.analyze.partition_tables import IMPACT_COLUMNS, OWNER_COLUMNS, row
    from shim.trace.analyze.report import group_summary
    own = lambda m, p, e, a, b: row(OWNER_COLUMNS, group="c", group_type="consumer", topic="t", partition=p,  # noqa: E731
                                    member=m, epoch=e, protocol="consumer", from_wall_ms=a, to_wall_ms=b)
    tables = {"partition_owners": [own("m1", 0, 1, 1000, 5000), own("m1", 1, 1, 1000, None), own("m2", 0, 2, 5200, None)],
              "partition_gaps": [], "rebalance_impact": [row(IMPACT_COLUMNS, group="c", group_type="consumer",
                                                             generation=2, protocol="consumer", start_wall_ms=4900,
                                                             end_wall_ms=5200, cause_id="c:2")]}
    assert [(g["group"], g["rebalances"]) for g in group_summary([], [], [], [], tables["rebalance_impact"])] == [("c", 1)]
    g = viewer_data(tables, ["c"], {})["groups"][0]
    assert [lane["label"] for lane in g["lanes"]] == ["m1", "m2"]
    assert [(s[0], g["t0"] + s[1], g["t0"] + s[2], s[5]) for s in g["segs"]] == [(0, 1000, 5200, "m1 epoch 1"),
                                                                                 (1, 5200, 5200, "m2 epoch 2")]
    assert [(r["label"], r["cause"]) for r in g["rebs"]] == [("g2", "c:2")]
    ev = trace_events(tables)["traceEvents"]
    jsonschema.validate({"traceEvents": ev}, SCHEMA)
    assert [e["name"] for e in ev if e["ph"] == "X" and e.get("cat") == "rebalance"] == ["rebalance g2"]


def _hue(colour: str) -> float:
    return float(re.match(r"hsl\(([\d.]+),", colour).group(1))


def test_owner_colours_keep_away_from_the_red_of_no_owner_and_a_legend_names_them():
    from shim.trace.analyze.viewer import owner_colour
    assert all(40 <= _hue(owner_colour(i)) <= 320 for i in range(1000))       # the gap's red is hue 0
    assert len({owner_colour(i) for i in range(24)}) == 24
    tables, linked = build(6, 24)
    parts = viewer_data(tables, ["orders"], {}, linked)["groups"][0]["parts"]
    assert parts["colours"] == [owner_colour(i) for i in range(len(parts["owners"]))]
    legend = {entry["label"]: entry["colour"] for entry in parts["legend"]}
    # an owner with a group.instance.id, and one known by client id and member id
    assert legend["orders-static-0 · consumer-orders-1"] == parts["colours"][parts["owners"].index("orders-static-0")]
    member = next(o for o in parts["owners"] if o.startswith("consumer-orders-2-"))
    label = next(e["label"] for e in parts["legend"] if member in e["title"])
    assert label == "consumer-orders-2 · …" + member[-8:]    # the member id's tail (its head is the client id)


def test_a_kip848_group_counts_its_members_from_heartbeats_and_labels_lanes_by_client_and_instance():
    from shim.trace.analyze.partition_tables import IMPACT_COLUMNS, OWNER_COLUMNS, row
    from shim.trace.analyze.report import group_summary
    own = lambda m, p, a, b, **kw: row(OWNER_COLUMNS, group="c", group_type="consumer", topic="t",  # noqa: E731
                                       partition=p, member=m, epoch=1, protocol="consumer", from_wall_ms=a,
                                       to_wall_ms=b, **kw)
    tables = {"partition_owners": [own("Zq3-uuid-of-m1", 0, 1000, None, client_id="app-1", instance="pod-1"),
                                   own("Xy9-uuid-of-m2", 1, 1200, None, client_id="app-2")],
              "partition_gaps": [],
              "rebalance_impact": [row(IMPACT_COLUMNS, group="c", group_type="consumer", generation=2,
                                       protocol="consumer", start_wall_ms=900, end_wall_ms=1200, cause_id="c:2")]}
    members = [{"group": "c", "member": m, "heartbeats": n, "first_wall_ms": a, "last_wall_ms": b}
               for m, n, a, b in (("m1", 12, 1000, 9000), ("m2", 9, 1200, 5000), ("m3", 3, 6000, 8000))]
    (g,) = group_summary([], [], members, [], tables["rebalance_impact"])
    assert g["max_members"] == 2            # m1 with m2, then m1 with m3
    lanes = viewer_data(tables, ["c"], {})["groups"][0]["lanes"]
    assert [lane["label"] for lane in lanes] == ["pod-1 · app-1 · Zq3-uuid-of-m1", "app-2 · Xy9-uuid-of-m2"]


def test_the_time_axis_runs_to_the_trace_end_not_the_last_rebalance(tmp_path):
    tables, linked = build(6, 24)
    data = viewer_data(tables, ["orders"], {}, linked)
    g = data["groups"][0]
    last_event = g["t0"] + g["span"]
    end = last_event + 3_600_000                      # an hour of quiet after the last rebalance
    summary = write_report(tmp_path, {**SUMMARY, "trace_end_wall_ms": end}, tables, png=False, linked=linked)
    g = blob_of((tmp_path / "report.html").read_text())["groups"][0]
    assert g["t0"] + g["span"] == end and summary["trace_end_wall_ms"] == end


def test_unknown_ownership_is_shown_as_unknown_never_as_zero(tmp_path):
    from shim.trace.analyze.gaps import partition_gaps, rebalance_impact
    from shim.trace.analyze.ownership import fold_ownership
    from shim.trace.analyze.timeline import fold_group
    from testsuite.trace.test_partitions_unit import midlife
    records = midlife().records
    owners, rounds = fold_ownership("m", records)
    tl_rounds, members, changes = fold_group("m", records)
    end = max(r["wall_ms"] for r in records)
    gaps = partition_gaps(owners, end)
    tables = {"rebalances": tl_rounds, "generation_members": members, "changes": changes, "members": [],
              "anomalies": [], "partition_owners": owners, "partition_gaps": gaps,
              "rebalance_impact": rebalance_impact(rounds, gaps), "causes": []}
    write_report(tmp_path, dict(SUMMARY), tables, png=False)
    page = (tmp_path / "report.html").read_text()
    g = blob_of(page)["groups"][0]
    kinds = {(t["name"], row[0]): [k for _, _, k, _, _ in row[2]] for t in g["parts"]["topics"] for row in t["rows"]}
    assert all(k[0] == 2 for k in kinds.values())         # before the first assignment: owner unknown
    six = next(r for r in g["rebs"] if r["label"] == "g6")["text"]
    assert "partitions unavailable: unknown (the owner before it of 6 partition(s) is not in the trace)" in six
    assert "0 partition(s) unavailable" not in six
    impact = page.split("Rebalances: partitions unavailable")[1].split("</table>")[0]
    row6 = next(r for r in impact.split("<tr") if "<td class=\"n\">6</td>" in r.split("</td>")[0] + "</td>")
    assert row6.count(">unknown<") == 4


def test_an_imported_capture_s_losses_head_the_report_and_the_console(tmp_path):
    from shim.trace.analyze.command import summary_lines
    from shim.trace.capture.command import run_import
    from shim.trace.capture.losses import import_losses, read_import_summary
    from shim.trace.capture.packets import ETHERNET
    from testsuite.trace.capture_faults import _read, _write
    from testsuite.trace.test_capture_formats_unit import SPORT, packets, write
    pkts, link = _read(write(tmp_path / "whole.pcap", ETHERNET, pkts=packets(split=400)))
    run_import([_write(tmp_path / "s128.pcap", pkts, link, snaplen=80)], tmp_path / "trace", {SPORT})
    losses = import_losses(read_import_summary(tmp_path / "trace"))
    summary = {**SUMMARY, "import_losses": losses, "data": {"note": "complete files only"}}
    tables = {k: [] for k in ("rebalances", "changes", "members", "anomalies", "generation_members")}
    written = write_report(tmp_path / "report", summary, tables, png=False)
    head = (tmp_path / "report" / "report.html").read_text().split("<h2>Groups</h2>")[0]
    assert "id='import-losses'" in head and "take the capture again with `tcpdump -s 0`" in head
    assert "frames lost (100% of them)" in head
    lines = summary_lines(written)
    assert lines[0].startswith("warning: the import lost data (import-summary.json): the capture's snap length cut")
    assert "groups: none in the trace" in lines
    # a trace kshim wrote itself has no import summary: nothing is said
    assert read_import_summary(tmp_path / "report") is None
