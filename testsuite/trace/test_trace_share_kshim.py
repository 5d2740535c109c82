"""Share and streams groups traced through kshim (`kshim run --trace DIR`) against the real broker:
a real share consumer (Kafka's kafka-console-share-consumer, KafkaShareConsumer), its
ShareGroupHeartbeats and ShareFetches decoded, `kshim trace show` filtering them and the member
timeline folded from them (join, epoch, assignment, leave); and a streams member at the wire (raw
StreamsGroupHeartbeats: there is no Kafka Streams application in the test suite yet) whose active
tasks the folded timeline shows."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

from kcodec.generated.streams_group_heartbeat import StreamsGroupHeartbeatRequest, Subtopology, Topology
from kcodec.protocol import ApiKey, Error, is_retriable
from shim.compat.pymembers import create_topic
from shim.trace.analyze.member_timeline import fold_heartbeats
from shim.trace.show import read_trace
from testsuite.conftest import RUN_DIR, _SPREAD
from testsuite.harness.clients import ck_produce
from shim.compat.javaclient import run_tool
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block
from shim.compat.wire import Wire

SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"


def traced_kshim(kafka, name: str, trace_dir):
    port = free_port_block(5, start=33200 + _SPREAD)
    return KshimProcess(kafka.bootstrap, port, RUN_DIR / "kshim" / f"trace-{name}.log",
                        ["--trace", str(trace_dir)]).start()


def test_share_consumer_traced_through_kshim(kafka, kafka_install, names, tmp_path):
    trace_dir = tmp_path / "trace"
    shim = traced_kshim(kafka, names.group("share"), trace_dir)
    topic, group = names.topic(), names.group("share")
    try:
        create_topic(shim.bootstrap, topic, partitions=2)
        # a new share group starts at the latest offset unless its group config says otherwise
        run_tool(kafka_install, "kafka-configs", ["--bootstrap-server", shim.bootstrap, "--alter", "--entity-type",
                                                  "groups", "--entity-name", group, "--add-config",
                                                  "share.auto.offset.reset=earliest"])
        ck_produce(shim.bootstrap, topic, [b"m%d" % i for i in range(20)])
        out = run_tool(kafka_install, SHARE_CONSUMER, ["--bootstrap-server", shim.bootstrap, "--topic", topic,
                                                       "--group", group, "--max-messages", "20",
                                                       "--timeout-ms", "60000"], timeout=120)
        assert sorted(out.stdout.split()) == sorted(f"m{i}" for i in range(20)), out.stderr[-2000:]
    finally:
        assert shim.stop() == 0  # SIGTERM: the tracer flushes and closes its file

    recs = [r for r in read_trace(trace_dir) if r.get("type") == "frame" and r.get("group") == group]
    heartbeats = [r for r in recs if r["api_key"] == ApiKey.SHARE_GROUP_HEARTBEAT]
    join = next(r for r in heartbeats if r["dir"] == "client->kshim")
    assert join["epoch"] == 0 and join["body"]["subscribedTopicNames"] == [topic]
    member = join["member"]
    # a new group's first heartbeat may meet a loading coordinator (COORDINATOR_LOAD_IN_PROGRESS): retried
    answers = [r for r in heartbeats if r["dir"] == "kshim->client" and r["member"] == member]
    retried = [r for r in answers if r.get("error_codes")]
    assert all(is_retriable(c) for r in retried for c in r["error_codes"]), retried
    assert answers[len(retried)]["epoch"] > 0
    fetches = [r for r in recs if r["api_key"] == ApiKey.SHARE_FETCH and r["dir"] == "kshim->client"]
    acquired = sum(p.get("acquiredRecords", 0) for r in fetches for t in r["body"]["responses"]
                   for p in t["partitions"])
    assert acquired >= 20 and all(r["member"] == member for r in fetches)
    assert any(r["dir"] == "kshim->upstream" for r in recs if r["api_key"] == ApiKey.SHARE_FETCH)

    # the member timeline: joined with both partitions, left when the consumer closed
    ids = {t["topicId"]: t["name"] for r in read_trace(trace_dir) if r.get("api") == "Metadata"
           and r.get("dir") == "kshim->client" for t in (r.get("body") or {}).get("topics") or ()
           if t.get("topicId") and t.get("name")}
    timeline, members, _ = fold_heartbeats(group, "share", heartbeats, ids)
    assert [m["member"] for m in members] == [member] and members[0]["joins"] == 1
    assigned = [r["assignment"] for r in timeline if r["kind"] in ("joined", "epoch", "assignment")]
    assert sorted(set(assigned[-1])) == [f"{topic}-0", f"{topic}-1"], timeline
    kinds = [r["kind"] for r in timeline]
    assert kinds[:len(retried) + 1] == ["error"] * len(retried) + ["joined"] and kinds[-1] == "left", timeline
    assert members[0]["end"] == "left" and len(members[0]["errors"]) == len(retried)

    shown = subprocess.run([sys.executable, "-m", "shim.cli", "trace", "show", str(trace_dir), "--api", "share",
                            "--member", member], capture_output=True, text=True, timeout=60)
    lines = shown.stdout.splitlines()
    assert shown.returncode == 0 and lines and all(f"member={member}" in ln for ln in lines)
    assert any(" c->k  ShareGroupHeartbeat v" in ln and "epoch=0" in ln for ln in lines)
    assert any(" k->c  ShareFetch v" in ln and "acquired=" in ln for ln in lines)


def streams_member(addr: str, group: str, topic: str, member: str) -> list:
    """Join with a one-subtopology topology, heartbeat (reporting the tasks it got) until it owns
    active tasks, then leave; the answers in order."""
    answers, epoch, owned = [], 0, []
    with Wire(addr) as w:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            rq = StreamsGroupHeartbeatRequest(
                group_id=group, member_id=member, member_epoch=epoch, rebalance_timeout_ms=30000,
                process_id=member, active_tasks=owned, standby_tasks=[], warmup_tasks=[],
                topology=Topology(epoch=0, subtopologies=[Subtopology(subtopology_id="0", source_topics=[topic])])
                if epoch == 0 else None)
            w.send(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, rq)
            rs = w.read_response(ApiKey.STREAMS_GROUP_HEARTBEAT, 0)[1]
            answers.append(rs)
            if rs.error_code:
                assert is_retriable(rs.error_code), rs
                time.sleep(0.5)
                continue
            epoch = rs.member_epoch
            if rs.active_tasks is not None:
                owned = rs.active_tasks
            if owned and rs.active_tasks is None:   # acknowledged: leave
                break
            time.sleep(0.3)
        w.send(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, StreamsGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=-1, process_id=member))
        answers.append(w.read_response(ApiKey.STREAMS_GROUP_HEARTBEAT, 0)[1])
    return answers


def test_streams_member_traced_through_kshim(kafka, names, tmp_path):
    trace_dir = tmp_path / "trace"
    shim = traced_kshim(kafka, names.group("streams"), trace_dir)
    topic, group, member = names.topic(), names.group("streams"), str(uuid.uuid4())
    try:
        create_topic(shim.bootstrap, topic, partitions=2)
        answers = streams_member(shim.bootstrap, group, topic, member)
    finally:
        assert shim.stop() == 0
    if not any(a.active_tasks for a in answers):
        pytest.fail(f"the broker assigned no active task: {answers}")
    assert answers[-1].error_code == Error.NONE and answers[-1].member_epoch == -1

    heartbeats = [r for r in read_trace(trace_dir) if r.get("type") == "frame" and r.get("group") == group
                  and r["api_key"] == ApiKey.STREAMS_GROUP_HEARTBEAT]
    assert len(heartbeats) == 2 * len(answers) and {r["dir"] for r in heartbeats} == {"client->kshim", "kshim->client"}
    assert heartbeats[0]["body"]["topology"]["subtopologies"][0]["sourceTopics"] == [topic]
    timeline, members, segments = fold_heartbeats(group, "streams", heartbeats)
    kinds = [r["kind"] for r in timeline if r["kind"] != "error"]
    assert kinds[0] == "joined" and kinds[-1] == "left", timeline
    # a status (the broker's initial ASSIGNMENT_DELAYED) is a row when it is set or changes, not per answer
    statuses = [r["detail"] for r in timeline if r["kind"] == "status"]
    assert len(statuses) == len(set(statuses)), timeline
    owned = [r["active_tasks"] for r in timeline if r["kind"] in ("joined", "epoch", "assignment")][-1]
    assert owned == ["0_0", "0_1"], timeline
    assert members[0]["member"] == member and members[0]["end"] == "left"
    assert segments[-1]["assignment"] == ["active 0_0", "active 0_1"]
