"""Several kshim instances in front of one real Kafka (`scale_out`): they split the state topic's
partitions through a group on the broker, FindCoordinator through either one names the owner, and
when one is SIGKILLed its groups move to the other with their committed offsets, while real
confluent-kafka consumers (bootstrapped with both instances) keep consuming and committing."""

from __future__ import annotations

import threading
import time

from kcodec.generated.find_coordinator import FindCoordinatorRequest
from kcodec.generated.list_groups import ListGroupsRequest
from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
from testsuite.harness.clients import ck_produce
from shim.testing.kshimproc import KshimProcess
from shim.compat.wire import Wire
from testsuite.state.conftest import SESSION_MS
from testsuite.state.test_durable import fetch_offsets

FIND, FETCH, LIST = 10, 9, 16
NOT_COORDINATOR = 16
STALL_S = 20.0


def find(bootstrap: str, groups: list[str]) -> dict[str, tuple[int, int]]:
    """group -> (error code, port) from FindCoordinator v4 through `bootstrap`."""
    with Wire(bootstrap) as w:
        w.send(FIND, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=groups))
        _, body = w.read_response(FIND, 4)
    return {c.key: (c.error_code, c.port) for c in body.coordinators}


def fetch_from_coordinator(via: KshimProcess, live: list[KshimProcess], group: str, topic: str) -> dict[int, int]:
    """Committed offsets as a client fetches them: FindCoordinator through `via`, then OffsetFetch
    from the instance it names; every other live instance answers NOT_COORDINATOR for the group."""
    (err, port), = find(via.bootstrap, [group]).values()
    assert err == 0
    for k in live:
        if k.broker_port(1) != port:
            with Wire(k.bootstrap) as w:
                w.send(FETCH, 8, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=[
                    OffsetFetchRequestTopics(name=topic, partition_indexes=[0, 1])])]))
                _, body = w.read_response(FETCH, 8)
            assert body.groups[0].error_code == NOT_COORDINATOR
    return fetch_offsets(f"127.0.0.1:{port}", group, topic, [0, 1])


def wait_for(what: str, check, timeout: float = 60.0, every: float = 0.3):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


def owners(kshims: list[KshimProcess], groups: list[str]):
    """The same group -> port map through every instance, every group owned, or None."""
    maps = [find(k.bootstrap, groups) for k in kshims]
    if any(err for m in maps for err, _ in m.values()) or any(m != maps[0] for m in maps):
        return None
    return {g: port for g, (_, port) in maps[0].items()}


class Committer(threading.Thread):
    """A confluent-kafka consumer that commits synchronously after every batch; `acked` holds the
    offsets of the last commit that succeeded (every partition)."""

    def __init__(self, bootstrap: str, topic: str, group: str):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.group = bootstrap, topic, group
        self.acked: dict[int, int] = {}
        self.seen: set[bytes] = set()
        self.commit_errors = 0
        self.restarts = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def _consumer(self):
        from confluent_kafka import Consumer
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, "session.timeout.ms": SESSION_MS,
                      "heartbeat.interval.ms": 500, "reconnect.backoff.max.ms": 1000,
                      # a client whose only known broker address is the dead instance's goes back to
                      # its bootstrap list (both instances) after this (default 300 s)
                      "metadata.recovery.rebootstrap.trigger.ms": 3000, "topic.metadata.refresh.interval.ms": 1000})
        c.subscribe([self.topic])
        return c

    def run(self) -> None:
        from confluent_kafka import KafkaException
        c = self._consumer()
        last_ok = time.monotonic()
        try:
            while not self.stop.is_set():
                if time.monotonic() - last_ok > STALL_S:
                    # librdkafka 2.16 may keep the coordinator's old address (the dead instance) for
                    # good: restart the consumer as an application health check would
                    c.close()
                    c = self._consumer()
                    self.restarts += 1
                    last_ok = time.monotonic()
                msgs = [m for m in c.consume(num_messages=50, timeout=0.3) if not m.error()]
                if not msgs:
                    continue
                for m in msgs:
                    self.seen.add(m.value())
                try:
                    done = c.commit(asynchronous=False)
                except KafkaException:
                    self.commit_errors += 1
                    continue
                last_ok = time.monotonic()
                with self.lock:
                    for tp in done or []:
                        if tp.error is None and tp.offset >= 0:
                            self.acked[tp.partition] = max(self.acked.get(tp.partition, -1), tp.offset)
        finally:
            c.close()

    def snapshot(self) -> dict[int, int]:
        with self.lock:
            return dict(self.acked)


