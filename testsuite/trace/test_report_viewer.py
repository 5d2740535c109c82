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
