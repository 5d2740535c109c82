"""Partition leadership moves on the 3-node cluster during a consume-and-commit workload through kshim
(the broker-side counterpart of a leader change: a replicated `__consumer_offsets` whose leader moves).

kshim of this test's own (its own state topic, so it can be killed and replayed at the end) sits in
front of the session's 3-node cluster; a Java producer and two Java consumers of one group produce,
consume and commit through it. Leadership moves twice, for the group's state-topic partition and for
the data topic: (1) the node leading the group's state partition is SIGKILLed (its leaderships fail
over when the controller fences it) and started again; (2) with every node up, the replicas are
reordered (AlterPartitionReassignments) to put that node first and a preferred-leader election moves
leadership back to it. Checked: kshim's state topic is RF 3 / min.insync.replicas 2; every offset
kshim acknowledged is in the state topic (read back directly); every record is consumed (duplicates
counted); both consumers commit again after each change; the final commit covers every record and a
kshim restarted on the same state topic replays it. The figures are printed (pytest -s)."""

from __future__ import annotations

import os
import time

from kcodec import api
from kcodec.generated.alter_partition_reassignments import ReassignablePartition, ReassignableTopic
from kcodec.generated.elect_leaders import TopicPartitions as ElectPartitions
from shim.compat.pymembers import create_topic
from shim.coordinator.state_records import OffsetRecord
from shim.state import format as fmt
from testsuite.conftest import RUN_DIR
from testsuite.groups.test_consumer_protocol_java import _consumed_ranges, _duplicates_and_gaps
from shim.compat.javaclient import JavaTools
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block
from shim.compat.wire import Wire
from testsuite.hardening.test_broker_restart import committed_through

PARTITIONS = 3                 # committed_through reads partitions 0-2
STATE_PARTITIONS = 4           # kshim's default state_topic_partitions
ALTER_REASSIGNMENTS, ELECT_LEADERS = 45, 43


def _admin(kafka3):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": kafka3.bootstrap})


def _partitions(admin, topic: str) -> dict[int, object]:
    """partition -> PartitionMetadata (leader, replicas, isrs), from a live broker."""
    md = admin.list_topics(topic=topic, timeout=10)
    return dict(md.topics[topic].partitions)


def _wait(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.2)


def _commits(consumers) -> list[tuple[int, bool, list[tuple[str, int, int]], str]]:
    """Every offsets_committed event of the group: (timestamp ms, success, offsets, error)."""
    out = []
    for c in consumers:
        for e in c.named("offsets_committed"):
            out.append((e["timestamp"], bool(e.get("success")),
                        [(o["topic"], o["partition"], o["offset"]) for o in e.get("offsets", [])],
                        e.get("error") or ""))
    return sorted(out, key=lambda c: c[0])


def _group_committed(consumers) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for _, ok, offsets, _ in _commits(consumers):
        for t, p, o in offsets if ok else ():
            out[(t, p)] = max(out.get((t, p), 0), o)
    return out


def _longest_gap(stamps: list[int], start: int, end: int) -> int:
    """Longest time (ms) without an event in [start, end], the edges counting as events."""
    points = [start] + sorted(s for s in stamps if start < s < end) + [end]
    return max(b - a for a, b in zip(points, points[1:]))


def _window(consumers, producer, start: int, end: int) -> dict:
    commits = [c for c in _commits(consumers) if start <= c[0] <= end]
    consumed = [e["timestamp"] for c in consumers for e in c.named("records_consumed")]
    sent = [e["timestamp"] for e in producer.named("producer_send_success")]
    failed = [c[3] for c in commits if not c[1]]
    return {"window_ms": end - start, "commits_acked": len(commits) - len(failed), "commits_failed": len(failed),
            "commit_errors": sorted(set(failed)),
            "commit_stall_ms": _longest_gap([c[0] for c in commits if c[1]], start, end),
            "consume_stall_ms": _longest_gap(consumed, start, end),
            "produce_stall_ms": _longest_gap(sent, start, end)}


