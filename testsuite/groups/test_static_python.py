"""The static bounce with each Python client: a static member closed and restarted within its
session timeout gets its partitions back and the other member sees no rebalance. Run directly
against the real broker and through kshim; the observations must agree."""

from __future__ import annotations

import time

import pytest

from shim.compat.pymembers import Member, create_topic, wait_until

LIBS = ["confluent-kafka", "aiokafka", "kafka-python"]


def static_bounce(lib: str, bootstrap: str, names) -> dict:
    topic, group = names.topic(), names.group()
    create_topic(bootstrap, topic, partitions=4)
    a = Member(lib, bootstrap, topic, group, f"{group}-a").start()
    wait_until(lambda: a.current, 60, "member a assigned")
    b = Member(lib, bootstrap, topic, group, f"{group}-b").start()
    wait_until(lambda: len(a.current) == 2 and len(b.current) == 2, 60, "a and b balanced")
    time.sleep(2)
    a_before, b_assignments, b_revocations = a.current, len(b.assignments), b.revocations
    a.close()
    a2 = Member(lib, bootstrap, topic, group, f"{group}-a").start()
    wait_until(lambda: a2.current, 60, "restarted member assigned")
    time.sleep(4)
    facts = {
        "restarted_got_old_partitions": a2.current == a_before,
        "other_saw_rebalance": len(b.assignments) != b_assignments or b.revocations != b_revocations,
        "errors": a.errors + a2.errors + b.errors,
    }
    a2.close()
    b.close()
    return facts


@pytest.mark.parametrize("lib", LIBS)
def test_static_bounce_python_clients(kafka, kshim, names, lib):
    broker = static_bounce(lib, kafka.bootstrap, names)
    through = static_bounce(lib, kshim.bootstrap, names)
    assert through == broker
    assert through["restarted_got_old_partitions"] and not through["other_saw_rebalance"]
