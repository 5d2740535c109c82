"""Reading the trace of a running kshim (shim/trace/live.py): the readable prefix of a `.part` file
cut anywhere, the snapshot Spark reads, a rename between listing and reading, and `trace show
--follow` on files the real sink is writing and rotating."""

from __future__ import annotations

import gzip
import io
import json
import os
import threading
import time

from shim.trace.analyze.inputs import clock, collect_inputs
from shim.trace.live import GzipLines, snapshot_part
from shim.trace.show import follow
from shim.trace.sink import JsonLinesSink


def recs(n: int, group: str = "g", start: int = 0, pad: int = 40) -> list[dict]:
    return [{"type": "frame", "wall_ms": 1_700_000_000_000 + i, "api": "Heartbeat", "dir": "client->kshim",
             "group": group, "i": i, "pad": os.urandom(pad).hex()} for i in range(start, start + n)]


def open_part(tmp_path, batches: list[list[dict]], seq: int = 0) -> tuple[JsonLinesSink, bytes]:
    """A sink with every batch written and flushed, still open; and the .part bytes at that point."""
    sink = JsonLinesSink(tmp_path, rotate_bytes=1 << 30)
    sink.seq = seq         # file names: trace-<second>-<pid>-<seq + 1>
    for b in batches:
        sink.write(b)
        sink.flush()
    part = sink.path.with_name(sink.path.name + ".part")
    return sink, part.read_bytes()


def test_every_cut_of_a_gzip_stream_reads_a_prefix_of_whole_records(tmp_path):
    written = recs(300)
    sink, data = open_part(tmp_path / "w", [written[i:i + 30] for i in range(0, 300, 30)])
    sink.close()
    full = (tmp_path / "w").glob("*.jsonl.gz").__next__().read_bytes()
    seen = set()
    for cut in list(range(0, len(full), 97)) + [len(data), len(full) - 3, len(full)]:
        f = tmp_path / "cut.jsonl.gz"
        f.write_bytes(full[:cut])
        r = GzipLines(f)
        got = [x["i"] for x in r.records()]
        assert got == list(range(len(got))), cut          # a prefix, in order, whole records only
        assert r.error is None and r.done == (cut == len(full))
        seen.add(len(got))
    assert 300 in seen and len(seen) > 5
    # at the flush points the whole of every flushed batch is readable
    f.write_bytes(data)
    assert [x["i"] for x in GzipLines(f).records()] == list(range(300))


def test_a_partial_last_line_waits_for_the_rest_and_damage_ends_the_data(tmp_path):
    buf = io.BytesIO()
    gz = gzip.GzipFile(fileobj=buf, mode="wb")
    gz.write(b'{"i":0}\n{"i":1}\n{"i":')
    gz.flush()
    f = tmp_path / "t.jsonl.gz.part"
    f.write_bytes(buf.getvalue())
    r = GzipLines(f)
    assert [x["i"] for x in r.records()] == [0, 1]
    gz.write(b'2}\n')
    gz.close()
    with open(f, "ab") as out:
        out.write(buf.getvalue()[len(f.read_bytes()):])
    assert [x["i"] for x in r.records()] == [2] and r.done         # continued where it stopped
    # garbage after the flushed prefix: the prefix, then a clean stop
    sink, data = open_part(tmp_path / "d", [recs(20)])
    part = sink.path.with_name(sink.path.name + ".part")
    part.write_bytes(data + b"\xff" * 64)
    snap = snapshot_part(part, tmp_path)
    assert snap.records == 20 and snap.last_wall_ms == 1_700_000_000_019 and not snap.complete
    assert [json.loads(x)["i"] for x in snap.path.read_bytes().splitlines()] == list(range(20))


def test_a_part_renamed_between_listing_and_reading_is_read_whole(tmp_path):
    d = tmp_path / "trace"
    sink, _ = open_part(d, [recs(50)])
    part = sink.path.with_name(sink.path.name + ".part")
    sink.write(recs(10, start=50))
    sink.close()                                   # renamed after the "listing" (we kept the .part name)
    snap = snapshot_part(part, tmp_path)
    assert snap.complete and snap.records == 60 and snap.source == sink.files[0]
    # a listing that saw both names counts the complete file once
    (d / part.name).write_bytes(b"")
    inputs = collect_inputs(d)
    assert [f["state"] for f in inputs.files] == ["complete"] and inputs.jsonl == [str(sink.files[0])]
    assert not inputs.live and inputs.note() == "complete files only"        # how far: not counted yet
    inputs.add_stats({sink.files[0].name: (60, 1_700_000_000_123)})
    assert inputs.note() == f"complete files only, data up to {clock(1_700_000_000_123)} UTC"


def test_collect_inputs_snapshots_the_open_file_and_says_how_far(tmp_path):
    d = tmp_path / "trace"
    done = JsonLinesSink(d, rotate_bytes=1 << 30)
    done.write(recs(5))
    done.close()
    sink, _ = open_part(d, [recs(7, start=5)], seq=1)
    (d / "trace-20260101T000000-9-00001.parquet.part").write_bytes(b"PAR1")
    inputs = collect_inputs(d)
    try:
        assert [f["state"] for f in inputs.files] == ["complete", "live"]
        snap = inputs.jsonl[1]
        assert sum(1 for _ in open(snap)) == 7 and inputs.name_of("file://" + snap) == sink.path.name
        note = inputs.note()
        assert note.startswith(f"live: includes the file being written {sink.path.name}.part up to ") and "(7 records)" in note
        assert "left out: trace-20260101T000000-9-00001.parquet.part (open Parquet file" in note
    finally:
        inputs.close()
        sink.close()
    assert not os.path.exists(snap)
    assert [f["state"] for f in collect_inputs(d, live=False).files] == ["complete", "complete"]


