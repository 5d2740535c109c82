"""A librdkafka consumer whose group lives on a scale-out kshim instance that is SIGKILLed fails over
to the survivor on its own (issue 7): the survivor stops naming the dead instance in FindCoordinator
at once (shim/state/peerwatch.py: COORDINATOR_NOT_AVAILABLE until it takes the partition over), so
the client's node address is never pointed back at the dead instance, and the same consumer object
commits again through the survivor, with default rebootstrap settings and no restart."""

from __future__ import annotations

import threading
import time

from testsuite.harness.clients import ck_produce
from testsuite.state.test_scale_out import SESSION_MS, find, instances, owners, wait_for  # noqa: F401 (fixture)

COORDINATOR_NOT_AVAILABLE = 15


def test_librdkafka_consumer_fails_over_without_a_restart(kafka, instances, new_topic, names):
    from confluent_kafka import Consumer, KafkaException
    topic = new_topic(partitions=2)
    a, b = instances("a"), instances("b")
    candidates = [names.group(f"c{i}") for i in range(24)]
    table = wait_for("both instances to own partitions", lambda: (
        (t := owners([a, b], candidates)) and set(t.values()) == {a.broker_port(1), b.broker_port(1)} and t))
    group = next(g for g, port in table.items() if port == a.broker_port(1))

    stop = threading.Event()
    commits: list[float] = []

    def produce():
        i = 0
        while not stop.is_set():
            ck_produce(kafka.bootstrap, topic, [b"r%05d" % n for n in range(i, i + 10)])
            i += 10
            time.sleep(0.2)

    def consume():
        c = Consumer({"bootstrap.servers": f"{a.bootstrap},{b.bootstrap}", "group.id": group,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500})
        c.subscribe([topic])
        try:
            while not stop.is_set():
                if [m for m in c.consume(num_messages=50, timeout=0.3) if not m.error()]:
                    try:
                        c.commit(asynchronous=False)
                        commits.append(time.monotonic())
                    except KafkaException:
                        pass
        finally:
            c.close()
    threads = [threading.Thread(target=f, daemon=True) for f in (produce, consume)]
    for t in threads:
        t.start()
    try:
        wait_for("commits through a", lambda: len(commits) >= 5)
        a.kill()
        killed = time.monotonic()
        # b stops naming a at once, long before a's membership expires (SESSION_MS)
        wait_for("b to stop naming a", lambda: find(b.bootstrap, [group])[group][0] == COORDINATOR_NOT_AVAILABLE,
                 timeout=2, every=0.05)
        assert time.monotonic() - killed < SESSION_MS / 1000
        wait_for("the same consumer to commit through b", lambda: any(t > killed for t in commits), timeout=60)
        assert find(b.bootstrap, [group])[group] == (0, b.broker_port(1))
        print(f"first commit {min(t for t in commits if t > killed) - killed:.1f} s after the kill")
    finally:
        stop.set()
        for t in threads:
            t.join(30)
