"""Durable group state through real kshim processes in front of the real Kafka: commits survive a
SIGKILL, every acknowledged commit survives 20 random SIGKILLs, and kafka-consumer-groups
--reset-offsets / --delete-offsets through kshim agree with the real broker (and survive a kill)."""

from __future__ import annotations

import os
import random
import threading
import time
import uuid

import pytest

from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)
from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
from testsuite.conftest import RUN_DIR
from testsuite.groups.test_cli_groups import _normalise
from testsuite.harness.clients import ck_consume, ck_produce
from shim.compat.javaclient import JavaTools
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block
from shim.compat.wire import Wire

COMMIT, FETCH = 8, 9


@pytest.fixture
def kshims(kafka, request):
    """kshims(name) -> a new kshim process of this test's own (killed or stopped at teardown). The
    test's kshims share a state topic of their own: one writer per state topic, as in production
    (the session's shared kshim keeps the default topic)."""
    procs: list[KshimProcess] = []
    state_topic = f"__kshim_state_{uuid.uuid4().hex[:8]}"

    def start(tag: str = "k", port: int | None = None) -> KshimProcess:
        port = port or free_port_block(5, start=34000 + (os.getpid() % 97) * 40)
        proc = KshimProcess(kafka.bootstrap, port, RUN_DIR / "kshim" / f"{request.node.name}-{tag}.log",
                            ["--state-topic", state_topic]).start()
        procs.append(proc)
        return proc
    yield start
    for p in procs:
        p.stop()


def fetch_offsets(bootstrap: str, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
    with Wire(bootstrap) as w:
        w.send(FETCH, 8, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=[
            OffsetFetchRequestTopics(name=topic, partition_indexes=partitions)])]))
        _, body = w.read_response(FETCH, 8)
    (g,) = body.groups
    assert g.error_code == 0
    return {p.partition_index: p.committed_offset for t in g.topics for p in t.partitions}


def end_offsets(bootstrap: str, topic: str, partitions: list[int]) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "kshim-test-watermarks"})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions}
    finally:
        c.close()


def test_committed_offsets_survive_sigkill(kafka, kshims, new_topic, names):
    topic, group = new_topic(partitions=2), names.group()
    first = kshims("first")
    ck_produce(first.bootstrap, topic, [b"v%d" % i for i in range(30)], spread=2)
    assert len(ck_consume(first.bootstrap, topic, group, 30)) == 30     # consumes all, commits synchronously
    committed = fetch_offsets(first.bootstrap, group, topic, [0, 1])
    assert end_offsets(kafka.bootstrap, topic, [0, 1]) == {0: 15, 1: 15}
    assert committed == {0: 15, 1: 15}                                  # the consumer committed each end
    first.kill()
    second = kshims("second")
    assert fetch_offsets(second.bootstrap, group, topic, [0, 1]) == committed
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": second.bootstrap, "group.id": group})
    try:
        got = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=30)
    finally:
        c.close()
    assert {tp.partition: tp.offset for tp in got} == committed


def _committer(bootstrap: str, group: str, topic: str, acked: dict, lock: threading.Lock,
               stop: threading.Event) -> None:
    """Simple-group commits (generation -1) of increasing offsets on 3 partitions, reconnecting after
    every kill; `acked[group]` = the last offset acknowledged without error."""
    n = 0
    while not stop.is_set():
        try:
            w = Wire(bootstrap, timeout=10)
        except OSError:
            time.sleep(0.05)
            continue
        try:
            while not stop.is_set():
                n += 1
                w.send(COMMIT, 8, OffsetCommitRequest(
                    group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
                        OffsetCommitRequestTopic(name=topic, partitions=[
                            OffsetCommitRequestPartition(partition_index=p, committed_offset=n) for p in range(3)])]))
                _, body = w.read_response(COMMIT, 8)
                if all(p.error_code == 0 for t in body.topics for p in t.partitions):
                    with lock:
                        acked[group] = n
        except (OSError, ConnectionError):
            time.sleep(0.05)
        finally:
            w.close()


def test_every_acknowledged_commit_survives_20_sigkills(kafka, kshims, new_topic, names):
    topic = new_topic(partitions=3)
    groups = [names.group(f"c{i}") for i in range(3)]
    k = kshims("loop")
    acked: dict[str, int] = {}
    lock, stop = threading.Lock(), threading.Event()
    threads = [threading.Thread(target=_committer, args=(k.bootstrap, g, topic, acked, lock, stop), daemon=True)
               for g in groups]
    for t in threads:
        t.start()
    rng = random.Random(7)
    restarts = []
    try:
        for kill in range(20):
            time.sleep(rng.uniform(0.1, 0.6))
            k.kill()
            time.sleep(0.1)                     # responses already in flight are read and counted
            with lock:
                before = dict(acked)
            t0 = time.monotonic()
            k.start()
            restarts.append(time.monotonic() - t0)
            for g, n in before.items():
                got = fetch_offsets(k.bootstrap, g, topic, [0, 1, 2])
                assert all(o >= n for o in got.values()), f"kill {kill}: {g} acked {n}, fetched {got}"
    finally:
        stop.set()
        for t in threads:
            t.join(15)
    assert len(before) == 3 and all(n > 0 for n in before.values())
    print(f"restarts: mean {sum(restarts) / len(restarts):.2f}s max {max(restarts):.2f}s; acked {acked}")


def _offsets_cli_session(java: JavaTools, topic: str, group: str) -> dict:
    def cg(*args: str, check: bool = True) -> list[list[str]]:
        out = java.run("kafka-consumer-groups", ["--group", group, *args], check=check)
        return _normalise(out.stdout + out.stderr, group, topic)
    return {
        "to_offset": cg("--reset-offsets", "--topic", topic, "--to-offset", "6", "--execute"),
        "to_earliest": cg("--reset-offsets", "--topic", topic, "--to-earliest", "--execute"),
        "shift": cg("--reset-offsets", "--topic", f"{topic}:1", "--shift-by", "3", "--execute"),
        "delete_offsets": cg("--delete-offsets", "--topic", f"{topic}:0"),
        "describe": cg("--describe", "--offsets"),
    }


def test_reset_and_delete_offsets_tool_agrees_with_the_broker(kafka, kafka_install, kshims, new_topic, names,
                                                              tmp_path):
    topic = new_topic(partitions=2)
    ck_produce(kafka.bootstrap, topic, [b"v%d" % i for i in range(20)], spread=2)   # 10 per partition
    k = kshims("cli")
    facts, groups = {}, {"broker": names.group(), "kshim": names.group()}
    for where, bootstrap in (("broker", kafka.bootstrap), ("kshim", k.bootstrap)):
        tools = JavaTools(kafka_install, bootstrap, tmp_path / where)
        facts[where] = _offsets_cli_session(tools, topic, groups[where])
    assert facts["kshim"] == facts["broker"]
    assert facts["kshim"]["to_earliest"][1:] == [["<group>", "<topic>", "0", "0"], ["<group>", "<topic>", "1", "0"]]
    k.kill()
    k.start()
    tools = JavaTools(kafka_install, k.bootstrap, tmp_path / "after-kill")
    out = tools.run("kafka-consumer-groups", ["--group", groups["kshim"], "--describe", "--offsets"]).stdout
    assert _normalise(out, groups["kshim"], topic) == facts["kshim"]["describe"]
