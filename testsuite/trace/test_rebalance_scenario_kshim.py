"""Issue 21's scenario, lean: 3 Java cooperative-sticky consumers (testsuite/java/RebalanceConsumer.java)
through a traced kshim; one blocks its poll loop past max.poll.interval.ms, one is SIGKILLed. The
Spark analysis's per-partition gaps must agree with the consumers' own callback logs within 100 ms
on every edge both sides know (gap_compare.py; scripts/rebalance-scenario runs the 6-member version
with a static bounce, analysed live and after), and the causes must name the rebalances' triggers
and their members."""

from __future__ import annotations

import pytest

from shim.trace.analyze.pipeline import analyze
from testsuite.conftest import RUN_DIR, _SPREAD
from testsuite.harness.clients import create_topic
from testsuite.harness.javatools import JavaTools
from testsuite.harness.kshimproc import KshimProcess
from testsuite.harness.ports import free_port_block
from testsuite.trace.gap_compare import compare_report, member_names, print_comparison
from testsuite.trace.rebalance_scenario import drive, roles
from testsuite.trace.scenario_members import ScenarioMembers

pytestmark = pytest.mark.kafka


def test_partition_gaps_agree_with_consumer_logs(kafka, kafka_install, names, tmp_path, spark):
    topic, group_id = names.topic(), names.group()
    port = free_port_block(5, start=33300 + _SPREAD)
    shim = KshimProcess(kafka.bootstrap, port, RUN_DIR / "kshim" / f"scenario-{group_id}.log",
                        ["--trace", str(tmp_path / "trace")]).start()
    create_topic(shim.bootstrap, topic, partitions=6)
    tools = JavaTools(kafka_install, shim.bootstrap, tmp_path / "consumers")
    group = ScenarioMembers(tools, topic, group_id, tmp_path / "work")
    try:
        marks = drive(group, 3, 6)
        logs = group.write_logs()
    finally:
        group.stop_all()
        tools.stop_all()
        assert shim.stop() == 0

    analyze(spark, tmp_path / "trace", tmp_path / "report", png=False, master="local[2]")
    cmp = compare_report(tmp_path / "report", group_id, logs, marks, tolerance=100)
    print_comparison("final", cmp, 0, marks)
    assert cmp["ok"], "the analysis and the consumers' logs disagree (table above)"
    kinds = {r["a_kind"] for r in cmp["rows"] if r["judged"]}
    assert {"poll_timeout", "session_timeout"} <= kinds, kinds

    # the causes name the poll timeout and the session timeout, and whose they were
    import pyarrow.parquet as pq
    causes = [c for c in pq.read_table(tmp_path / "report" / "causes.parquet").to_pylist() if c["group"] == group_id]
    who = member_names(logs)
    by_kind = {}
    for c in causes:
        by_kind.setdefault(c["kind"], set()).add(who.get(c["member"]))
    r = roles(3)
    assert r["stall"] in by_kind.get("poll_interval_exceeded", set()), by_kind
    assert r["kill"] in by_kind.get("session_timeout", set()), by_kind
