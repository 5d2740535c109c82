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

pytestmark = [pytest.mark.kafka,
              pytest.mark.skipif(not tcpdump.available(), reason="tcpdump not installed (scripts/setup --test)"), pytest.mark.timing]


def _frames(directory) -> dict[tuple, dict]:
    return {(r["peer"], r["dir"], r["corr"], r["api_key"]): r for r in read_trace(directory) if r.get("type") == "frame"}


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
    lo, hi = b["offset_range_ms"]
    assert b["pairs"] >= 3 and 0 <= b["offset_ms"] <= 50 and hi - lo <= 50, b
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


def _cut(src, out, from_wall_ms: int):
    """`src` as a capture started at `from_wall_ms` (every packet before left out)."""
    from testsuite.trace.capture_faults import _read, _write
    packets, link = _read(src)
    return _write(out, [(ts, buf) for ts, buf in packets if ts * 1000 >= from_wall_ms], link)


def _events(directory, group: str) -> list[dict]:
    return sorted((r for r in read_trace(directory) if r.get("type") == "event" and r.get("group") == group),
                  key=lambda r: r["ts_ns"])


def _imported(c, name: str, **kw):
    d = c["dir"] / name
    if not d.exists():
        run_import([kw.pop("pcap", c["pcap"])], d, {c["port"]}, **kw)
    return d


def test_a_capture_started_mid_life_invents_nothing(broker_capture):
    """A capture started once the group was stable (as a person starts one mid-incident): the first
    sight of each group is the state in force. The static member's bounce is a rejoin without a
    rebalance, the killed member's silence is named as the session timeout's suspect, the KIP-848
    group's first epoch seen is no bump; every generation and epoch formed is the one the whole
    capture shows forming after that moment, and nothing is "not in the capture"."""
    c = broker_capture
    full = _events(_imported(c, "clean"), c["group"])
    at = next(m["wall_ms"] for i, m in enumerate(c["marks"])
              if m["step"] == "stable" and c["marks"][i + 1]["step"] == "static_member_closed")
    cut_dir = _imported(c, "mid-life", pcap=_cut(c["pcap"], c["dir"] / "mid-life.pcap", at))
    cut = _events(cut_dir, c["group"])
    kinds = lambda evs, kind: [e for e in evs if e["event"] == kind]  # noqa: E731
    formed_after = [e["body"]["generation"] for e in kinds(full, "generation") if e["wall_ms"] >= at]
    assert [e["body"]["generation"] for e in kinds(cut, "generation")] == formed_after, cut
    started_after = [e["body"]["generation"] for e in kinds(full, "rebalance") if e["wall_ms"] >= at]
    assert [e["body"]["generation"] for e in kinds(cut, "rebalance")] == started_after, kinds(cut, "rebalance")
    static = f"{c['group']}-static-m2"
    assert [e["body"]["instance"] for e in kinds(cut, "static_rejoin_without_rebalance")] == [static]
    killed = [e["member"] for e in kinds(full, "session_timeout") if e["wall_ms"] >= at]
    reason = kinds(cut, "rebalance")[0]["body"]["reason"]
    assert len(killed) == 1 and killed[0] in reason and "session timeout" in reason, (killed, reason)
    assert "its connection closed" in reason, reason
    assert not [e for e in cut if "not in the capture" in (e["body"].get("reason") or "")
                and "session timeout is not" not in e["body"]["reason"]]
    # the KIP-848 group, cut while both members were reconciled
    cg_at = next(m["wall_ms"] for m in c["cg_marks"] if m["step"] == "cg_stable")
    cg_full = [e for e in _events(_imported(c, "clean"), c["cg_group"]) if e["event"] == "group_epoch"]
    cg_cut = [e for e in _events(_imported(c, "cg-mid-life", pcap=_cut(c["pcap"], c["dir"] / "cg-mid-life.pcap",
                                                                       cg_at)), c["cg_group"])
              if e["event"] == "group_epoch"]
    later = [(e["body"]["epoch"], e["body"]["reason"]) for e in cg_full if e["wall_ms"] >= cg_at]
    assert [(e["body"]["epoch"], e["body"]["reason"]) for e in cg_cut] == later and len(later) == 2, (cg_cut, later)
    assert all("left the group" in r for _, r in later), later
    assert [e["body"].get("client_id") for e in cg_cut] == ["cg-a", "cg-b"]


