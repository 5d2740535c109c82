"""What a scenario runs with: one target bootstrap, Kafka's Java tools, fresh names, a coordinator
wire connection, and one member abstraction over the Java and Python clients."""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field

from kcodec.generated.find_coordinator import FindCoordinatorRequest
from kcodec.protocol import ApiKey, Error, error_name

from .javaclient import JavaClient, JavaTools
from .pymembers import Member, create_topic
from .wire import Wire

CLIENTS = ("java", "librdkafka", "aiokafka", "kafka-python")
PY_LIB = {"librdkafka": "confluent-kafka", "aiokafka": "aiokafka", "kafka-python": "kafka-python"}
SESSION_MS = 10000
COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
FIND_COORDINATOR = ApiKey.FIND_COORDINATOR


class ScenarioFailed(AssertionError):
    """A step did not happen in time: recorded as the observation `failed` (names stripped)."""


def wait(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise ScenarioFailed(f"timed out waiting for {what}")
        time.sleep(0.1)


@dataclass
class Ctx:
    """One target. `tag` keeps names apart when two targets share an upstream cluster."""

    bootstrap: str
    tag: str
    java: JavaTools
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:6])

    def name(self, kind: str, scenario: str) -> str:
        return f"compat-{kind}-{re.sub(r'[^A-Za-z0-9]+', '-', scenario)}-{self.tag}-{self.run_id}-{uuid.uuid4().hex[:4]}"

    def topic(self, scenario: str, partitions: int) -> str:
        t = self.name("t", scenario)
        create_topic(self.bootstrap, t, partitions)
        return t

    def coordinator(self, group: str) -> Wire:
        """A wire connection to the group's coordinator (FindCoordinator v3 through the bootstrap)."""
        deadline = time.monotonic() + 30
        while True:
            with Wire(self.bootstrap) as w:
                w.send(FIND_COORDINATOR, 3, FindCoordinatorRequest(key=group, key_type=0))
                resp = w.read_response(FIND_COORDINATOR, 3)[1]
            if resp.error_code == Error.NONE:
                return Wire(f"{resp.host}:{resp.port}")
            if time.monotonic() > deadline:
                raise ScenarioFailed(f"FindCoordinator error {error_name(resp.error_code)}")
            time.sleep(0.2)

    def call(self, group: str, api_key: int, version: int, body):
        with self.coordinator(group) as w:
            w.send(api_key, version, body)
            return w.read_response(api_key, version)[1]

    def stop_all(self) -> None:
        self.java.stop_all()


class GroupMember:
    """A consumer-group member driven by one client; the views every scenario reads."""

    def __init__(self, client: str, impl):
        self.client, self.impl = client, impl

    @property
    def current(self) -> set[tuple[str, int]]:
        return self.impl.assigned() if isinstance(self.impl, JavaClient) else set(self.impl.current)

    @property
    def assign_events(self) -> int:
        if isinstance(self.impl, JavaClient):
            return len(self.impl.named("partitions_assigned"))
        return len(self.impl.assignments)

    @property
    def revocations(self) -> int:
        if isinstance(self.impl, JavaClient):
            return len(self.impl.named("partitions_revoked"))
        return self.impl.revocations

    def rebalances(self) -> int:
        return self.assign_events + self.revocations

    def running(self) -> bool:
        if isinstance(self.impl, JavaClient):
            return self.impl.proc is not None and self.impl.proc.poll() is None
        return self.impl._thread.is_alive()

    def errors(self) -> list[str]:
        return [] if isinstance(self.impl, JavaClient) else list(self.impl.errors)

    def close(self) -> None:
        if isinstance(self.impl, JavaClient):
            self.impl.stop()
        else:
            self.impl.close()

    def kill(self) -> None:
        """A crash (no LeaveGroup): Java clients only."""
        self.impl.kill()


def start_member(ctx: Ctx, client: str, topic: str, group: str, *, instance_id: str | None = None,
                 protocol: str = "classic", assignor: str | None = None, session_ms: int = SESSION_MS,
                 name: str | None = None) -> GroupMember:
    """Start one member. Under the consumer protocol the session timeout and assignor are the
    broker's, so neither is sent."""
    consumer = protocol == "consumer"
    if client == "java":
        impl = ctx.java.verifiable_consumer(topic, group, instance_id=instance_id, protocol=protocol,
                                            assignor=None if consumer else assignor,
                                            session_timeout_ms=None if consumer else session_ms,
                                            name=name or f"{group}-{instance_id or len(ctx.java.clients)}")
        return GroupMember(client, impl)
    extra = {}
    if consumer:
        extra = ({"group.protocol": "consumer"} if client == "librdkafka" else {"group_protocol": "consumer"})
    impl = Member(PY_LIB[client], ctx.bootstrap, topic, group, instance_id, session_ms=session_ms,
                  consumer_protocol=consumer, **extra).start()
    return GroupMember(client, impl)
