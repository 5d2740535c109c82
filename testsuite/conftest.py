"""Fixtures: one real Kafka per test run (started lazily, single node and, for tests that ask, three
nodes), fresh topic/group names per test, Java tools bound to a bootstrap address."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shim.compat.pymembers import create_topic
from shim.localkafka import LocalKafka, install
from shim.localkafka.home import build_dir
from shim.compat.javaclient import JavaTools
from shim.testing.names import unique_name
from shim.testing.ports import free_port_block

def _run_dir() -> Path:
    """One directory per test session (concurrent runs must not share Kafka data or logs);
    build/test-run/latest points at the newest."""
    import time
    root = build_dir() / "test-run"
    worker = os.environ.get("PYTEST_XDIST_WORKER")      # (scripts/test's parallel part: one per worker)
    run = root / (f"run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}" + (f"-{worker}" if worker else ""))
    run.mkdir(parents=True, exist_ok=True)
    latest = root / "latest"
    try:
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(run.name)
    except OSError:
        pass
    return run


RUN_DIR = _run_dir()
# concurrent test sessions (developers, helpers) start their port searches at different places
_SPREAD = (os.getpid() % 97) * 40


@pytest.fixture(scope="session")
def kafka_install():
    return install()


def _start(nodes: int, kafka_install) -> LocalKafka:
    base = free_port_block(2 * nodes, start=(29100 if nodes == 1 else 29200) + _SPREAD)
    cluster = LocalKafka(nodes=nodes, base_port=base, workdir=RUN_DIR / f"kafka-{nodes}n", kafka=kafka_install)
    cluster.start(timeout=float(os.environ.get("KSHIM_KAFKA_TIMEOUT", "120")))
    return cluster


@pytest.fixture(scope="session")
def kafka(kafka_install):
    """The single-node real Kafka of this test run."""
    cluster = _start(1, kafka_install)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def kafka3(kafka_install):
    """The 3-node real Kafka cluster of this test run (three combined broker+controller nodes)."""
    cluster = _start(3, kafka_install)
    yield cluster
    cluster.stop()


def _kshim(cluster, name: str, extra: list[str] | None = None):
    from shim.testing.kshimproc import KshimProcess
    port = free_port_block(5, start=32000 + _SPREAD)  # bootstrap + broker ports (base + 1 + node id, nodes 1-3)
    return KshimProcess(cluster.bootstrap, port, RUN_DIR / "kshim" / f"{name}.log", extra).start()


@pytest.fixture(scope="session")
def kshim(kafka):
    """kshim (a real `kshim run` process) in front of the single-node Kafka."""
    proc = _kshim(kafka, "kshim-1n")
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def kshim3(kafka3):
    """kshim in front of the 3-node cluster."""
    proc = _kshim(kafka3, "kshim-3n")
    yield proc
    proc.stop()


@pytest.fixture
def names(request):
    """names.topic() / names.group() / names.instance(): fresh per test."""
    class _Names:
        def topic(self, tag: str = "t") -> str:
            return unique_name(tag, request.node.name)

        def group(self, tag: str = "g") -> str:
            return unique_name(tag, request.node.name)

        def instance(self, tag: str = "i") -> str:
            return unique_name(tag, "")
    return _Names()


@pytest.fixture
def new_topic(kafka, names):
    """new_topic(partitions=1) -> a fresh topic on the single-node Kafka."""
    def make(partitions: int = 1, config: dict | None = None) -> str:
        t = names.topic()
        create_topic(kafka.bootstrap, t, partitions, 1, config)
        return t
    return make


@pytest.fixture
def java(kafka, kafka_install, request):
    tools = JavaTools(kafka_install, kafka.bootstrap, RUN_DIR / "java-logs" / request.node.name)
    yield tools
    tools.stop_all()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Tests that use the kafka/kafka3 fixtures get the kafka/cluster3 marks automatically."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "kafka3" in fixtures or "kshim3" in fixtures:
            item.add_marker(pytest.mark.cluster3)
        elif {"kafka", "kshim", "java", "new_topic"} & set(fixtures):
            item.add_marker(pytest.mark.kafka)