def _state_offsets(bootstrap: str, state_topic: str, partition: int, group: str) -> set[tuple[str, int, int]]:
    """Every offset record of `group` in the state topic partition, read directly from the cluster."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "leader-change-reader", "enable.auto.commit": False,
                  "isolation.level": "read_uncommitted"})
    try:
        _, high = c.get_watermark_offsets(TopicPartition(state_topic, partition), timeout=10)
        c.assign([TopicPartition(state_topic, partition, 0)])
        out, pos, deadline = set(), 0, time.monotonic() + 60
        while pos < high:
            assert time.monotonic() < deadline, f"state topic read stuck at {pos} of {high}"
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            pos = m.offset() + 1
            rec = fmt.decode(m.key(), m.value())
            if isinstance(rec, OffsetRecord) and rec.group_id == group:
                out.add((rec.topic, rec.partition, rec.offset))
        return out
    finally:
        c.close()


def _move_leaders_to(kafka3, admin, node: int, moves: dict[str, list[int]]) -> None:
    """Reorder the replicas of `moves` (topic -> partitions) so that `node` comes first, then run a
    preferred-leader election on them: leadership moves to `node` without anything stopping."""
    topics = []
    for topic, parts in moves.items():
        meta = _partitions(admin, topic)
        topics.append(ReassignableTopic(name=topic, partitions=[ReassignablePartition(
            partition_index=p, replicas=[node] + [r for r in meta[p].replicas if r != node]) for p in parts]))
    live = next(n for n in kafka3.nodes if n.alive())
    with Wire(f"127.0.0.1:{live.port}", timeout=60) as w:
        w.send(ALTER_REASSIGNMENTS, 0, api.REQUESTS[ALTER_REASSIGNMENTS](timeout_ms=30000, topics=topics))
        resp = w.read_response(ALTER_REASSIGNMENTS, 0)[1]
        assert resp.error_code == 0 and all(p.error_code == 0 for t in resp.responses for p in t.partitions), resp
        _wait(lambda: all(_partitions(admin, t)[p].replicas[0] == node for t, ps in moves.items() for p in ps),
              30, f"replica order with node {node} first")
        w.send(ELECT_LEADERS, 2, api.REQUESTS[ELECT_LEADERS](election_type=0, timeout_ms=30000, topic_partitions=[
            ElectPartitions(topic=t, partitions=ps) for t, ps in moves.items()]))
        resp = w.read_response(ELECT_LEADERS, 2)[1]
    # ELECTION_NOT_NEEDED (84: the node leads already) is fine
    assert resp.error_code == 0 and all(p.error_code in (0, 84) for t in resp.replica_election_results
                                        for p in t.partition_result), resp


def test_no_acknowledged_offset_lost_when_leaders_move(kafka3, kafka_install, names, tmp_path):
    topic, group = names.topic(), names.group()
    state_topic = f"__kshim_leader_change_{os.getpid()}"
    create_topic(kafka3.bootstrap, topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    port = free_port_block(5, start=38000 + (os.getpid() % 97) * 40)
    shim = KshimProcess(kafka3.bootstrap, port, RUN_DIR / "kshim" / "leader-change.log",
                        ["--state-topic", state_topic]).start()
    try:
        admin = _admin(kafka3)
        # kshim created its state topic replicated on the 3-node cluster (as __consumer_offsets)
        from confluent_kafka.admin import ConfigResource
        assert {len(m.replicas) for m in _partitions(admin, state_topic).values()} == {3}
        res = ConfigResource(ConfigResource.Type.TOPIC, state_topic)
        cfg = admin.describe_configs([res])[res].result(timeout=30)
        assert cfg["min.insync.replicas"].value == "2" and cfg["cleanup.policy"].value == "compact"

        figures: dict[str, object] = {}
        consumers, end = _workload(kafka3, kafka_install, admin, shim, topic, group, state_topic, tmp_path, figures)
        acked = {o for _, ok, offsets, _ in _commits(consumers) if ok for o in offsets}
        figures["offsets_acked"] = len(acked)
        figures["commits_failed_total"] = sum(1 for c in _commits(consumers) if not c[1])
        dup, gap = _duplicates_and_gaps(_consumed_ranges(consumers), {p: n for (_, p), n in end.items()})
        figures["duplicates"] = dup
        print(f"\nleader-change figures: {figures}")
        assert gap == 0, f"{gap} records never consumed"
        # no acknowledged offset lost: every one is in the state topic
        stored = _state_offsets(kafka3.bootstrap, state_topic, fmt.partition_for(group, STATE_PARTITIONS), group)
        lost = acked - stored
        assert not lost, f"{len(lost)} acknowledged offsets missing from the state topic, e.g. {sorted(lost)[:5]}"
        assert committed_through(shim.bootstrap, group, topic) == end
        # a kshim restarted on the same state topic replays the final offsets
        shim.kill()
        shim = KshimProcess(kafka3.bootstrap, port, RUN_DIR / "kshim" / "leader-change-2.log",
                            ["--state-topic", state_topic]).start()
        assert committed_through(shim.bootstrap, group, topic) == end
    finally:
        shim.stop()


def _workload(kafka3, kafka_install, admin, shim, topic, group, state_topic, tmp_path, figures):
    """Produce, consume and commit through kshim while leadership moves twice; returns the consumers
    (stopped) and the end offset of every partition, which the group's final commit covers."""
    tools = JavaTools(kafka_install, shim.bootstrap, tmp_path / "via-kshim")
    sp = fmt.partition_for(group, STATE_PARTITIONS)
    victim = None
    try:
        consumers = [tools.verifiable_consumer(topic, group, name=f"consumer-{i}") for i in range(2)]
        # VerifiableProducer sets retries=0 (which also turns idempotence off): retry, idempotently
        props = tmp_path / "producer.properties"
        props.write_text("retries=2147483647\nenable.idempotence=true\ndelivery.timeout.ms=120000\n")
        producer = tools.verifiable_producer(topic, -1, throughput=200, name="producer",
                                             extra=["--command-config", str(props)])
        _wait(lambda: sum(1 for c in _commits(consumers) if c[1]) >= 20 and all(c.assigned() for c in consumers),
              90, "both consumers committing")

        # (1) SIGKILL the leader of the group's state partition; start it again once clients recovered
        victim = _partitions(admin, state_topic)[sp].leader
        t1 = int(time.time() * 1000)
        kafka3.stop_node(victim, kill=True)
        _wait(lambda: _partitions(admin, state_topic)[sp].leader not in (victim, -1), 60, "a new state leader")
        figures["failover_state_leader_ms"] = int(time.time() * 1000) - t1
        for c in consumers:
            c.wait_for(lambda evs: any(e.get("name") == "offsets_committed" and e.get("success")
                                       and e["timestamp"] > t1 for e in evs), 90, "a commit after the kill")
        time.sleep(2)
        kafka3.start_node(victim, wait=True, timeout=120)
        figures["change1"] = _window(consumers, producer, t1, int(time.time() * 1000))
        _wait(lambda: all(victim in m.isrs for t in (state_topic, topic) for m in _partitions(admin, t).values()),
              90, f"node {victim} back in every ISR")

        # (2) graceful: move leadership of the state partition and every data partition to the victim
        failed_appends = figures["kshim_appends_failed_change1"] = shim.log_text().count("failed: error")
        t2 = int(time.time() * 1000)
        before = {p: m.leader for p, m in _partitions(admin, topic).items()}
        _move_leaders_to(kafka3, admin, victim, {state_topic: [sp], topic: list(range(PARTITIONS))})
        _wait(lambda: _partitions(admin, state_topic)[sp].leader == victim, 30, "the state leader moved back")
        _wait(lambda: all(m.leader == victim for m in _partitions(admin, topic).values()), 30, "data leaders moved")
        figures["data_leaders_moved"] = sum(1 for p in before if before[p] != victim)
        for c in consumers:
            c.wait_for(lambda evs: sum(1 for e in evs if e.get("name") == "offsets_committed" and e.get("success")
                                       and e["timestamp"] > t2 + 1000) >= 3, 60, "commits after the election")
        figures["change2"] = _window(consumers, producer, t2, int(time.time() * 1000))
        # kshim's writer followed the graceful move (NOT_LEADER_OR_FOLLOWER, new metadata, retry)
        # without failing an append
        assert shim.log_text().count("failed: error") == failed_appends, shim.log_text()[-3000:]

        # stop producing; the group catches up and commits the end of every partition
        producer.stop(timeout=60)
        failed = producer.named("producer_send_error")
        assert not failed, [(e["timestamp"] - t1, e.get("exception"), e.get("message")) for e in failed[:3]]
        end: dict[tuple[str, int], int] = {}
        for e in producer.named("producer_send_success"):
            key = (e["topic"], e["partition"])
            end[key] = max(end.get(key, 0), e["offset"] + 1)
        figures["records"] = sum(end.values())
        _wait(lambda: _group_committed(consumers) == end, 120, "the final commit to cover every record")
        for c in consumers:
            c.stop()
        return consumers, end
    finally:
        tools.stop_all()
        if victim is not None and not kafka3.node(victim).alive():
            kafka3.start_node(victim, wait=True, timeout=120)
