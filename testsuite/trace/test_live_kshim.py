"""A running, traced kshim analysed live: a real consumer joins through `kshim run --trace DIR`, and
while kshim still writes its file, `kshim trace analyze` (the Spark pipeline) and `trace show
--follow` read the group's frames and events from the open `.part` file."""

from __future__ import annotations

import io
import time

from shim.trace.analyze.pipeline import analyze
from shim.trace.show import follow
from testsuite.conftest import RUN_DIR, _SPREAD
from shim.compat.pymembers import Member, create_topic, wait_until
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block


def test_analyze_and_follow_a_running_kshim(kafka, names, tmp_path, spark):
    trace_dir = tmp_path / "trace"
    port = free_port_block(5, start=33300 + _SPREAD)
    shim = KshimProcess(kafka.bootstrap, port, RUN_DIR / "kshim" / f"live-{names.group()}.log",
                        ["--trace", str(trace_dir)]).start()
    topic, group = names.topic(), names.group()
    member = None
    try:
        create_topic(shim.bootstrap, topic, partitions=2)
        member = Member("confluent-kafka", shim.bootstrap, topic, group, None).start()
        wait_until(lambda: len(member.current) == 2, 60, "the member assigned")
        assigned = int(time.time() * 1000)
        time.sleep(1.5)                                  # the writer's next flush
        assert [p.name.endswith(".part") for p in trace_dir.iterdir()] == [True]
        summary = analyze(spark, trace_dir, tmp_path / "report", png=False, master="local[2]")
        lines = io.StringIO()
        follow(trace_dir, group=group, api="SyncGroup", out=lines, limit=2)
        assert [p.name.endswith(".part") for p in trace_dir.iterdir()] == [True]   # still being written
    finally:
        if member is not None:
            member.close()
        assert shim.stop() == 0

    data = summary["data"]
    assert data["live"] and [f["state"] for f in data["files"]] == ["live"]
    assert data["note"].startswith("live: includes the file being written trace-") and ".jsonl.gz.part up to " in data["note"]
    assert data["files"][0]["analysed_records"] > 0 and data["until_wall_ms"] >= assigned - 1000
    assert "data: live: includes the file being written trace-" in (tmp_path / "report" / "report.html").read_text()
    (g,) = [g for g in summary["groups"] if g["group"] == group]
    assert g["rebalances"] >= 1                          # the generation the member joined
    sync = lines.getvalue().splitlines()
    assert len(sync) == 2 and " c->k  SyncGroup v" in sync[0] and " k->c  SyncGroup v" in sync[1]
