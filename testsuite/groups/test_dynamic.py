"""Dynamic membership with eager (range) and cooperative-sticky assignors, and a consumer that
exceeds max.poll.interval.ms; through kshim and directly, with the same observations."""

from __future__ import annotations

import time

import pytest

from testsuite.groups.pymembers import Member, wait_until
from testsuite.groups.scenarios import COOPERATIVE, dynamic_membership
from testsuite.harness.clients import create_topic
from testsuite.harness.javatools import JavaTools


@pytest.mark.parametrize("assignor", [None, COOPERATIVE], ids=["eager-range", "cooperative-sticky"])
def test_join_leave_and_session_expiry(kafka, kshim, kafka_install, names, tmp_path, assignor):
    facts = {}
    for where, bootstrap in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap)):
        tools = JavaTools(kafka_install, bootstrap, tmp_path / where)
        try:
            facts[where] = dynamic_membership(tools, names, assignor)
        finally:
            tools.stop_all()
    assert facts["kshim"] == facts["broker"]
    assert facts["kshim"] == {"after_join": [2, 2], "after_leave": 4,
                              "crash_detected_after_session_timeout": True, "after_crash": 4}


def max_poll_exceeded(bootstrap: str, names) -> dict:
    """A member that stops polling for longer than max.poll.interval.ms leaves the group (the
    client sends LeaveGroup); the other member takes all partitions; polling again rejoins."""
    from confluent_kafka import Consumer, KafkaError
    topic, group = names.topic(), names.group()
    create_topic(bootstrap, topic, partitions=2)
    steady = Member("confluent-kafka", bootstrap, topic, group, None, session_ms=6000).start()
    wait_until(lambda: len(steady.current) == 2, 60, "steady owns all")
    seen = []
    stalled = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 6000,
                        "heartbeat.interval.ms": 500, "max.poll.interval.ms": 7000,
                        "on_commit": lambda *a: None})
    stalled.subscribe([topic], on_assign=lambda c, p: seen.append(len(p)))
    deadline = time.monotonic() + 60
    while len(steady.current) != 1 and time.monotonic() < deadline:
        stalled.poll(0.2)
    shared = len(steady.current)
    time.sleep(10)                                # no poll: exceeds max.poll.interval.ms
    wait_until(lambda: len(steady.current) == 2, 30, "steady owns all after the stall")
    taken_back = len(steady.current)
    errors = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(steady.current) != 1:
        msg = stalled.poll(0.2)
        if msg is not None and msg.error():
            errors.append(msg.error().code() == KafkaError._MAX_POLL_EXCEEDED)
    rejoined = len(steady.current)
    stalled.close()
    steady.close()
    return {"shared": shared, "steady_after_stall": taken_back, "max_poll_error": any(errors),
            "after_rejoin": rejoined}


def test_max_poll_interval_exceeded(kafka, kshim, names):
    broker = max_poll_exceeded(kafka.bootstrap, names)
    through = max_poll_exceeded(kshim.bootstrap, names)
    assert through == broker
    assert through == {"shared": 1, "steady_after_stall": 2, "max_poll_error": True, "after_rejoin": 1}
