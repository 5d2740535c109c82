"""KIP-848 consumer groups with real clients (group.protocol=consumer), through kshim and directly
against the real broker, with the same observations: confluent-kafka (librdkafka) members join, share
the partitions, one leaves and the other takes everything back; committed offsets are served to the
next member, so nothing is consumed twice or skipped; ConsumerGroupDescribe through the AdminClient."""

from __future__ import annotations

import time

from testsuite.harness.clients import ck_produce

PARTITIONS = 4


def _consumer(bootstrap: str, group: str, topic: str, seen: dict, name: str):
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "client.id": name})
    owned: set[int] = set()

    def on_assign(cons, parts):
        owned.update(p.partition for p in parts)

    def on_revoke(cons, parts):
        owned.difference_update(p.partition for p in parts)
    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    seen[name] = owned
    return c


def _poll_until(consumers, cond, timeout: float, got: list) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.1)
            if m is not None and not m.error():
                got.append((m.partition(), m.offset(), m.value()))
                c.commit(message=m, asynchronous=False)
        if cond():
            return True
    return False


def two_members_then_one(bootstrap: str, topic: str, group: str) -> dict:
    ck_produce(bootstrap, topic, [f"a{i}".encode() for i in range(40)])
    seen: dict[str, set] = {}
    got: list = []
    a = _consumer(bootstrap, group, topic, seen, "a")
    first = _poll_until([a], lambda: len(seen["a"]) == PARTITIONS and len(got) >= 40, 60, got)
    b = _consumer(bootstrap, group, topic, seen, "b")
    shared = _poll_until([a, b], lambda: len(seen["a"]) == 2 and len(seen["b"]) == 2, 60, got)
    disjoint = not (seen["a"] & seen["b"])
    ck_produce(bootstrap, topic, [f"b{i}".encode() for i in range(40)])
    _poll_until([a, b], lambda: len(got) >= 80, 60, got)
    from confluent_kafka.admin import AdminClient
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})      # kept alive until the future is done
        desc = admin.describe_consumer_groups([group])[group].result(30)
        described = (str(desc.type).split(".")[-1], str(desc.state).split(".")[-1], len(desc.members))
    except Exception as e:                                # noqa: BLE001 - recorded as an observation
        described = ("error", type(e).__name__, str(e)[:80])
    a.close()                                             # leaves with epoch -1
    took_all = _poll_until([b], lambda: len(seen["b"]) == PARTITIONS, 60, got)
    ck_produce(bootstrap, topic, [f"c{i}".encode() for i in range(40)])
    _poll_until([b], lambda: len(got) >= 120, 60, got)
    b.close()
    values = [v for _, _, v in got]
    return {"a_got_all_first": first, "shared_2_2": shared, "disjoint": disjoint, "described": described,
            "b_took_all_after_leave": took_all, "consumed": len(values),
            "duplicates": len(values) - len(set(values)),
            "missing": 120 - len(set(values))}


def test_confluent_kafka_consumer_protocol(kafka, kshim, names, new_topic):
    facts = {where: two_members_then_one(bootstrap, new_topic(PARTITIONS), names.group())
             for where, bootstrap in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap))}
    assert facts["kshim"] == facts["broker"]
    assert facts["kshim"] == {"a_got_all_first": True, "shared_2_2": True, "disjoint": True,
                              "described": ("CONSUMER", "STABLE", 2), "b_took_all_after_leave": True,
                              "consumed": 120, "duplicates": 0, "missing": 0}