def test_follow_prints_records_as_written_across_rotations(tmp_path):
    d = tmp_path / "trace"
    sink = JsonLinesSink(d, rotate_bytes=64 * 1024)
    sink.write(recs(10))                 # before following starts
    sink.flush()
    out, stop = io.StringIO(), threading.Event()
    t = threading.Thread(target=follow, args=(d,), kwargs=dict(group="g", as_json=True, out=out, interval=0.05,
                                                                 stop=stop))
    t.start()
    seen_while_open = None
    for i in range(10, 1010, 50):        # ~200 KB compressed in all: several rotations
        sink.write(recs(50, start=i, pad=150) + recs(5, group="other", start=10_000 + i))
        sink.flush()
        time.sleep(0.02)
        if i == 510:
            time.sleep(0.3)
            seen_while_open = len(out.getvalue().splitlines())
    sink.write([{"type": "trace_stop", "wall_ms": 1, "info": {"records": 1, "dropped": 0}}])
    sink.close()
    time.sleep(0.3)
    stop.set()
    t.join(5)
    got = [json.loads(x)["i"] for x in out.getvalue().splitlines()]
    assert len(sink.files) >= 3
    assert got == list(range(1010))                                # every matching record once, in order
    assert 10 < seen_while_open < 1010                             # printed while being written
    text = io.StringIO()
    follow(d, api="Heartbeat", out=text, limit=3)                  # --limit ends a follow
    assert len(text.getvalue().splitlines()) == 3


def test_follow_new_skips_what_is_written_and_notes_trace_stop(tmp_path):
    d = tmp_path / "trace"
    sink = JsonLinesSink(d, rotate_bytes=1 << 30)
    sink.write(recs(10))
    sink.flush()
    out, stop = io.StringIO(), threading.Event()
    t = threading.Thread(target=follow, args=(d,), kwargs=dict(out=out, interval=0.05, stop=stop, new_only=True))
    t.start()
    time.sleep(0.3)
    sink.write(recs(3, start=10) + [{"type": "trace_stop", "wall_ms": 1_700_000_000_020,
                                     "info": {"records": 14, "dropped": 0}}])
    sink.close()
    time.sleep(0.3)
    stop.set()
    t.join(5)
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and "trace_stop: kshim stopped writing" in lines[3] and "(14 records, 0 dropped)" in lines[3]


def test_analyze_reads_the_open_file_up_to_its_last_record(spark, tmp_path):
    """A scenario's file cut like a running kshim's `.part` (gzip trailer and the last bytes missing,
    so never a complete gzip file): every record in it analysed, and the note says live."""
    from shim.trace.analyze.pipeline import analyze
    from testsuite.trace.tracebuild import scenario
    done, live = tmp_path / "done", tmp_path / "live"
    scenario().write(done, "jsonl")
    (f,) = done.glob("trace-*.jsonl.gz")
    live.mkdir()
    (live / (f.name + ".part")).write_bytes(f.read_bytes()[:-8])
    records = scenario().records
    b = analyze(spark, live, tmp_path / "b", png=False)
    assert {g["group"]: g["rebalances"] for g in b["groups"]} == {"g": 3}     # as from the complete file
    assert b["group_records"] == sum(1 for r in records if r.get("group")) and b["data"]["live"]
    last = max(r["wall_ms"] for r in records)
    assert b["data"]["until_wall_ms"] == last and b["data"]["files"][0]["state"] == "live"
    assert b["data"]["note"] == (f"live: includes the file being written {f.name}.part up to "
                                 f"{clock(last)} UTC ({len(records)} records)")


def test_spark_progress_lines_name_busy_stages_and_count_waiting_ones():
    from types import SimpleNamespace as NS

    from shim.trace.analyze.session import _spark_line
    stages = {3: NS(numActiveTasks=2, numCompletedTasks=1, numTasks=5),
              4: NS(numActiveTasks=0, numCompletedTasks=0, numTasks=5),
              5: NS(numActiveTasks=0, numCompletedTasks=0, numTasks=1)}
    tracker = NS(getActiveStageIds=lambda: list(stages), getStageInfo=stages.get)
    seen = {3: time.monotonic() - 4.5}
    assert _spark_line(tracker, seen) == "stage 3 tasks 1/5 (2 running, 4 s); 2 stage(s) waiting"
    del stages[3]
    assert _spark_line(tracker, seen) == ""        # only waiting stages: nothing new to say


def test_a_parquet_file_is_closed_once_old_enough(tmp_path, monkeypatch):
    import pytest
    pytest.importorskip("pyarrow")
    from shim.trace import sink as S
    s = S.ParquetSink(tmp_path, rotate_bytes=1 << 30)
    s.write(recs(3))
    assert s.is_open and [p.name.endswith(".parquet.part") for p in tmp_path.iterdir()] == [True]
    monkeypatch.setattr(S, "PARQUET_MAX_AGE_S", 0)
    s.flush()                                     # the writer thread's idle flush: old enough, closed
    assert not s.is_open and [p.name.endswith(".parquet") for p in tmp_path.iterdir()] == [True]
    s.write(recs(2, start=3))                     # the next write: a new file, closed as soon as written
    assert not s.is_open and len(s.files) == 2
