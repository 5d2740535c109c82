"""The rebalance scenario of scripts/rebalance-scenario, lean: 3 Java cooperative-sticky consumers (testsuite/java/RebalanceConsumer.java)
through a traced kshim; one blocks its poll loop past max.poll.interval.ms, one is SIGKILLed. The
analysis's per-partition gaps must agree with the consumers' own callback logs within 100 ms on every
edge both sides know (gap_compare.py), and its causes must name the rebalances' triggers and their
members. The trace is folded directly (partitions.fold_partitions, tables_from: what the Spark stage
runs per group; test_analyze_spark.py checks they are equal), which keeps this test to the scenario's
~30 s; scripts/rebalance-scenario runs the 6-member version with a static bounce through `kshim trace
analyze`, live and after kshim stopped."""

from __future__ import annotations

import pytest

from shim.trace.analyze.partitions import fold_partitions, tables_from
from shim.trace.show import read_trace
from testsuite.conftest import RUN_DIR, _SPREAD
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block
from testsuite.trace.gap_compare import compare_tables, print_comparison
from testsuite.trace.rebalance_scenario import run_scenario

pytestmark = [pytest.mark.kafka, pytest.mark.timing]


def test_partition_gaps_agree_with_consumer_logs(kafka, kafka_install, names, tmp_path):
    topic, group_id = names.topic(), names.group()
    port = free_port_block(5, start=33300 + _SPREAD)
    shim = KshimProcess(kafka.bootstrap, port, RUN_DIR / "kshim" / f"scenario-{group_id}.log",
                        ["--trace", str(tmp_path / "trace")]).start()
    try:
        marks, logs = run_scenario(kafka_install, shim.bootstrap, topic, group_id, tmp_path)
    finally:
        assert shim.stop() == 0

    recs = list(read_trace(tmp_path / "trace"))
    closes = {r["conn"]: r["wall_ms"] for r in recs if r.get("type") == "conn_close"}
    tables = tables_from(fold_partitions(group_id, [r for r in recs if r.get("group") == group_id], closes=closes),
                         max(r["wall_ms"] for r in recs if r.get("wall_ms") is not None))
    cmp = compare_tables(tables, group_id, logs, marks, tolerance=100)
    print_comparison("folded", cmp, None, marks)
    assert cmp["ok"], "the analysis and the consumers' logs disagree (table above)"
    kinds = {r["a_kind"] for r in cmp["rows"] if r["judged"]}
    assert {"poll_timeout", "session_timeout"} <= kinds, kinds
    assert [line.endswith("ok") for line in cmp["events"]] == [True, True], cmp["events"]