def test_two_instances_split_groups_and_survive_a_sigkill(kafka, instances, new_topic, names):
    topic = new_topic(partitions=2)
    a, b = instances("a"), instances("b")
    ports = {a.broker_port(1): "a", b.broker_port(1): "b"}
    candidates = [names.group(f"c{i}") for i in range(24)]
    table = wait_for("both instances to own partitions", lambda: (
        (t := owners([a, b], candidates)) and set(t.values()) == set(ports) and t))
    by_owner = {who: [g for g, port in table.items() if ports[port] == who] for who in ("a", "b")}
    groups = by_owner["a"][:2] + by_owner["b"][:2]
    assert len(groups) == 4

    both = f"{a.bootstrap},{b.bootstrap}"
    stop_producing = threading.Event()
    produced: list[bytes] = []

    def produce():
        i = 0
        while not stop_producing.is_set():
            batch = [b"r%05d" % n for n in range(i, i + 20)]
            ck_produce(kafka.bootstrap, topic, batch)
            produced.extend(batch)
            i += 20
            time.sleep(0.2)
    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    consumers = {g: Committer(both, topic, g) for g in groups}
    for c in consumers.values():
        c.start()
    try:
        wait_for("every group to commit", lambda: all(len(c.snapshot()) == 2 for c in consumers.values()))
        # through either instance, each group's offsets are those the clients committed
        for g in groups:
            acked = consumers[g].snapshot()
            for k in (a, b):
                got = fetch_from_coordinator(k, [a, b], g, topic)
                assert all(got[p] >= acked[p] for p in acked), (g, k.bootstrap, got, acked)

        a.kill()
        before = {g: consumers[g].snapshot() for g in groups}
        moved = wait_for("a's groups to move to b", lambda: (
            all(err == 0 and port == b.broker_port(1) for err, port in find(b.bootstrap, groups).values())),
            timeout=4 * SESSION_MS / 1000 + 30)
        assert moved
        # committed offsets of a's groups are intact on b
        for g in groups:          # (answered COORDINATOR_LOAD_IN_PROGRESS while b loads the partition)
            got = wait_for("the group to load", lambda: _try(lambda: fetch_from_coordinator(b, [b], g, topic)))
            assert all(got[p] >= before[g][p] for p in before[g]), (g, got, before[g])
        # and the clients carry on: each group commits beyond what it had before the kill
        wait_for("every group to commit after the kill", lambda: all(
            all(consumers[g].snapshot().get(p, -1) > before[g][p] for p in before[g]) for g in groups),
            timeout=90)
        stop_producing.set()
        producer.join(30)
        end = len(produced)
        wait_for("every group to consume everything", lambda: all(
            sum((_try(lambda: fetch_from_coordinator(b, [b], g, topic)) or {}).values()) == end for g in groups), timeout=60)
        for g in groups:
            assert set(produced) <= consumers[g].seen      # at least once: nothing skipped
        print("consumer restarts after the kill:", {g: consumers[g].restarts for g in groups})
    finally:
        stop_producing.set()
        for c in consumers.values():
            c.stop.set()
        for c in consumers.values():
            c.join(30)
    # b lists every group; a new instance takes half the partitions back and lists them all too
    c = instances("c")
    wait_for("c to own partitions", lambda: (t := owners([b, c], groups)) and c.broker_port(1) in t.values())
    for k in (b, c):      # (a partition c just took is listed once c has loaded it)
        assert wait_for(f"ListGroups through {k.bootstrap} to list every group",
                        lambda: set(groups) <= (_list(k) or set()))


def _list(k: KshimProcess) -> set[str] | None:
    with Wire(f"127.0.0.1:{k.broker_port(1)}") as w:
        w.send(LIST, 4, ListGroupsRequest(states_filter=[]))
        _, body = w.read_response(LIST, 4)
    return None if body.error_code else {g.group_id for g in body.groups}


def _try(fn):
    try:
        return fn()
    except AssertionError:
        return None
