"""Start and stop a real Apache Kafka (KRaft) on 127.0.0.1 from the Maven-resolved jars.

`LocalKafka(nodes=1)` is one combined broker+controller; `LocalKafka(nodes=3)` is three combined
nodes with a static quorum (any one can be stopped and the other two keep a quorum). Node n uses
client port `base_port + 2(n-1)` and controller port `base_port + 2(n-1) + 1`. Logs land in
`<workdir>/logs/node-<n>.log`; data in `<workdir>/data/node-<n>`; a `state.json` lets another
process (`kshim kafka stop`) find and stop the JVMs.

`LocalKafka(sasl_users={"alice": "alice-secret"})` makes each node's client listener (`port`, listener
name SASL) SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 for those users (SCRAM
credentials are written at format time). Inter-broker traffic and the readiness probe then use a
PLAINTEXT listener INTERNAL on `internal_port` = `base_port + 2*nodes + (n-1)`.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import struct
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .home import EnvironmentProblem, KafkaInstall, build_dir, check_java, install

HOST = "127.0.0.1"

# Settings for fast, deterministic tests (names and defaults: GroupCoordinatorConfig, 4.3).
FAST_SETTINGS: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.min.session.timeout.ms": "3000",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "num.partitions": "1",
    "log.segment.bytes": str(16 * 1024 * 1024),
    "num.network.threads": "2",
    "num.io.threads": "4",
    "log.cleaner.threads": "1",
    "num.recovery.threads.per.data.dir": "1",
}


SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class BrokerNotReady(RuntimeError):
    """A node did not become ready in time; the message carries its log tail."""


def new_cluster_id() -> str:
    """Kafka's Uuid text form (URL-safe base64, no padding), never starting with '-'."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def port_in_use(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def probe_brokers(port: int, host: str = HOST, timeout: float = 2.0) -> list[tuple[int, str, int]]:
    """Send a Metadata v1 request (no topics) and return the brokers [(node_id, host, port)].

    Hand-rolled on purpose: readiness must not depend on the codec or on a client library.
    """
    body = struct.pack(">i", 0)  # topics: empty array = none (v1+: null would mean all)
    client_id = b"kshim-probe"
    header = struct.pack(">hhih", 3, 1, 1, len(client_id)) + client_id
    frame = header + body
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", _recv_exact(s, 4))[0]
        data = _recv_exact(s, size)
    pos = 4  # correlation id
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    brokers = []
    for _ in range(n):
        node_id, hlen = struct.unpack_from(">ih", data, pos)
        pos += 6
        bhost = data[pos:pos + hlen].decode()
        pos += hlen
        (bport,) = struct.unpack_from(">i", data, pos)
        pos += 4
        (rlen,) = struct.unpack_from(">h", data, pos)
        pos += 2 + max(rlen, 0)
        brokers.append((node_id, bhost, bport))
    return brokers


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


