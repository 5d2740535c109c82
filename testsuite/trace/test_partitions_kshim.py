"""The per-partition analysis on a real trace: two Kafka Java consumers (cooperative-sticky, KIP-429)
through a traced kshim against the real broker; member 1 joins (a cooperative rebalance: member 0
keeps two partitions throughout and hands two over) and then leaves (closed: LeaveGroup "the consumer
is being closed"). The trace is folded directly (partitions.fold_partitions; the Spark path equals it,
test_analyze_spark.py) and compared with the consumers' own partitions_assigned / partitions_revoked
events (VerifiableConsumer stamps each with its wall clock): every ownership start and end within
100 ms of the consumer's callback."""

from __future__ import annotations

import time

import pytest

from shim.compat.pymembers import create_topic
from shim.trace.analyze.partitions import fold_partitions, tables_from
from shim.trace.show import read_trace
from testsuite.conftest import RUN_DIR, _SPREAD
from testsuite.groups.scenarios import _balanced, _wait
from shim.compat.javaclient import JavaTools
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block

pytestmark = pytest.mark.timing   # compares wall-clock measurements: runs alone (scripts/test)

COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
TOLERANCE_MS = 100


def callbacks(consumer, name: str) -> list[tuple[int, set[int]]]:
    return [(e["timestamp"], {p["partition"] for p in e["partitions"]}) for e in consumer.named(name)
            if e["partitions"]]


@pytest.mark.kafka
def test_cooperative_join_and_leave_gaps_and_causes_match_the_consumers(kafka, kafka_install, names, tmp_path):
    trace_dir = tmp_path / "trace"
    port = free_port_block(5, start=29150 + _SPREAD)
    shim = KshimProcess(kafka.bootstrap, port, RUN_DIR / "kshim" / f"partitions-{names.group()}.log",
                        ["--trace", str(trace_dir)]).start()
    tools = JavaTools(kafka_install, shim.bootstrap, tmp_path / "java")
    topic, group = names.topic(), names.group()
    try:
        create_topic(shim.bootstrap, topic, partitions=4)
        a = tools.verifiable_consumer(topic, group, assignor=COOPERATIVE, name=f"{group}-0")
        _wait(lambda: len(a.assigned()) == 4, 60, "member 0 owning all 4 partitions")
        b = tools.verifiable_consumer(topic, group, assignor=COOPERATIVE, name=f"{group}-1")
        _wait(lambda: _balanced([a, b], 4), 60, "a balanced group")
        kept, moved = {p for _, p in a.assigned()}, {p for _, p in b.assigned()}
        time.sleep(1)
        b.stop()
        _wait(lambda: len(a.assigned()) == 4, 60, "member 0 owning all 4 partitions again")
        time.sleep(0.5)
    finally:
        tools.stop_all()
        assert shim.stop() == 0

    everything = list(read_trace(trace_dir))
    recs = [r for r in everything if r.get("group") == group]
    closes = {r["conn"]: r["wall_ms"] for r in everything if r.get("type") == "conn_close"}
    t = tables_from(fold_partitions(group, recs, closes=closes), max(r["wall_ms"] for r in recs))
    owners = t["partition_owners"]
    assert {s["protocol"] for s in owners} == {"cooperative"}

    # the consumers' callbacks, one owner segment each, within 100 ms; one member id per consumer
    for consumer in (a, b):
        ids = set()
        for ts, parts in callbacks(consumer, "partitions_assigned"):
            for p in parts:
                (seg,) = [s for s in owners if s["partition"] == p and abs(s["from_wall_ms"] - ts) <= TOLERANCE_MS]
                ids.add(seg["member"])
        for ts, parts in callbacks(consumer, "partitions_revoked"):
            for p in parts:
                (seg,) = [s for s in owners if s["partition"] == p and s["to_wall_ms"] is not None
                          and abs(s["to_wall_ms"] - ts) <= TOLERANCE_MS]
                ids.add(seg["member"])
        assert len(ids) == 1, (consumer.name, ids)
        consumer.member = ids.pop()

    # member 0 kept two partitions through both rebalances: one segment each, never a gap
    for p in kept:
        (seg,) = [s for s in owners if s["partition"] == p and s["member"] == a.member]
        assert seg["end_kind"] in ("trace_end", "left")
    gaps = [g for g in t["partition_gaps"] if not g["initial"] and g["to_wall_ms"] is not None]
    assert {g["partition"] for g in gaps} == moved          # only the moved ones were ever unowned
    # the join: member 0 revoked the moved partitions at its SyncGroup answer, member 1 got them a
    # rebalance later (KIP-429's second round)
    handover = [g for g in gaps if g["previous_member"] == a.member]
    assert {(g["partition"], g["previous_end_kind"], g["next_member"]) for g in handover} == \
        {(p, "revoked", b.member) for p in moved}
    (revoked_at, _), = callbacks(a, "partitions_revoked")[:1]
    assigned_b = callbacks(b, "partitions_assigned")[0][0]
    for g in handover:
        assert abs(g["duration_ms"] - (assigned_b - revoked_at)) <= 2 * TOLERANCE_MS
    impact = {r["generation"]: r for r in t["rebalance_impact"]}
    assert impact[handover[0]["generation"]]["protocol"] == "cooperative"
    assert impact[handover[0]["generation"]]["partitions_unavailable"] == len(moved)

    # the leave: its cause names member 1, its KIP-800 reason and the LeaveGroup frame behind it
    leave = [g for g in gaps if g["previous_member"] == b.member]
    assert {(g["partition"], g["previous_end_kind"], g["next_member"]) for g in leave} == \
        {(p, "left", a.member) for p in moved}
    (cause,) = [c for c in t["causes"] if c["cause_id"] == leave[0]["cause_id"]]
    assert (cause["kind"], cause["member"], cause["reason"]) == ("left", b.member, "the consumer is being closed")
    (frame,) = [r for r in recs if (r.get("conn"), r.get("corr"), r.get("ts_ns")) == (cause["conn"], cause["corr"],
                                                                                      cause["ts_ns"])]
    assert frame["api"] == "LeaveGroup" and frame["dir"] == "client->kshim"
    joined = [c for c in t["causes"] if c["kind"] == "joined" and c["member"] == b.member]
    assert len(joined) == 1 and joined[0]["cause_id"] == handover[0]["cause_id"]