def _shifted(src, out, shift_ms: int):
    """A copy of a broker log with every `[yyyy-mm-dd hh:mm:ss,mmm]` stamp moved by `shift_ms`: the
    broker's clock `shift_ms` ahead of the capturing host's."""
    from datetime import datetime, timedelta
    stamp = re.compile(rb"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")

    def move(m):
        t = datetime.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M:%S,%f") + timedelta(milliseconds=shift_ms)
        return b"[" + t.strftime("%Y-%m-%d %H:%M:%S,%f")[:-3].encode() + b"]"
    out.write_bytes(b"\n".join(stamp.sub(move, line) for line in src.read_bytes().split(b"\n")))
    return out


@pytest.mark.parametrize("shift_ms", [0, 300, -300])
def test_broker_log_aligned_by_cause_and_effect(broker_capture, shift_ms):
    """The broker's log on the capture's host, and as from a broker whose clock is 300 ms ahead or
    behind: the offset found is the true one (-shift) within 10 ms; each of the coordinator's lines
    lands after the frame that caused it and not after the answer that showed it; nothing from outside
    the capture's span; the partition gaps still agree with the consumers' own logs (each gap
    attributed to its rebalance), and a static member's bounce keeps its identity."""
    c = broker_capture
    log = _shifted(c["broker_log"], c["dir"] / f"broker{shift_ms:+d}.log", shift_ms)
    out = c["dir"] / f"log{shift_ms:+d}"
    s = run_import([c["pcap"]], out, {c["port"]}, broker_logs=[log])
    b = s["broker_log"]
    print("broker log:", {k: b[k] for k in ("offset_ms", "offset_range_ms", "pairs", "spread_ms",
                                            "events_in_capture", "events_outside_capture")})
    assert abs(b["offset_ms"] + shift_ms) <= 10 and b["pairs"] >= 6, b
    lo, hi = b["offset_range_ms"]
    assert lo is not None and lo - 1 <= -shift_ms <= hi + 1, b
    recs = list(read_trace(out))
    frames = [r for r in recs if r.get("type") == "frame"]
    first, last = min(r["ts_ns"] for r in frames), max(r["ts_ns"] for r in frames)
    logged = [r for r in recs if r.get("type") == "event" and (r.get("body") or {}).get("source") == "broker_log"]
    assert logged and all(first <= r["ts_ns"] <= last + 1_000_000 for r in logged)
    for group, kind, field in ((c["group"], "generation", "generation"), (c["cg_group"], "group_epoch", "epoch")):
        mine = [r for r in frames if r.get("group") == group]
        for ev in (r for r in logged if r["group"] == group and r["event"] == kind):
            n = ev["body"][field]
            if kind == "generation":
                shown = [r["ts_ns"] for r in mine if r["api_key"] == 11 and r["dir"] == "broker->client"
                         and (r.get("body") or {}).get("generationId") == n]
            else:
                shown = [r["ts_ns"] for r in mine if r["api_key"] == 68 and r["dir"] == "broker->client"
                         and ((r.get("body") or {}).get("memberEpoch") or 0) >= n]
            if shown:
                assert ev["ts_ns"] <= min(shown), (kind, n, ev["ts_ns"], min(shown))
            asked = ev["body"].get("member")
            if kind == "group_epoch" and asked:        # a join's or a leave's bump: after that request
                reqs = [r["ts_ns"] for r in mine if r["api_key"] == 68 and r["dir"] == "client->broker"
                        and (r.get("body") or {}).get("memberId") == asked
                        and (r.get("body") or {}).get("memberEpoch") in (0, -1)]
                if "left" in (ev["body"].get("reason") or ""):
                    assert ev["ts_ns"] > max(reqs), (n, ev["body"]["reason"])
    tables = analysis(recs, c["group"])
    cmp = compare_tables(tables, c["group"], c["logs"], c["marks"], tolerance=100)
    print_comparison(f"imported capture + broker log shifted {shift_ms:+d} ms", cmp, None, c["marks"])
    assert cmp["ok"]
    replaced = [r for r in logged if r["group"] == c["group"] and r["event"] == "static_member_replaced"]
    assert replaced and all(r["body"].get("member") and r["body"].get("instance") for r in replaced), replaced
