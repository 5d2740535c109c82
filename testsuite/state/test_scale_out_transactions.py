"""Transactions across scale-out instances: the producer's transaction coordinator is reached through
one kshim instance, the group's offsets are held by the other. The owner never sees the client's
EndTxn; it learns the outcome from the transaction's marker in the group's __consumer_offsets
partition (groupservice/txn_markers.py), at once, and both instances then agree on the offsets."""

from __future__ import annotations

import time

import pytest

from shim.compat.pymembers import create_topic
from testsuite.groups.test_transactions import UNSTABLE_OFFSET_COMMIT, _fetch_stable
from testsuite.state.test_scale_out import find, owners, wait_for

pytestmark = pytest.mark.timing   # compares wall-clock measurements: runs alone (scripts/test)


def _group_owned_by(kshims, port: int, names, tag: str) -> str:
    for i in range(200):
        group = names.group(f"{tag}{i}")
        got = owners(kshims, [group])
        if got and got[group] == port:
            return group
    raise AssertionError(f"no group id owned by port {port}")


@pytest.mark.parametrize("committed", [True, False])
def test_the_owner_learns_an_end_that_passed_through_the_other_instance(kafka, instances, names, committed):
    from confluent_kafka import Consumer, Producer, TopicPartition
    a, b = instances("a"), instances("b")
    wait_for("both instances own partitions", lambda: owners([a, b], [names.group("probe")]), timeout=90)
    topic = names.topic("so")
    create_topic(kafka.bootstrap, topic, 1)
    group = _group_owned_by([a, b], b.broker_port(1), names, "so")      # held by b
    meta = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group})
    # the producer knows only a: its transaction coordinator (the broker) is reached through a
    producer = Producer({"bootstrap.servers": a.bootstrap, "transactional.id": names.instance("so"),
                         "transaction.timeout.ms": 60000})
    try:
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 5)], meta.consumer_group_metadata(), 60)
        assert _fetch_stable(f"127.0.0.1:{b.broker_port(1)}", group, topic) == (UNSTABLE_OFFSET_COMMIT, -1)
        t0 = time.monotonic()
        if committed:
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)
        want = (0, 5) if committed else (0, -1)
        wait_for("the owner to apply the outcome",
                 lambda: _fetch_stable(f"127.0.0.1:{b.broker_port(1)}", group, topic) == want, timeout=30, every=0.1)
        took = time.monotonic() - t0
        print(f"committed={committed}: the owner applied the outcome {took:.2f} s after the client's EndTxn")
        assert took < 3.0
        (err, port), = find(a.bootstrap, [group]).values()
        assert err == 0 and port == b.broker_port(1)        # both instances name the same owner
    finally:
        meta.close()
