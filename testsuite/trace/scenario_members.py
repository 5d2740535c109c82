"""The members of a traced rebalance scenario: Java consumers (testsuite/java/RebalanceConsumer.java,
classic protocol, CooperativeStickyAssignor) that log every rebalance callback with its wall-clock
time, and the moves the scenario makes them do: block the poll loop past max.poll.interval.ms, bounce
a static member, SIGKILL one. Each incarnation's own logs land in the log folder: `NAME.events.jsonl`
(its callback lines) and `NAME.stderr.log` (the Kafka client's log, Unix-millisecond timestamps,
the coordinator classes at INFO: joins, syncs, and the LeaveGroup a poll timeout sends)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from testsuite.harness.javaapps import compile_app, start_app
from shim.compat.javaclient import JavaClient, JavaTools

COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"

LOG4J = """status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.target = SYSTEM_ERR
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %d{UNIX_MILLIS} %p [%t] %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = OUT
logger.coord.name = org.apache.kafka.clients.consumer.internals
logger.coord.level = INFO
"""


@dataclass
class Timing:
    session_timeout_ms: int = 6000
    static_session_timeout_ms: int = 15000   # a JVM restart takes 2-5 s on a busy machine
    heartbeat_interval_ms: int = 500
    max_poll_interval_ms: int = 6000
    # a clean close() revokes, then waits for the long-poll Fetch before closing its connections: the
    # trace sees the static member stop up to fetch.max.wait.ms after its revoke callback
    fetch_max_wait_ms: int = 50


@dataclass
class Incarnation:
    """One consumer process: `name` is also its client.id (the trace's client_id)."""
    name: str
    client: JavaClient
    instance: str | None
    stall_file: Path
    killed_at: int | None = None       # wall ms just before SIGKILL
    stopped_at: int | None = None      # wall ms just before SIGTERM (a clean close)


def now_ms() -> int:
    return int(time.time() * 1000)


def owned(events: list[dict]) -> set[tuple[str, int]]:
    """The partitions an incarnation holds after its callbacks so far (cooperative: each callback
    names only the partitions added, revoked or lost)."""
    held: set[tuple[str, int]] = set()
    for e in events:
        parts = {(p["topic"], p["partition"]) for p in e.get("partitions", [])}
        if e.get("name") == "partitions_assigned":
            held |= parts
        elif e.get("name") in ("partitions_revoked", "partitions_lost"):
            held -= parts
    return held


def read_logs(log_dir: Path) -> list[dict]:
    """The incarnations written by write_logs, each with its `events` and `client_log` path."""
    rows = json.loads((log_dir / "incarnations.json").read_text())
    for r in rows:
        r["events"] = [json.loads(line) for line in (log_dir / f"{r['name']}.events.jsonl").read_text().splitlines()]
        r["client_log"] = str(log_dir / f"{r['name']}.stderr.log")
    return rows


class ScenarioMembers:
    def __init__(self, tools: JavaTools, topic: str, group: str, workdir: Path, timing: Timing = Timing()):
        self.tools, self.topic, self.group, self.timing = tools, topic, group, timing
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.classes = compile_app("RebalanceConsumer.java", workdir / "classes")
        self.log4j = workdir / "log4j2-scenario.properties"
        self.log4j.write_text(LOG4J)
        self.incarnations: list[Incarnation] = []
        self.live: dict[str, Incarnation] = {}     # member label -> its running incarnation

    def start(self, label: str, instance: str | None = None, name: str | None = None) -> Incarnation:
        name = name or label
        t = self.timing
        stall = self.workdir / f"{name}.stall"
        session = t.static_session_timeout_ms if instance else t.session_timeout_ms
        props = [f"client.id={name}", "group.protocol=classic", f"partition.assignment.strategy={COOPERATIVE}",
                 f"session.timeout.ms={session}", f"heartbeat.interval.ms={t.heartbeat_interval_ms}",
                 f"max.poll.interval.ms={t.max_poll_interval_ms}", f"fetch.max.wait.ms={t.fetch_max_wait_ms}"]
        if instance:
            props.append(f"group.instance.id={instance}")
        client = start_app(self.tools, "RebalanceConsumer",
                           [self.tools.bootstrap, self.group, f"topics:{self.topic}", "--stall-file", str(stall), *props],
                           name, [str(self.classes)], extra_jvm=[f"-Dlog4j2.configurationFile={self.log4j}"])
        inc = Incarnation(name, client, instance, stall)
        self.incarnations.append(inc)
        self.live[label] = inc
        return inc

    def stall(self, label: str, ms: int) -> None:
        """Block `label`'s poll loop for `ms` (returns once the member said it started)."""
        inc = self.live[label]
        inc.stall_file.write_text(str(ms))
        inc.client.wait_event("stall_start", timeout=10)

    def stop(self, label: str) -> Incarnation:
        inc = self.live.pop(label)
        inc.stopped_at = now_ms()
        inc.client.stop()
        return inc

    def kill(self, label: str) -> Incarnation:
        inc = self.live.pop(label)
        inc.killed_at = now_ms()
        inc.client.kill()
        return inc

    def wait_stable(self, partitions: int, timeout: float = 60.0, quiet: float = 1.0) -> None:
        """Every partition held by exactly one running member, each member holding its share, and no
        callback for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        members = list(self.live.values())
        share = partitions // len(members)
        while time.monotonic() < deadline:
            count = sum(len(m.client.events) for m in members)
            held = [owned(list(m.client.events)) for m in members]
            if (sum(map(len, held)) == partitions and len(set().union(*held)) == partitions
                    and all(share <= len(h) <= share + 1 for h in held)):
                time.sleep(quiet)
                if count == sum(len(m.client.events) for m in members):
                    return
            for m in members:
                if m.client.proc.poll() is not None:
                    raise AssertionError(f"{m.name} exited:\n{m.client.stderr_tail(10)}")
            time.sleep(0.1)
        raise AssertionError(f"no stable group after {timeout}s: "
                             + ", ".join(f"{m.name}={sorted(p for _, p in owned(m.client.events))}" for m in members))

    def write_logs(self) -> list[dict]:
        """Each incarnation's callback lines to NAME.events.jsonl and the list of incarnations (name,
        instance, kill/stop times) to incarnations.json; returns what the comparison reads (read_logs)."""
        rows = []
        for inc in self.incarnations:
            events = list(inc.client.events)
            (self.tools.log_dir / f"{inc.name}.events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
            rows.append({"name": inc.name, "instance": inc.instance, "killed_at": inc.killed_at,
                         "stopped_at": inc.stopped_at})
        (self.tools.log_dir / "incarnations.json").write_text(json.dumps(rows, indent=1))
        return read_logs(self.tools.log_dir)

    def stop_all(self) -> None:
        for label in list(self.live):
            self.stop(label)
