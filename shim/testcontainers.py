"""Kafka + kshim as Docker containers for Python tests (testcontainers; `pip install 'kshim[testcontainers]'`).

    from shim.testcontainers import KshimContainers
    with KshimContainers() as stack:
        bootstrap = stack.get_bootstrap_server()      # e.g. localhost:29500, kshim in front of Kafka

The containers are those of compose/docker-compose.yml: the apache/kafka image of the Kafka pin (the
same environment as the compose `kafka` service, reached as `kafka:19092` on a private network) and
the kshim image built from compose/Dockerfile (or `kshim_image=` an image you built). kshim listens
on the same port inside and outside its container, so the addresses it advertises (bootstrap port P,
node 1 on P+2: broker_port_base P+1 plus the node id) work from the host. docs/pytest-plugin.md.

The container specs are plain data (`kafka_spec`, `kshim_spec`), checked by testsuite/test_testcontainers.py
without a Docker engine; `KshimContainers.start` applies them with testcontainers.
"""

from __future__ import annotations

import os

from dataclasses import dataclass, field
from pathlib import Path

from .localkafka.home import KAFKA_VERSION, project_root

KAFKA_ALIAS, KAFKA_PORT = "kafka", 19092
KAFKA_READY_LOG = "Kafka Server started"      # KafkaRaftServer's last start-up line
KSHIM_READY_LOG = "kshim listening"           # shim/runner.py's banner


@dataclass
class ContainerSpec:
    image: str
    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    ports: dict[int, int] = field(default_factory=dict)       # container port -> host port
    aliases: list[str] = field(default_factory=list)          # names on the stack's network
    ready_log: str = ""


def kafka_spec(version: str = KAFKA_VERSION) -> ContainerSpec:
    """A single combined broker+controller (KRaft), as the compose `kafka` service."""
    listener = f"{KAFKA_ALIAS}:{KAFKA_PORT}"
    env = {
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": f"PLAINTEXT://:{KAFKA_PORT},CONTROLLER://:{KAFKA_PORT + 1}",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{listener}",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": f"1@{KAFKA_ALIAS}:{KAFKA_PORT + 1}",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    }
    return ContainerSpec(f"apache/kafka:{version}", env=env, aliases=[KAFKA_ALIAS], ready_log=KAFKA_READY_LOG)


def kshim_spec(image: str, listen_port: int, advertised_host: str, args: tuple[str, ...] = ()) -> ContainerSpec:
    """`kshim run` (the image's entrypoint is `kshim`) in front of the stack's Kafka; bootstrap port
    and node 1's port published 1:1 so the advertised addresses are the host's."""
    command = ["run", "--upstream", f"{KAFKA_ALIAS}:{KAFKA_PORT}", "--listen-host", "0.0.0.0",
               "--listen-port", str(listen_port), "--advertised-host", advertised_host, *args]
    node1 = listen_port + 2                      # broker_port_base (listen_port + 1) + node id 1
    return ContainerSpec(image, command=command, ports={listen_port: listen_port, node1: node1},
                         ready_log=KSHIM_READY_LOG)


def apply(spec: ContainerSpec, container, network):
    """Configures a testcontainers DockerContainer (or anything with its with_* methods) from `spec`."""
    for key, value in spec.env.items():
        container.with_env(key, value)
    for inside, outside in spec.ports.items():
        container.with_bind_ports(inside, outside)
    if spec.command:
        container.with_command(spec.command)
    container.with_network(network)
    if spec.aliases:
        container.with_network_aliases(*spec.aliases)
    return container


def dockerfile() -> tuple[Path, str]:
    """(build context, Dockerfile path in it): the kshim checkout and compose/Dockerfile."""
    root = project_root()
    if not (root / "compose" / "Dockerfile").is_file():
        raise RuntimeError(f"no kshim checkout with compose/Dockerfile at {root}: set KSHIM_HOME to a kshim "
                           "checkout, or pass KshimContainers(kshim_image='<an image built from it>')")
    return root, "compose/Dockerfile"


class KshimContainers:
    """Kafka and kshim containers on a private network; a context manager (`with ... as stack`)."""

    def __init__(self, kshim_image: str | None = None, kafka_version: str = KAFKA_VERSION,
                 kshim_args: tuple[str, ...] = (), listen_port: int | None = None, timeout: float = 120.0):
        self.kshim_image, self.kafka_version, self.kshim_args = kshim_image, kafka_version, tuple(kshim_args)
        self.listen_port, self.timeout = listen_port, timeout
        self.host = ""
        self._image = self._tag = self._network = self.kafka = self.kshim = None

    def start(self) -> "KshimContainers":
        try:
            from testcontainers.core.container import DockerContainer
            from testcontainers.core.image import DockerImage
            from testcontainers.core.network import Network
            from testcontainers.core.waiting_utils import wait_for_logs
        except ImportError:
            raise RuntimeError("shim.testcontainers needs testcontainers: pip install 'kshim[testcontainers]'") from None
        try:
            return self._start(DockerContainer, DockerImage, Network, wait_for_logs)
        except BaseException:
            self.stop()
            raise

    def _start(self, DockerContainer, DockerImage, Network, wait_for_logs) -> "KshimContainers":
        from .testing.ports import free_port_block
        image = self.kshim_image
        if image is None:
            context, path = dockerfile()
            # a tag of this stack's own: stop() removes that tag and nothing else (a build that reused
            # cached layers can give an image id that also carries tags the user made)
            self._image = DockerImage(path=context, dockerfile_path=path,
                                      tag=f"kshim:testcontainers-{os.urandom(4).hex()}").build()
            image = self._tag = str(self._image)
        self._network = Network().__enter__()
        spec = kafka_spec(self.kafka_version)
        self.kafka = apply(spec, DockerContainer(spec.image), self._network).start()
        wait_for_logs(self.kafka, spec.ready_log, timeout=self.timeout)
        self.host = self.kafka.get_container_host_ip()
        port = self.listen_port or free_port_block(3, start=29600)
        spec = kshim_spec(image, port, self.host, self.kshim_args)
        self.kshim = apply(spec, DockerContainer(spec.image), self._network).start()
        wait_for_logs(self.kshim, spec.ready_log, timeout=self.timeout)
        self.listen_port = port
        return self

    def get_bootstrap_server(self) -> str:
        """Bootstrap servers for clients on the host (kshim; it rewrites every broker address)."""
        return f"{self.host}:{self.listen_port}"

    def stop(self) -> None:
        """Remove the containers, the network and the image tag this stack made; each step is tried
        even when an earlier one fails (a container someone removed already), the first error raised."""
        steps = [c.stop for c in (self.kshim, self.kafka) if c is not None]
        if self._network is not None:
            steps.append(lambda: self._network.__exit__(None, None, None))
        if self._image is not None:
            steps.append(lambda: remove_tag(self._tag))
        errors = []
        for step in steps:
            try:
                step()
            except Exception as e:  # noqa: BLE001 - the rest still runs
                errors.append(e)
        self._image = self._tag = self._network = self.kafka = self.kshim = None
        if errors:
            raise errors[0]

    def __enter__(self) -> "KshimContainers":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def remove_tag(tag: str) -> None:
    """`docker rmi TAG` without force: the tag goes; the image goes only when no other tag or
    container holds it (never an image by id, which may carry the user's tags)."""
    import docker
    docker.from_env().images.remove(image=tag, force=False, noprune=False)
