"""`kshim trace import` of a tcpdump capture of real clients, against kshim's own trace of the same
traffic: Java cooperative-sticky consumers through a traced kshim (one blocks its poll loop past
max.poll.interval.ms, a static member is closed and restarted, one is SIGKILLed) while tcpdump
captures kshim's client port. The capture's analysis (events inferred from the frames) must give
the same generations, partition owners and gaps (each edge within 20 ms) as kshim's trace (events
from kshim's coordinator), and the same first cause per rebalance where the frames can tell it."""

from __future__ import annotations

import pytest

from shim.trace.capture.command import run_import
from shim.trace.show import read_trace
from testsuite.conftest import RUN_DIR, _SPREAD
from testsuite.harness import tcpdump
from testsuite.harness.clients import create_topic
from testsuite.harness.javatools import JavaTools
from testsuite.harness.kshimproc import KshimProcess
from testsuite.harness.ports import free_port_block
from testsuite.trace.capture_compare import analysis, compare, first_causes
from testsuite.trace.rebalance_scenario import drive
from testsuite.trace.scenario_members import ScenarioMembers

pytestmark = [pytest.mark.kafka,
              pytest.mark.skipif(not tcpdump.available(), reason="tcpdump not installed (scripts/setup --test)")]


def test_capture_and_trace_give_the_same_analysis(kafka, kafka_install, names, tmp_path):
    topic, group_id = names.topic(), names.group()
    port = free_port_block(5, start=33300 + _SPREAD)
    cap = tcpdump.Capture(tmp_path / "kshim.pcap", list(range(port, port + 5))).start()   # kshim: one port per broker
    shim = KshimProcess(kafka.bootstrap, port, RUN_DIR / "kshim" / f"import-{group_id}.log",
                        ["--trace", str(tmp_path / "trace")]).start()
    create_topic(shim.bootstrap, topic, partitions=6)
    tools = JavaTools(kafka_install, shim.bootstrap, tmp_path / "consumers")
    group = ScenarioMembers(tools, topic, group_id, tmp_path / "work")
    try:
        drive(group, 4, 6)
    finally:
        group.stop_all()
        tools.stop_all()
        assert shim.stop() == 0
        cap.stop()
    summary = run_import([tmp_path / "kshim.pcap"], tmp_path / "imported", set(range(port, port + 5)))
    assert summary["kafka_connections"] > 0 and summary["lost_frames"] == 0, summary
    assert summary["resyncs"] == 0 and summary["unmatched_responses"] == 0, summary
    mine = analysis(list(read_trace(tmp_path / "trace")), group_id)
    theirs = analysis(list(read_trace(tmp_path / "imported")), group_id)
    diffs = compare(mine, theirs, tolerance=20)
    assert not diffs, "\n".join(diffs)
    c1, c2 = first_causes(mine), first_causes(theirs)
    print("causes: trace", c1, "capture", c2)
    same = {g for g in c1 if c1[g] == c2.get(g)}
    assert len(same) >= len(c1) - 1, (c1, c2)     # the listed difference: see docs/kshim-trace-import.md
