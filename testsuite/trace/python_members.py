"""confluent-kafka (librdkafka) members for the trace tests: a group where a second member joins and
the first leaves, with the classic protocol or KIP-848's (group.protocol=consumer)."""

from __future__ import annotations

import time

PARTITIONS = 2


class Member:
    """A confluent-kafka consumer subscribed to a topic; `owned` holds its partitions."""

    def __init__(self, consumer):
        self.consumer, self.owned = consumer, set()

    def poll(self, timeout: float):
        return self.consumer.poll(timeout)

    def close(self) -> None:
        self.consumer.close()


def member(bootstrap: str, group: str, topic: str, name: str, consumer_protocol: bool = False, **conf) -> Member:
    from confluent_kafka import Consumer
    cfg = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
           "auto.offset.reset": "earliest", "enable.auto.commit": False, **conf}
    if consumer_protocol:
        cfg["group.protocol"] = "consumer"
    else:
        cfg.setdefault("session.timeout.ms", 6000)
        cfg.setdefault("heartbeat.interval.ms", 500)
    c = Member(Consumer(cfg))

    def on_assign(cons, parts):
        c.owned.update(p.partition for p in parts)

    def on_revoke(cons, parts):
        c.owned.difference_update(p.partition for p in parts)

    def on_lost(cons, parts):
        c.owned.difference_update(p.partition for p in parts)
    c.consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    return c


def poll_until(consumers, cond, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        if cond():
            return True
    return False


def join_then_leave(bootstrap: str, topic: str, group: str, consumer_protocol: bool) -> None:
    """a joins and owns everything; b joins and they share; a closes (leaves); b owns everything."""
    a = member(bootstrap, group, topic, "a", consumer_protocol)
    assert poll_until([a], lambda: len(a.owned) == PARTITIONS), "a never got the partitions"
    b = member(bootstrap, group, topic, "b", consumer_protocol)
    assert poll_until([a, b], lambda: len(a.owned) == 1 and len(b.owned) == 1), (a.owned, b.owned)
    a.close()
    assert poll_until([b], lambda: len(b.owned) == PARTITIONS), b.owned
    b.close()
