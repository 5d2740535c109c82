"""Fixtures of the kshim pytest plugin (registered by shim/testing/plugin.py with `--kshim`).

- kshim_kafka: the session's real Kafka (a local single node, or --kshim-upstream); `.bootstrap`
- kshim_server: a `kshim run` process in front of it, tracing to kshim_trace_dir; `.bootstrap`
- kshim_factory(*flags): one more kshim for this test, with its own `kshim run` flags
- kshim_names: fresh topic/group/instance names per test; kshim_topic(partitions): a fresh topic
- kshim_trace: the trace directory and the parsed records of this test (`.records()`, `.frames()`)
- compare_with_broker(fn): fn(bootstrap) against the broker, then through kshim: (broker, kshim)
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import pytest

from .kshimproc import KshimProcess
from .names import unique_name
from .ports import free_port_block

_SPREAD = (os.getpid() % 97) * 40     # concurrent sessions start their port searches apart


def _opt(config, name: str) -> str:
    """The command-line option, else the ini value (plugin.py declares both)."""
    return config.getoption(name) or config.getini(name) or ""


class Upstream(NamedTuple):
    """A Kafka the session did not start (--kshim-upstream)."""
    bootstrap: str


@pytest.fixture(scope="session")
def kshim_kafka(request, tmp_path_factory):
    """The session's real Kafka: --kshim-upstream, else a local single node (Java 17+, KAFKA_HOME)."""
    upstream = _opt(request.config, "kshim_upstream")
    if upstream:
        yield Upstream(upstream)
        return
    from shim.localkafka import EnvironmentProblem, LocalKafka, install
    try:
        kafka = install()
    except EnvironmentProblem as e:
        pytest.fail(f"kshim plugin: {e}; or set KAFKA_HOME to a Kafka install (a kshim checkout's "
                    f"scripts/setup makes build/kafka-<version>), or pass --kshim-upstream HOST:PORT",
                    pytrace=False)
    cluster = LocalKafka(nodes=1, base_port=free_port_block(2, start=29500 + _SPREAD),
                         workdir=tmp_path_factory.mktemp("kshim-kafka"), kafka=kafka)
    try:
        cluster.start(timeout=float(os.environ.get("KSHIM_KAFKA_TIMEOUT", "120")))
    except EnvironmentProblem as e:
        pytest.fail(f"kshim plugin: {e}", pytrace=False)
    yield cluster
    cluster.stop()


def _start_kshim(bootstrap: str, log: Path, flags: list[str]) -> KshimProcess:
    port = free_port_block(5, start=33000 + _SPREAD)   # bootstrap + broker ports (base + 1 + node id)
    return KshimProcess(bootstrap, port, log, flags).start()


@pytest.fixture(scope="session")
def kshim_trace_dir(tmp_path_factory) -> Path:
    """Where the session's kshim writes its wire traces (docs/kshim-trace.md)."""
    return tmp_path_factory.mktemp("kshim-trace")


@pytest.fixture(scope="session")
def kshim_server(request, kshim_kafka, kshim_trace_dir, tmp_path_factory):
    """`kshim run` in front of kshim_kafka with the flags of --kshim-args, tracing to kshim_trace_dir;
    the same group settings as the local test broker, so differences are kshim's."""
    flags = ["--trace", str(kshim_trace_dir), *shlex.split(_opt(request.config, "kshim_args"))]
    proc = _start_kshim(kshim_kafka.bootstrap, tmp_path_factory.mktemp("kshim-log") / "kshim.log", flags)
    yield proc
    proc.stop()


@pytest.fixture
def kshim_factory(kshim_kafka, tmp_path):
    """kshim_factory('--group-coordinator', 'broker') -> one more kshim for this test (stopped after it)."""
    started: list[KshimProcess] = []

    def start(*flags: str) -> KshimProcess:
        proc = _start_kshim(kshim_kafka.bootstrap, tmp_path / f"kshim-{len(started)}.log", list(flags))
        started.append(proc)
        return proc
    yield start
    for proc in started:
        proc.stop()


class Names:
    """Fresh names for one test, readable in broker logs and traces (the test's name in them)."""

    def __init__(self, test_name: str):
        self.test_name = test_name

    def topic(self, tag: str = "t") -> str:
        return unique_name(tag, self.test_name)

    def group(self, tag: str = "g") -> str:
        return unique_name(tag, self.test_name)

    def instance(self, tag: str = "i") -> str:
        return unique_name(tag, "")


@pytest.fixture
def kshim_names(request) -> Names:
    return Names(request.node.name)


@pytest.fixture
def kshim_topic(kshim_kafka, kshim_names) -> Callable[..., str]:
    """kshim_topic(partitions=1, config=None) -> a fresh topic, created on the Kafka (needs confluent-kafka)."""
    from shim.compat.pymembers import create_topic

    def make(partitions: int = 1, config: dict[str, str] | None = None) -> str:
        name = kshim_names.topic()
        create_topic(kshim_kafka.bootstrap, name, partitions, 1, config)
        return name
    return make


class TestTrace:
    """The session kshim's trace directory and the records written while this test ran."""

    __test__ = False      # not a test class
    FLUSH_S = 1.2         # kshim's tracer flushes its file about once a second (shim/trace/sink.py)

    def __init__(self, directory: Path, since_ms: int):
        self.dir, self.since_ms = directory, since_ms

    def records(self) -> list[dict]:
        """Frames and coordinator events since the test started (waits for the tracer's flush)."""
        from shim.trace.show import read_trace
        time.sleep(self.FLUSH_S)
        return [r for r in read_trace(self.dir) if (r.get("wall_ms") or 0) >= self.since_ms]

    def frames(self, api: str | None = None, group: str | None = None) -> list[dict]:
        """Frame records, optionally of one API (e.g. "JoinGroup") and/or one group."""
        return [r for r in self.records() if r.get("type") == "frame" and (api is None or r.get("api") == api)
                and (group is None or r.get("group") == group)]

    def events(self, group: str | None = None) -> list[dict]:
        """Coordinator events (rebalances, joins, leaves), optionally of one group."""
        return [r for r in self.records() if r.get("type") == "event" and (group is None or r.get("group") == group)]


@pytest.fixture
def kshim_trace(kshim_server, kshim_trace_dir) -> TestTrace:
    return TestTrace(kshim_trace_dir, int(time.time() * 1000))


class Compared(NamedTuple):
    """What the same client code returned against the broker and through kshim."""
    broker: Any
    kshim: Any

    @property
    def same(self) -> bool:
        return self.broker == self.kshim


@pytest.fixture
def compare_with_broker(kshim_kafka, kshim_server) -> Callable[[Callable[[str], Any]], Compared]:
    """compare_with_broker(fn): fn(bootstrap) run against the broker, then through kshim; both results.
    fn should take fresh topic/group names on each call (kshim_names), as the two runs share one Kafka."""
    def compare(fn: Callable[[str], Any]) -> Compared:
        return Compared(broker=fn(kshim_kafka.bootstrap), kshim=fn(kshim_server.bootstrap))
    return compare
