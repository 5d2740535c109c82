"""The container parts on a real Docker engine (testsuite/harness/docker_engine.py; images built
locally by testsuite/harness/docker_images.py): shim/testcontainers.py with a real client (a static
member bounce through kshim in containers, commits kept; kshim's container stopped), the compose
demo (up, the sample consumer commits, down leaves nothing), and the engine stopped leaving nothing
on the host's network. Where Docker cannot run here, every test skips with the one-line reason."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from shim.localkafka.home import project_root
from shim.compat.pymembers import Member, create_topic, wait_until
from testsuite.harness import docker_engine as engine
from testsuite.harness import docker_images as images
from testsuite.harness.clients import ck_produce

pytestmark = [pytest.mark.kafka, pytest.mark.docker, pytest.mark.timeout(900)]

COMPOSE = project_root() / "compose" / "docker-compose.yml"


@pytest.fixture(scope="module")
def docker_env():
    reason = engine.why_not()
    if reason:
        pytest.skip(reason)
    engine.start()
    images.build_all(log=lambda m: None)           # cached: normally built by scripts/setup --test
    saved = {k: os.environ.get(k) for k in engine.CLIENT_ENV}
    os.environ.update(engine.CLIENT_ENV)
    from testcontainers.core.config import testcontainers_config      # read at its import
    testcontainers_config.tc_host_override = engine.CLIENT_ENV["TC_HOST"]
    yield engine.env()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    engine.stop()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    result = admin.list_consumer_group_offsets([req])[group].result(timeout=30)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def tags() -> list[str]:
    out = engine.docker("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.decode()
    return out.split()


def test_kshim_containers_static_bounce_and_kshim_stopped(docker_env, names):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from shim.testcontainers import KshimContainers
    topic, group = names.topic(), names.group()
    stack = KshimContainers().start()            # kshim built from compose/Dockerfile under a tag of its own
    try:
        built = stack._tag
        bootstrap = stack.get_bootstrap_server()
        create_topic(bootstrap, topic, partitions=4)
        ck_produce(bootstrap, topic, [b"v%d" % i for i in range(40)], spread=4)
        a = Member("confluent-kafka", bootstrap, topic, group, f"{group}-a", session_ms=30000).start()
        b = Member("confluent-kafka", bootstrap, topic, group, f"{group}-b", session_ms=30000).start()
        wait_until(lambda: len(a.current) == 2 and len(b.current) == 2, 90, "a and b balanced")
        time.sleep(6)                             # an auto-commit interval: both commit what they read
        a_before, b_assignments, b_revocations = a.current, len(b.assignments), b.revocations
        a.close()                                 # static: no LeaveGroup, commits on close
        kept = committed(bootstrap, group, topic, 4)
        a2 = Member("confluent-kafka", bootstrap, topic, group, f"{group}-a", session_ms=30000).start()
        wait_until(lambda: a2.current, 60, "restarted member assigned")
        time.sleep(4)
        assert a2.current == a_before, "the restarted static member got its partitions back"
        assert (len(b.assignments), b.revocations) == (b_assignments, b_revocations), "no rebalance for b"
        a2.close()
        b.close()
        assert a.errors + a2.errors + b.errors == []
        after = committed(bootstrap, group, topic, 4)
        assert sum(after.values()) == 40 and all(after[p] >= kept.get(p, 0) for p in after), (kept, after)

        # kshim's container stopped: the client sees what a broker gone away gives it
        stack.kshim.get_wrapped_container().stop(timeout=10)
        with pytest.raises(KafkaException) as err:
            AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 3000}).list_topics(timeout=8)
        assert err.value.args[0].name() in ("_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT"), err.value
    finally:
        stack.stop()
    assert built not in tags() and images.KSHIM in tags(), "stop() removed its own tag only"


def compose(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(["docker-compose", "-p", "kshim-demo", "-f", str(COMPOSE), *args], env=engine.env(),
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_compose_demo_consumes_and_commits_then_down_leaves_nothing(docker_env):
    if subprocess.run(["which", "docker-compose"], capture_output=True).returncode != 0:
        pytest.skip("no docker-compose: scripts/setup --test installs Debian's docker-compose when root")
    up = compose("up", "-d", "--build")
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        # kshim advertises the compose name "kshim": its group is described from inside the network,
        # with the Kafka CLI of the kafka service, through kshim
        deadline, offset = time.monotonic() + 180, 0
        while time.monotonic() < deadline and offset <= 0:
            cli = compose("exec", "-T", "kafka", "/opt/kafka/bin/kafka-consumer-groups.sh", "--bootstrap-server",
                          "kshim:9092", "--describe", "--group", "demo-static", timeout=120)
            rows = [line.split() for line in cli.stdout.splitlines() if line.startswith("demo-static ")]
            offset = max((int(r[3]) for r in rows if r[3].isdigit()), default=0)
            if offset <= 0:
                time.sleep(3)
        assert offset > 0, f"the sample static consumer committed through kshim: {cli.stdout}{cli.stderr}"
        assert "demo-consumer-1" in cli.stdout
        logs = compose("logs", "--no-color", "static-consumer").stdout
        assert '"name":"offsets_committed"' in logs and '"success":true' in logs
    finally:
        down = compose("down", "-v", "--remove-orphans")
    assert down.returncode == 0, down.stderr
    assert engine.docker("ps", "-aq").stdout.split() == []
    networks = engine.docker("network", "ls", "--format", "{{.Name}}").stdout.decode().split()
    assert not [n for n in networks if n.startswith("kshim-demo")], networks


def test_java_module_static_bounce(docker_env):
    """java/kshim-testcontainers: KshimContainer in front of Testcontainers' KafkaContainer, its JUnit 5
    example (a kafka-clients static member bounce: same generation, same partitions, offsets kept)
    built and run by Maven. The engine's API version is passed on: Testcontainers 2.0 asks for 1.44,
    Debian's engine answers up to 1.41."""
    module = project_root() / "java" / "kshim-testcontainers"
    api = engine.docker("version", "--format", "{{.Server.APIVersion}}").stdout.decode().strip()
    out = subprocess.run(["mvn", "-q", "-B", "-f", str(module / "pom.xml"), "test", f"-Dkshim.image={images.KSHIM}",
                          f"-Dkafka.image={images.KAFKA}", f"-DargLine=-Dapi.version={api}"],
                         env=engine.env(), capture_output=True, text=True, timeout=900)
    reports = list((module / "target" / "surefire-reports").glob("TEST-*.xml"))
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    import xml.etree.ElementTree as ET
    suite = ET.parse(reports[0]).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "0", "0")


def test_engine_stopped_leaves_nothing_on_the_network(docker_env):
    engine.stop()
    assert not engine.running()
    assert engine.network_leftovers() == []
