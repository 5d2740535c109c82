"""`kshim trace import` of a capture taken straight on a real broker's port (no kshim anywhere): Java
cooperative-sticky consumers (one blocks its poll loop past max.poll.interval.ms, one is SIGKILLed).

- The imported capture's analysis (coordinator events inferred from the frames) must agree with the
  consumers' own callback logs, edge by edge within 100 ms (gap_compare.py, as the kshim trace test
  does), and name each rebalance's trigger.
- The same capture damaged as real captures are (capture_faults.py: 1 % of the segments dropped,
  reordered, duplicated, started mid-stream, cut to a 200-byte snap length): the import never fails,
  counts what it lost, and every frame it still decodes is one the undamaged import has (same
  connection, direction, correlation id, API and size): nothing is made up."""

from __future__ import annotations

import re
import subprocess

import pytest

from shim.trace.analyze.report import CHROMIUM_FLAGS, find_chromium
from shim.trace.capture.command import run_import
from shim.trace.show import read_trace
from testsuite.harness import tcpdump
from testsuite.trace.capture_compare import analysis
from testsuite.trace.capture_faults import FAULTS, damaged
from testsuite.trace.gap_compare import compare_tables, print_comparison
from testsuite.trace.rebalance_scenario import run_scenario

pytestmark = [pytest.mark.kafka,
              pytest.mark.skipif(not tcpdump.available(), reason="tcpdump not installed (scripts/setup --test)")]


def _frames(directory) -> dict[tuple, dict]:
    return {(r["peer"], r["dir"], r["corr"], r["api_key"]): r for r in read_trace(directory) if r.get("type") == "frame"}


@pytest.fixture(scope="module")
def broker_capture(kafka, kafka_install, tmp_path_factory):
    """The scenario run straight against the broker while tcpdump captures its port."""
    d = tmp_path_factory.mktemp("broker-capture")
    topic, group_id = "capture-topic", "capture-group"
    port = int(kafka.bootstrap.rsplit(":", 1)[1])
    cap = tcpdump.Capture(d / "broker.pcap", [port]).start()
    try:
        marks, logs = run_scenario(kafka_install, kafka.bootstrap, topic, group_id, d)
    finally:
        cap.stop()
    return {"dir": d, "pcap": d / "broker.pcap", "port": port, "group": group_id, "logs": logs, "marks": marks}


def test_capture_analysis_agrees_with_the_consumers_logs(broker_capture):
    c = broker_capture
    s = run_import([c["pcap"]], c["dir"] / "imported", {c["port"]})
    assert s["lost_frames"] == 0 and s["resyncs"] == 0 and s["inferred_events"] > 0, s
    tables = analysis(list(read_trace(c["dir"] / "imported")), c["group"])
    cmp = compare_tables(tables, c["group"], c["logs"], c["marks"], tolerance=100)
    print_comparison("imported capture", cmp, None, c["marks"])
    assert cmp["ok"], "the capture's analysis and the consumers' logs disagree (table above)"
    kinds = {r["a_kind"] for r in cmp["rows"] if r["judged"]}
    assert {"poll_timeout", "session_timeout"} <= kinds, kinds
    first = {x["kind"] for x in tables["causes"] if x["seq"] == 0}
    assert {"joined", "poll_interval_exceeded", "session_timeout"} <= first, first
    assert all(x["source"] == "inferred" for x in tables["causes"])


@pytest.mark.parametrize("fault", FAULTS)
def test_damaged_capture_decodes_what_is_left(broker_capture, fault):
    c = broker_capture
    clean_dir = c["dir"] / "clean"
    if not clean_dir.exists():
        run_import([c["pcap"]], clean_dir, {c["port"]})
    clean = _frames(clean_dir)
    bad = damaged(c["pcap"], c["dir"] / f"{fault}.pcap", fault)
    s = run_import([bad], c["dir"] / f"imported-{fault}", {c["port"]})
    got = _frames(c["dir"] / f"imported-{fault}")
    made_up = [k for k, r in got.items() if k not in clean or clean[k]["size"] != r["size"]]
    assert not made_up, made_up[:5]
    print(fault, {k: s[k] for k in ("frames", "lost_frames", "resyncs", "gap_bytes", "duplicate_bytes",
                                     "skipped_bytes", "segments_cut_by_snaplen")}, "of", len(clean))
    if fault in ("drop", "snaplen"):
        assert s["lost_frames"] > 0 and s["gap_bytes"] > 0, s
    if fault in ("reorder", "duplicate"):     # held back and put in order / dropped as seen: nothing lost
        assert s["lost_frames"] == 0 and len(got) == len(clean), s
    if fault == "duplicate":
        assert s["duplicate_bytes"] > 0
    share = {"drop": 0.8, "reorder": 1.0, "duplicate": 1.0, "midstream": 0.4, "snaplen": 0.3}[fault]
    assert len(got) >= share * len(clean), (len(got), len(clean))


