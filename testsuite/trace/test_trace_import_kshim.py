"""`kshim trace import` of a tcpdump capture of real clients, against kshim's own trace of the same
traffic: Java cooperative-sticky consumers through a traced kshim (one blocks its poll loop past
max.poll.interval.ms, a static member is closed and restarted, one is SIGKILLed), then librdkafka
groups (a second member joins, the first leaves) with the classic protocol and with KIP-848's, while
tcpdump captures kshim's client ports. For each group the capture's analysis (events inferred from
the frames) must give the same generations / epochs, partition owners and gaps (each edge within
20 ms) as kshim's trace (events from kshim's coordinator), and the same first cause per rebalance
where the frames can tell it."""

from __future__ import annotations

import pytest

from shim.compat.pymembers import create_topic
from shim.trace.capture.command import run_import
from shim.trace.show import read_trace
from testsuite.conftest import RUN_DIR, _SPREAD
from testsuite.harness import tcpdump
from shim.compat.javaclient import JavaTools
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block
from testsuite.trace.capture_compare import analysis, compare, first_causes
from testsuite.trace.rebalance_scenario import drive
from testsuite.trace.python_members import join_then_leave
from testsuite.trace.scenario_members import ScenarioMembers

pytestmark = [pytest.mark.kafka,
              pytest.mark.skipif(not tcpdump.available(), reason="tcpdump not installed (scripts/setup --test)"), pytest.mark.timing]


def test_capture_and_trace_give_the_same_analysis(kafka, kafka_install, names, tmp_path):
    topic, group_id = names.topic(), names.group()
    port = free_port_block(5, start=33300 + _SPREAD)
    cap = tcpdump.Capture(tmp_path / "kshim.pcap", list(range(port, port + 5))).start()   # kshim: one port per broker
    shim = KshimProcess(kafka.bootstrap, port, RUN_DIR / "kshim" / f"import-{group_id}.log",
                        ["--trace", str(tmp_path / "trace")]).start()
    create_topic(shim.bootstrap, topic, partitions=6)
    tools = JavaTools(kafka_install, shim.bootstrap, tmp_path / "consumers")
    group = ScenarioMembers(tools, topic, group_id, tmp_path / "work")
    rd_classic, rd_consumer = names.group(), names.group()
    try:
        drive(group, 4, 6)
        rd_topic = names.topic()
        create_topic(shim.bootstrap, rd_topic, partitions=2)
        join_then_leave(shim.bootstrap, rd_topic, rd_classic, consumer_protocol=False)
        join_then_leave(shim.bootstrap, rd_topic, rd_consumer, consumer_protocol=True)
    finally:
        group.stop_all()
        tools.stop_all()
        assert shim.stop() == 0
        cap.stop()
    summary = run_import([tmp_path / "kshim.pcap"], tmp_path / "imported", set(range(port, port + 5)))
    assert summary["kafka_connections"] > 0 and summary["lost_frames"] == 0, summary
    assert summary["resyncs"] == 0 and summary["unmatched_responses"] == 0, summary
    traced, captured = list(read_trace(tmp_path / "trace")), list(read_trace(tmp_path / "imported"))
    for g in (group_id, rd_classic, rd_consumer):
        mine, theirs = analysis(traced, g), analysis(captured, g)
        assert mine["partition_owners"], g
        diffs = compare(mine, theirs, tolerance=20)
        assert not diffs, f"{g}:\n" + "\n".join(diffs)
        c1, c2 = first_causes(mine), first_causes(theirs)
        print(g, "causes: trace", c1, "capture", c2)
        assert c1 == c2, (g, c1, c2)
