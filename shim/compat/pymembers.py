"""Python Kafka clients as group members (used by `kshim compat` and the tests): a member driven by
confluent-kafka, aiokafka or kafka-python in a thread, recording its assignments; topic creation."""

from __future__ import annotations

import asyncio
import threading
import time


def create_topic(bootstrap: str, name: str, partitions: int = 1, replication: int = 1,
                 config: dict[str, str] | None = None, timeout: float = 30.0) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(name, partitions, replication, config=config or {})],
                              operation_timeout=timeout)[name]
    fut.result(timeout=timeout)
    # wait until metadata shows every partition with a leader
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic=name, timeout=5)
        t = md.topics.get(name)
        if t and not t.error and len(t.partitions) == partitions and all(p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {name} not ready after {timeout}s")


class Member:
    def __init__(self, lib: str, bootstrap: str, topic: str, group: str, instance_id: str | None,
                 session_ms: int = 10000, consumer_protocol: bool = False, **extra):
        self.consumer_protocol = consumer_protocol   # KIP-848 (librdkafka): session and heartbeat are the broker's
        self.lib, self.bootstrap, self.topic, self.group, self.instance_id = lib, bootstrap, topic, group, instance_id
        self.session_ms, self.extra = session_ms, extra
        self.assignments: list[set[tuple[str, int]]] = []   # every assignment callback, in order
        self.revocations = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"{lib}-{instance_id}")

    @property
    def current(self) -> set[tuple[str, int]]:
        return self.assignments[-1] if self.assignments else set()

    def start(self) -> "Member":
        self._thread.start()
        return self

    def close(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            getattr(self, f"_run_{self.lib.replace('-', '_')}")()
        except Exception as e:  # surfaced by the test through .errors
            self.errors.append(repr(e))

    def _assigned(self, parts) -> None:
        self.assignments.append({(t, p) for t, p in parts})

    # ------------------------------------------------------------------ confluent-kafka
    def _run_confluent_kafka(self) -> None:
        from confluent_kafka import Consumer
        conf = {"bootstrap.servers": self.bootstrap, "group.id": self.group, "auto.offset.reset": "earliest",
                **({} if self.consumer_protocol else {"session.timeout.ms": self.session_ms,
                                                      "heartbeat.interval.ms": 1000}), **self.extra}
        if self.instance_id:
            conf["group.instance.id"] = self.instance_id
        c = Consumer(conf)

        def incremental(consumer) -> bool:                # cooperative or KIP-848: callbacks carry deltas
            return self.consumer_protocol or "cooperative" in str(conf.get("partition.assignment.strategy", ""))

        def on_assign(consumer, parts):
            got = {(p.topic, p.partition) for p in parts}
            self._assigned(self.current | got if incremental(consumer) else got)

        def on_revoke(consumer, parts):
            self.revocations += 1
            if incremental(consumer):
                self._assigned(self.current - {(p.topic, p.partition) for p in parts})
        c.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke)
        while not self._stop.is_set():
            c.poll(0.2)
        c.close()

    def _listener(self, base):
        """A kafka-python or aiokafka rebalance listener (`base`: the library's class) recording into self."""
        member = self

        class Listener(base):
            def on_partitions_assigned(self, assigned):
                member._assigned((tp.topic, tp.partition) for tp in assigned)

            def on_partitions_revoked(self, revoked):
                member.revocations += 1
        return Listener()

    # ------------------------------------------------------------------ kafka-python
    def _run_kafka_python(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer
        c = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, group_instance_id=self.instance_id,
                          session_timeout_ms=self.session_ms, heartbeat_interval_ms=1000,
                          auto_offset_reset="earliest", **self.extra)
        c.subscribe([self.topic], listener=self._listener(ConsumerRebalanceListener))
        while not self._stop.is_set():
            c.poll(timeout_ms=200)
        c.close()

    # ------------------------------------------------------------------ aiokafka
    def _run_aiokafka(self) -> None:
        asyncio.run(self._aiokafka())

    async def _aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
        c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group,
                             group_instance_id=self.instance_id, session_timeout_ms=self.session_ms,
                             heartbeat_interval_ms=1000, auto_offset_reset="earliest", **self.extra)
        await c.start()
        c.subscribe([self.topic], listener=self._listener(ConsumerRebalanceListener))
        try:
            while not self._stop.is_set():
                await c.getmany(timeout_ms=200)
        finally:
            await c.stop()


def wait_until(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)