def test_broker_log_gives_the_coordinators_own_reasons(broker_capture, kafka):
    """The same capture with the broker's server.log: rebalances and generations are the coordinator's
    own (source broker_log, aligned to the capture's clock: the capture ran on the broker's host, so
    the offset is the few ms between its log line and its answers), the analysis still agrees with the
    consumers' logs, and each rebalance's first cause is the broker's reason, classified."""
    c = broker_capture
    log = kafka.node(1).log_file
    s = run_import([c["pcap"]], c["dir"] / "with-log", {c["port"]}, broker_logs=[log])
    b = s["broker_log"]
    print("broker log:", {k: b[k] for k in ("offset_ms", "pairs", "spread_ms", "events_in_capture", "replaced_inferred")})
    assert b["pairs"] >= 3 and 0 <= b["offset_ms"] <= 50 and b["spread_ms"] <= 50, b
    tables = analysis(list(read_trace(c["dir"] / "with-log")), c["group"])
    rounds = [r for r in tables["rebalances"] if r["generation"] is not None]
    assert rounds and all(not (r["reason"] or "").startswith("inferred") for r in rounds), rounds
    cmp = compare_tables(tables, c["group"], c["logs"], c["marks"], tolerance=100)
    print_comparison("imported capture + broker log", cmp, None, c["marks"])
    assert cmp["ok"]
    first = {(x["kind"], x["source"]) for x in tables["causes"] if x["seq"] == 0}
    assert {("joined", "broker_log"), ("poll_interval_exceeded", "broker_log"),
            ("session_timeout", "broker_log")} <= first, first


@pytest.mark.skipif(find_chromium() is None, reason="chromium not installed (scripts/setup --test installs it)")
def test_report_of_an_imported_capture_in_headless_chromium(broker_capture, spark, tmp_path):
    """`kshim trace analyze` (Spark) on the imported capture: the report's PNG is a drawn chart, the
    page's script runs without error, and a rebalance's cause chain opened from the URL says that its
    causes were inferred from the capture."""
    from shim.trace.analyze.pipeline import analyze
    from testsuite.trace.test_analyze_spark import png_pixels
    c = broker_capture
    imported = c["dir"] / "for-report"
    if not imported.exists():
        run_import([c["pcap"]], imported, {c["port"]})
    out = tmp_path / "report"
    summary = analyze(spark, imported, out, master="local[2]")
    assert {g["group"]: g["rebalances"] for g in summary["groups"]}[c["group"]] >= 4
    width, height, rows = png_pixels((out / "report.png").read_bytes())
    pixels = {row[i:i + 3] for row in rows[::3] for i in range(0, len(row), 9)}
    assert width == 1280 and len(pixels) > 20 and bytes((0x44, 0xaa, 0x88)) in pixels   # member bars drawn
    import pyarrow.parquet as pq
    causes = pq.read_table(out / "causes.parquet").to_pylist()
    killed = next(x for x in causes if x["kind"] == "session_timeout" and x["seq"] == 0)
    assert killed["source"] == "inferred"
    url = (out / "report.html").as_uri() + f"#cause={killed['cause_id']}"
    run = subprocess.run([find_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                          "--virtual-time-budget=3000", "--dump-dom", url], capture_output=True, text=True, timeout=90)
    status = re.search(r'<span id="viewer-status"([^>]*)>', run.stdout).group(1)
    assert 'data-errors="0"' in status, status
    detail = re.search(r'<div class="detail" style="display: block;">(.*?)</div>', run.stdout, re.S).group(1)
    assert "session_timeout" in detail and "[inferred]" in detail, detail[:500]
