"""A real share consumer (Kafka's kafka-console-share-consumer, KafkaShareConsumer) traced through
kshim (`kshim run --trace DIR`): its ShareGroupHeartbeats and ShareFetches decoded in the trace,
`kshim trace show` filtering them, and the member timeline folded from them (join, epoch,
assignment, leave)."""

from __future__ import annotations

import subprocess
import sys

from kcodec.protocol import ApiKey, is_retriable
from shim.trace.analyze.member_timeline import fold_heartbeats
from shim.trace.show import read_trace
from testsuite.conftest import RUN_DIR, _SPREAD
from testsuite.harness.clients import ck_produce, create_topic
from testsuite.harness.javatools import run_tool
from testsuite.harness.kshimproc import KshimProcess
from testsuite.harness.ports import free_port_block

SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"


def test_share_consumer_traced_through_kshim(kafka, kafka_install, names, tmp_path):
    trace_dir = tmp_path / "trace"
    port = free_port_block(5, start=33200 + _SPREAD)
    shim = KshimProcess(kafka.bootstrap, port, RUN_DIR / "kshim" / f"trace-share-{names.group()}.log",
                        ["--trace", str(trace_dir)]).start()
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