@dataclass
class Node:
    node_id: int
    port: int
    controller_port: int
    data_dir: Path
    log_file: Path
    config_file: Path
    pid: int | None = None
    internal_port: int | None = None  # PLAINTEXT inter-broker listener, when `port` is SASL
    log_offset: int = 0  # where this start's output begins in log_file
    proc: subprocess.Popen | None = field(default=None, repr=False)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_file.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no log yet)"
        return "\n".join(text[-lines:])

    @property
    def plaintext_port(self) -> int:
        """A port that speaks PLAINTEXT (for the readiness probe and admin set-up)."""
        return self.internal_port or self.port

    @property
    def ports(self) -> tuple[int, ...]:
        return tuple(p for p in (self.port, self.controller_port, self.internal_port) if p)

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        if self.pid is None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class LocalKafka:
    """A real Kafka on 127.0.0.1, one node or three. Use as a context manager or start()/stop()."""

    def __init__(self, nodes: int = 1, base_port: int = 19092, workdir: Path | str | None = None,
                 overrides: dict[str, str] | None = None, heap: str | None = None,
                 fast: bool = True, kafka: KafkaInstall | None = None,
                 sasl_users: dict[str, str] | None = None):
        if nodes not in (1, 3):
            raise ValueError("nodes must be 1 or 3")
        self.kafka = kafka or install()
        self.workdir = Path(workdir) if workdir else build_dir() / "run" / f"kafka-{nodes}n-{base_port}"
        self.heap = heap or ("768m" if nodes == 1 else "512m")
        self.settings = dict(FAST_SETTINGS if fast else {})
        if nodes == 1:
            self.settings.update({
                "offsets.topic.replication.factor": "1",
                "transaction.state.log.replication.factor": "1",
                "transaction.state.log.min.isr": "1",
                "share.coordinator.state.topic.replication.factor": "1",
                "share.coordinator.state.topic.min.isr": "1",
            })
        else:
            self.settings.setdefault("offsets.topic.num.partitions", "4")
            self.settings.update({"default.replication.factor": "3", "min.insync.replicas": "1"})
        self.settings.update(overrides or {})
        self.nodes = [
            Node(node_id=i + 1, port=base_port + 2 * i, controller_port=base_port + 2 * i + 1,
                 data_dir=self.workdir / "data" / f"node-{i + 1}",
                 log_file=self.workdir / "logs" / f"node-{i + 1}.log",
                 config_file=self.workdir / "config" / f"node-{i + 1}.properties")
            for i in range(nodes)
        ]
        self.sasl_users = dict(sasl_users or {})
        for name, pw in self.sasl_users.items():
            if not name or any(c in name + pw for c in '",=[]\\\n'):
                raise ValueError(f"SASL user {name!r}: names and passwords must not contain , = [ ] \" \\")
        if self.sasl_users:
            for i, n in enumerate(self.nodes):
                n.internal_port = base_port + 2 * nodes + i
        self.cluster_id: str | None = None

    # ------------------------------------------------------------------ config
    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{n.port}" for n in self.nodes)

    @property
    def state_file(self) -> Path:
        return self.workdir / "state.json"

    def node(self, node_id: int) -> Node:
        return self.nodes[node_id - 1]

    @property
    def plaintext_bootstrap(self) -> str:
        """Bootstrap over PLAINTEXT (the INTERNAL listener when the client listener is SASL)."""
        return ",".join(f"{HOST}:{n.plaintext_port}" for n in self.nodes)

    def _sasl_properties(self, node: Node) -> dict[str, str]:
        ctl = f"CONTROLLER://{HOST}:{node.controller_port}"
        ls = f"SASL://{HOST}:{node.port},INTERNAL://{HOST}:{node.internal_port}"
        plain_users = " ".join(f'user_{u}="{pw}"' for u, pw in self.sasl_users.items())
        return {
            "listeners": f"{ls},{ctl}",
            "advertised.listeners": f"{ls},{ctl}",
            "inter.broker.listener.name": "INTERNAL",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,SASL:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS),
            "listener.name.sasl.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
            "listener.name.sasl.scram-sha-256.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "listener.name.sasl.scram-sha-512.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        }

    def _properties(self, node: Node) -> str:
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "listeners": f"PLAINTEXT://{HOST}:{node.port},CONTROLLER://{HOST}:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{node.port},CONTROLLER://{HOST}:{node.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(node.data_dir),
        }
        if self.sasl_users:
            props.update(self._sasl_properties(node))
        if len(self.nodes) == 1:
            props["controller.quorum.bootstrap.servers"] = f"{HOST}:{node.controller_port}"
        else:
            props["controller.quorum.voters"] = ",".join(
                f"{n.node_id}@{HOST}:{n.controller_port}" for n in self.nodes)
        props.update(self.settings)
        return "".join(f"{k}={v}\n" for k, v in props.items())

    # ------------------------------------------------------------------ lifecycle
    def check_ports(self) -> None:
        for n in self.nodes:
            for port in n.ports:
                if port_in_use(port):
                    raise EnvironmentProblem(
                        f"port {HOST}:{port} is already in use (wanted by Kafka node {n.node_id}): "
                        f"stop whatever holds it (`kshim kafka stop`, or `ss -ltnp 'sport = :{port}'` "
                        f"to find it) or choose other ports with --port / KSHIM_KAFKA_PORT")

    def format(self, fresh: bool = True) -> None:
        import shutil
        if fresh and (self.workdir / "data").exists():
            shutil.rmtree(self.workdir / "data")
        self.cluster_id = new_cluster_id()
        procs = []
        for n in self.nodes:
            n.config_file.parent.mkdir(parents=True, exist_ok=True)
            n.log_file.parent.mkdir(parents=True, exist_ok=True)
            n.config_file.write_text(self._properties(n))
            if (n.data_dir / "meta.properties").exists():
                continue
            args = ["format", "--cluster-id", self.cluster_id, "--config", str(n.config_file)]
            if len(self.nodes) == 1:
                args.append("--standalone")
            for user, pw in self.sasl_users.items():
                for mech in SASL_MECHANISMS[1:]:
                    args += ["--add-scram", f"{mech}=[name={user},password={pw}]"]
            cmd = self.kafka.java_cmd("kafka.tools.StorageTool", args)
            procs.append((n, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for n, p in procs:
            out, _ = p.communicate(timeout=120)
            if p.returncode != 0:
                raise EnvironmentProblem(f"formatting Kafka node {n.node_id} failed:\n{out.strip()}")

    def start(self, timeout: float = 90.0, fresh: bool = True) -> "LocalKafka":
        check_java()
        self.check_ports()
        self.format(fresh=fresh)
        for n in self.nodes:
            self.start_node(n.node_id, wait=False)
        self._write_state()
        self.wait_ready(timeout)
        return self

    def start_node(self, node_id: int, wait: bool = True, timeout: float = 90.0) -> None:
        n = self.node(node_id)
        if n.alive():
            return
        for port in n.ports:
            if port_in_use(port):
                raise EnvironmentProblem(f"port {HOST}:{port} of Kafka node {node_id} is already in use")
        jvm = ["-Xms256m", f"-Xmx{self.heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
               f"-Dkafka.logs.dir={n.log_file.parent}"]
        cmd = self.kafka.java_cmd("kafka.Kafka", [str(n.config_file)], heap=self.heap,
                                  log4j="broker", extra_jvm=jvm)
        cmd = [c for c in cmd if c not in ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")]
        n.log_offset = n.log_file.stat().st_size if n.log_file.exists() else 0
        log = open(n.log_file, "ab")
        n.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
        log.close()
        n.pid = n.proc.pid
        self._write_state()
        if wait:
            self.wait_ready(timeout, nodes=[n])

    def wait_ready(self, timeout: float = 90.0, nodes: list[Node] | None = None) -> None:
        """Ready = every node logged 'Kafka Server started' and Metadata lists all live nodes."""
        nodes = nodes or self.nodes
        deadline = time.monotonic() + timeout
        pending = list(nodes)
        while pending:
            for n in list(pending):
                if not n.alive():
                    raise BrokerNotReady(
                        f"Kafka node {n.node_id} exited during start-up (log {n.log_file}):\n{n.log_tail()}")
                try:
                    with open(n.log_file, "rb") as f:
                        f.seek(n.log_offset)
                        text = f.read().decode(errors="replace")
                except FileNotFoundError:
                    text = ""
                if "Kafka Server started" in text:
                    pending.remove(n)
            if not pending:
                break
            if time.monotonic() > deadline:
                n = pending[0]
                raise BrokerNotReady(
                    f"Kafka node {n.node_id} not ready after {timeout:.0f}s (log {n.log_file}); "
                    f"last lines:\n{n.log_tail()}\nFix: check the log above; on a slow machine raise "
                    f"the timeout (--timeout / KSHIM_KAFKA_TIMEOUT)")
            time.sleep(0.2)
        live = [n for n in self.nodes if n.alive()]
        while True:
            try:
                seen = probe_brokers(nodes[0].plaintext_port)
                if len(seen) >= len(live):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise BrokerNotReady(f"Metadata from {nodes[0].plaintext_port} does not list all {len(live)} nodes "
                                     f"after {timeout:.0f}s:\n{nodes[0].log_tail()}")
            time.sleep(0.2)

    def stop_node(self, node_id: int, timeout: float = 30.0, kill: bool = False) -> None:
        n = self.node(node_id)
        _terminate(n, timeout, kill)
        n.proc, n.pid = None, None
        self._write_state()

    def stop(self, timeout: float = 30.0) -> None:
        for n in self.nodes:  # SIGTERM all first, so a 3-node quorum shuts down together
            if n.alive() and n.pid:
                _signal_group(n.pid, signal.SIGTERM)
        for n in self.nodes:
            _terminate(n, timeout, kill=False)
            n.proc, n.pid = None, None
        try:
            self.state_file.unlink()
        except FileNotFoundError:
            pass

    def __enter__(self) -> "LocalKafka":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ state for other processes
    def _write_state(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        state = {
            "bootstrap": self.bootstrap,
            "cluster_id": self.cluster_id,
            "nodes": [{"node_id": n.node_id, "pid": n.pid, "port": n.port,
                       "controller_port": n.controller_port, "log": str(n.log_file)} for n in self.nodes],
        }
        self.state_file.write_text(json.dumps(state, indent=2))


def stop_from_state(state_file: Path, timeout: float = 30.0) -> list[int]:
    """Stop the JVMs a `state.json` names (for `kshim kafka stop`). Returns the pids signalled."""
    state = json.loads(state_file.read_text())
    nodes = [Node(node_id=d["node_id"], port=d["port"], controller_port=d["controller_port"],
                  data_dir=Path("."), log_file=Path(d["log"]), config_file=Path("."), pid=d["pid"])
             for d in state["nodes"]]
    signalled = []
    for n in nodes:
        if n.pid and n.alive():
            _signal_group(n.pid, signal.SIGTERM)
            signalled.append(n.pid)
    for n in nodes:
        _terminate(n, timeout, kill=False)
    state_file.unlink()
    return signalled


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _terminate(n: Node, timeout: float, kill: bool) -> None:
    if not n.pid or not n.alive():
        return
    _signal_group(n.pid, signal.SIGKILL if kill else signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while n.alive() and time.monotonic() < deadline:
        if n.proc is not None:
            try:
                n.proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass
        else:
            time.sleep(0.1)
    if n.alive():
        _signal_group(n.pid, signal.SIGKILL)
        if n.proc is not None:
            n.proc.wait(timeout=10)
