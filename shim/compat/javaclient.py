"""Kafka's Java tools as subprocesses (used by `kshim compat` and the tests): one-shot runs with a
timeout, and long-lived Verifiable* clients whose JSON events (one object per stdout line) are collected."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from shim.localkafka import KafkaInstall
from shim.localkafka.layout import TOOLS, tool_main


class ToolFailed(AssertionError):
    pass


def run_tool(kafka: KafkaInstall, tool: str, args: list[str], timeout: float = 60.0,
             check: bool = True) -> subprocess.CompletedProcess:
    """Run a Kafka CLI tool (script name like 'kafka-topics' or a main class) to completion."""
    main = tool_main(kafka.libs, tool)
    cmd = kafka.java_cmd(main, args)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise ToolFailed(f"{tool} {' '.join(args)} timed out after {timeout}s; stderr:\n{e.stderr}") from None
    if check and proc.returncode != 0:
        raise ToolFailed(f"{tool} {' '.join(args)} exited {proc.returncode}; stderr:\n{proc.stderr[-3000:]}")
    return proc


def parse_events(text: str) -> list[dict]:
    events = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return events


@dataclass
class JavaClient:
    """A running VerifiableConsumer/VerifiableProducer (or any tool printing JSON lines)."""

    name: str
    cmd: list[str]
    log_path: Path
    events: list[dict] = field(default_factory=list)
    proc: subprocess.Popen | None = None
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _eof: bool = False      # the pump has read the last line of stdout

    def start(self) -> "JavaClient":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._stderr = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                     start_new_session=True, bufsize=1)
        threading.Thread(target=self._pump, daemon=True, name=f"pump-{self.name}").start()
        return self

    def _pump(self) -> None:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            evs = parse_events(line)
            if evs:
                with self._cond:
                    self.events.extend(evs)
                    self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def named(self, name: str) -> list[dict]:
        with self._cond:
            return [e for e in self.events if e.get("name") == name]

    def wait_for(self, predicate: Callable[[list[dict]], bool], timeout: float, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self.events):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{self.name}: timed out after {timeout}s waiting for {what}; "
                                         f"last events: {self.events[-5:]}\nstderr tail:\n{self.stderr_tail()}")
                if self.proc and self.proc.poll() is not None and not predicate(self.events):
                    # process gone: its last lines may still be in the pipe; decide once the pump has
                    # read them all (a loaded machine can take longer than any fixed pause)
                    eof_by = time.monotonic() + 15
                    while not self._eof and time.monotonic() < eof_by:
                        self._cond.wait(0.2)
                    if not predicate(self.events):
                        raise AssertionError(f"{self.name} exited ({self.proc.returncode}) before {what}; "
                                             f"stderr tail:\n{self.stderr_tail()}")
                self._cond.wait(min(left, 0.5))

    def wait_event(self, name: str, timeout: float = 60.0, count: int = 1) -> list[dict]:
        self.wait_for(lambda evs: sum(1 for e in evs if e.get("name") == name) >= count, timeout, f"{count}x {name}")
        return self.named(name)

    def stderr_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return ""

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (the tools close cleanly from their shutdown hook), then SIGKILL."""
        if not self.proc:
            return 0
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._stderr.close()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    # -------------------------------------------------------------- consumer views
    def assigned(self) -> set[tuple[str, int]]:
        """Current assignment, from the partitions_assigned/revoked event stream."""
        owned: set[tuple[str, int]] = set()
        for e in list(self.events):
            parts = {(p["topic"], p["partition"]) for p in e.get("partitions", [])}
            if e.get("name") == "partitions_assigned":
                owned |= parts
            elif e.get("name") == "partitions_revoked":
                owned -= parts
        return owned

    def consumed_count(self) -> int:
        return sum(e.get("count", 0) for e in self.named("records_consumed"))

    def committed(self) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        for e in self.named("offsets_committed"):
            if e.get("success"):
                for o in e.get("offsets", []):
                    out[(o["topic"], o["partition"])] = o["offset"]
        return out


class JavaTools:
    """Factory for Java clients against one bootstrap address; tracks them to stop at teardown."""

    def __init__(self, kafka: KafkaInstall, bootstrap: str, log_dir: Path):
        self.kafka, self.bootstrap, self.log_dir = kafka, bootstrap, log_dir
        self.clients: list[JavaClient] = []

    def run(self, tool: str, args: list[str], timeout: float = 60.0, check: bool = True):
        return run_tool(self.kafka, tool, ["--bootstrap-server", self.bootstrap, *args], timeout, check)

    def _client(self, name: str, main: str, args: list[str], heap: str = "256m") -> JavaClient:
        cmd = self.kafka.java_cmd(main, args, heap=heap)
        c = JavaClient(name=name, cmd=cmd, log_path=self.log_dir / f"{name}.stderr.log")
        self.clients.append(c)
        return c.start()

    def verifiable_consumer(self, topic: str, group: str, *, instance_id: str | None = None,
                            protocol: str = "classic", assignor: str | None = None,
                            session_timeout_ms: int | None = None, max_messages: int = -1,
                            reset: str = "earliest", autocommit: bool = False, verbose: bool = False,
                            name: str | None = None, extra: list[str] | None = None) -> JavaClient:
        args = ["--bootstrap-server", self.bootstrap, "--topic", topic, "--group-id", group,
                "--group-protocol", protocol, "--reset-policy", reset, "--max-messages", str(max_messages)]
        if instance_id:
            args += ["--group-instance-id", instance_id]
        if assignor:
            args += ["--assignment-strategy", assignor]
        if session_timeout_ms:
            args += ["--session-timeout", str(session_timeout_ms)]
        if autocommit:
            args.append("--enable-autocommit")
        if verbose:
            args.append("--verbose")
        args += extra or []
        return self._client(name or f"consumer-{instance_id or len(self.clients)}",
                            TOOLS["kafka-verifiable-consumer"], args)

    def verifiable_producer(self, topic: str, max_messages: int, *, acks: int = -1, throughput: int = -1,
                            value_prefix: int | None = None, name: str | None = None,
                            extra: list[str] | None = None) -> JavaClient:
        args = ["--bootstrap-server", self.bootstrap, "--topic", topic, "--max-messages", str(max_messages),
                "--acks", str(acks), "--throughput", str(throughput)]
        if value_prefix is not None:
            args += ["--value-prefix", str(value_prefix)]
        args += extra or []
        return self._client(name or f"producer-{len(self.clients)}", TOOLS["kafka-verifiable-producer"], args)

    def stop_all(self) -> None:
        for c in self.clients:
            try:
                c.stop(timeout=15)
            except Exception:
                c.kill()
