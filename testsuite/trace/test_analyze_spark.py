"""`kshim trace analyze` on Spark (local[2]): hand-built traces (testsuite/trace/tracebuild.py) in
both file formats, the stages' results, and the HTML report opened in Debian's headless chromium
(a screenshot decoded and checked pixel by pixel, and the rendered DOM)."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import zlib

import pytest

from shim.trace.analyze.load import group_records, load
from shim.trace.analyze.members import member_stats
from shim.trace.analyze.partition_tables import TABLES
from shim.trace.analyze.partitions import fold_partitions, partition_analysis, tables_from
from shim.trace.analyze.pipeline import analyze
from shim.trace.analyze.rebalances import timelines
from shim.trace.analyze.timeline import fold_group
from testsuite.trace.test_partitions_unit import TID, kip848
from testsuite.trace.tracebuild import scenario

CHROMIUM = shutil.which("chromium")


@pytest.fixture(scope="module")
def two_formats(tmp_path_factory):
    """Group g in gzip JSON lines, the same scenario as group p in Parquet, in one directory."""
    d = tmp_path_factory.mktemp("trace")
    scenario().write(d, "jsonl")
    pytest.importorskip("pyarrow")
    parquet = scenario()
    for r in parquet.records:
        r["group"] = "p" if r.get("group") == "g" else r.get("group")
        if isinstance(r.get("body"), dict) and r["body"].get("groupId") == "g":
            r["body"]["groupId"] = "p"
        if r.get("type") == "event":
            r["body"]["group"] = "p"
    parquet.write(d, "parquet")
    return d


def test_load_reads_both_formats_into_one_schema(spark, two_formats):
    df = load(spark, two_formats)
    n = len(scenario().records)
    assert len(list(two_formats.glob("trace-*.jsonl.gz"))) == len(list(two_formats.glob("trace-*.parquet"))) == 1
    assert df.count() == 2 * n
    rows = {r["group"]: r["count"] for r in group_records(df).groupBy("group").count().collect()}
    assert rows == {"g": n, "p": n}
    body = group_records(df, "p").where("api_key = 11 and dir = 'kshim->client' and corr = 2").first()["body"]
    assert json.loads(body)["members"] == [{"memberId": "A-1", "groupInstanceId": None, "metadata": "AAE="}]


def test_timelines_on_spark_equal_the_fold(spark, two_formats):
    tl = timelines(load(spark, two_formats))
    direct, members, changes = fold_group("g", scenario().records)
    for group in ("g", "p"):
        rounds = [r for r in tl["rounds"] if r["group"] == group]
        assert [{k: v for k, v in r.items() if k != "group"} for r in rounds] == \
               [{k: v for k, v in r.items() if k != "group"} for r in direct]
        assert len([m for m in tl["members"] if m["group"] == group]) == len(members)
        assert [c["kind"] for c in tl["changes"] if c["group"] == group] == [c["kind"] for c in changes]
    assert [r["join_to_sync_ms"] for r in tl["rounds"] if r["group"] == "p"] == [3011.0, 703.0, 101.0]


def test_member_heartbeat_gaps_and_commit_cadence(spark, two_formats):
    rows = {r["member"]: r.asDict() for r in member_stats(load(spark, two_formats), "g").collect()}
    assert set(rows) == {"A-1", "B-1", "B-2"}
    a, b2 = rows["A-1"], rows["B-2"]
    # A-1 heartbeats at 4000, 7000, 10000, 12500, 15100, 22000
    assert (a["heartbeats"], a["heartbeat_gap_max_ms"], a["heartbeat_gap_avg_ms"]) == (6, 6900.0, 3600.0)
    assert a["session_timeout_ms"] == 10000 and a["rebalance_timeout_ms"] == 30000
    assert a["heartbeat_gap_max_over_session"] == 0.69 and a["silences_over_session_timeout"] == 0
    assert a["commits"] == 0
    # B-2: heartbeats 30500, 33000, 36000, 48000; commits 33500, 35500; silent 20101 -> 30500 (after its
    # SyncGroup answer) and 36001 -> 48000: both over the 10 s session timeout
    assert (b2["heartbeats"], b2["heartbeat_gap_max_ms"]) == (4, 12000.0)
    assert (b2["commits"], b2["commit_interval_avg_ms"], b2["commit_interval_max_ms"]) == (2, 2000.0, 2000.0)
    assert b2["silence_max_ms"] == 11999.0 and b2["silences_over_session_timeout"] == 2
    assert b2["instance"] == "b"


def test_partition_tables_on_spark_equal_the_folds(spark, tmp_path):
    """A classic group (g) and a KIP-848 group (k) in one trace: the five tables from Spark are the
    direct folds' (Heartbeats reach the folds as bodiless requests, topic ids named by the driver)."""
    tr = scenario()
    tr.records += kip848().records
    tr.write(tmp_path / "trace")
    names = {TID: "orders"}
    df = load(spark, tmp_path / "trace")
    got = partition_analysis(df, names, with_timelines=True)
    assert got.pop("timelines") == timelines(df)      # folded in the same pass, for the pipeline
    folds = [fold_partitions(g, [r for r in tr.records if r.get("group") == g], names) for g in ("g", "k")]
    direct = tables_from({k: folds[0][k] + folds[1][k] for k in folds[0]}, max(r["wall_ms"] for r in tr.records))
    assert set(got) == set(TABLES)
    for name in TABLES:
        assert got[name] == direct[name], name
    assert {(r["group"], r["generation"], r["partitions_unavailable"]) for r in got["rebalance_impact"]} == {
        ("g", 1, 0), ("g", 2, 4), ("g", 3, 4), ("k", 1, 0), ("k", 2, 2), ("k", 3, 2)}
    assert {r["topic"] for r in got["partition_owners"] if r["group"] == "k"} == {"orders"}


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB/RGBA PNG: the filters undone."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack_from(">I4s", data, pos)
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack_from(">IIBB", chunk)
            assert depth == 8 and color in (2, 6)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line if bpp == 3 else b"".join(line[i:i + 3] for i in range(0, stride, 4))))
        prev = line
    return width, height, rows


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (scripts/setup --test installs it)")
def test_report_in_headless_chromium(spark, two_formats, tmp_path):
    out = tmp_path / "report"
    summary = analyze(spark, two_formats, out, master="local[2]")
    for table in ("rebalances", "generation_members", "changes", "members", "anomalies", *TABLES):
        assert (out / f"{table}.parquet").stat().st_size > 0
    assert {g["group"]: g["rebalances"] for g in summary["groups"]} == {"g": 3, "p": 3}
    import pyarrow.parquet as pq
    kinds = sorted((a["kind"], a["subject"]) for a in pq.read_table(out / "anomalies.parquet").to_pylist()
                   if a["group"] == "g")
    assert kinds == [("session_gap", "b"), ("slow_revocation", "A-1"), ("static_new_member_id", "b")]

    # the PNG export made by the pipeline: 1280 px wide, with the chart's colours in it
    assert summary["png"] is True
    width, height, rows = png_pixels((out / "report.png").read_bytes())
    assert width == 1280 and height >= 1000
    pixels = {row[i:i + 3] for row in rows[::3] for i in range(0, len(row), 9)}
    assert len(pixels) > 20                                # not a blank page
    assert bytes((0xe8, 0xf0, 0xfb)) in pixels or bytes((0xf6, 0xf9, 0xfe)) in pixels   # generation bands
    assert bytes((0x22, 0x88, 0x66)) in pixels             # a leader's member bar

    # the page as chromium rendered it: one section per group, one lane per member identity
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          f"--user-data-dir={tmp_path / 'profile'}", (out / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=90).stdout
    assert sorted(re.findall(r'<section class="group" id="group-(\w+)"', dom)) == ["g", "p"]
    assert dom.count('<g class="lane"') == 4
    assert dom.count('class="gen-band') == 6
    assert re.findall(r'data-member="([^"]+)"', dom) == ["A-1", "b", "A-1", "b"]


