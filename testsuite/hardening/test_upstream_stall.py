"""A stalled upstream: the broker is SIGSTOPped for 6 s while a Java consumer consumes and commits
through kshim (the producer runs meanwhile, directly). The consumer recovers, consumes every record,
and no acknowledged (committed) offset is lost: the final commit covers every record."""

from __future__ import annotations

import os
import signal
import time

from shim.compat.javaclient import JavaTools

N = 3000


def test_consumer_survives_a_stalled_broker(admin_kshim, kafka, kafka_install, java, new_topic, names, tmp_path):
    proc, admin = admin_kshim
    topic = new_topic(partitions=3)
    group = names.group()
    via_kshim = JavaTools(kafka_install, proc.bootstrap, tmp_path)
    pid = kafka.nodes[0].proc.pid
    try:
        cons = via_kshim.verifiable_consumer(topic, group, max_messages=N)
        prod = java.verifiable_producer(topic, N, throughput=600)
        cons.wait_for(lambda evs: sum(e.get("count", 0) for e in evs if e.get("name") == "records_consumed") >= 300,
                      timeout=60, what="consumption under way")
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(6)
        finally:
            os.kill(pid, signal.SIGCONT)
        prod.wait_event("shutdown_complete", timeout=120)
        end: dict[tuple[str, int], int] = {}
        for e in prod.named("producer_send_success"):
            key = (e["topic"], e["partition"])
            end[key] = max(end.get(key, 0), e["offset"] + 1)
        assert sum(end.values()) == N
        cons.wait_event("shutdown_complete", timeout=120)
        committed = cons.committed()
    finally:
        via_kshim.stop_all()
    assert cons.consumed_count() >= N
    assert committed == end
    # and kshim's coordinator still has them after the stall (read back through kshim)
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": proc.bootstrap, "group.id": group})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(3)], timeout=30)
    finally:
        c.close()
    assert {(t.topic, t.partition): t.offset for t in got if t.offset >= 0} == end   # -1001: no records there