def test_cli_end_to_end(two_formats, tmp_path):
    pytest.importorskip("pyspark")
    out = subprocess.run([sys.executable, "-m", "shim.cli", "trace", "analyze", str(two_formats), "--out",
                          str(tmp_path / "r"), "--master", "local[1]", "--group", "g", "--no-png",
                          "--shuffle-partitions", "1"], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "g: 3 rebalance(s), 1 static rejoin(s) without rebalance, 3 anomaly flag(s)" in out.stdout
    # t-0, t-1: 101 + 701 ms (A-1 rejoining, A-1 leaving); t-2, t-3: 103 + 101 + 101 ms (to B-1, the
    # static bounce, B-2 rejoining)
    assert (f"g partitions: 10 gap(s) in 4 partition(s), {2 * 802 + 2 * 305} partition-ms unavailable, "
            "longest 701 ms") in out.stdout
    for stage in ("load: 1 JSON lines file(s), 1 Parquet file(s)", "rebalances: per-group timelines",
                  "members:", "report:", "done in"):
        assert stage in out.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert [g["group"] for g in summary["groups"]] == ["g"] and summary["group_filter"] == "g"
    assert [(g["group"], g["partitions"], g["gaps"], g["causes"]) for g in summary["partition_groups"]] == \
        [("g", 4, 10, ["joined", "left", "static_replaced"])]
    assert not (tmp_path / "r" / "report.png").exists()
