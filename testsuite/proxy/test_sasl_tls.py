"""SASL (PLAIN, SCRAM-SHA-256/512) through kshim, with TLS on kshim's client listeners, against a
real SASL-enabled broker and real clients.

Layout: client --SASL_SSL--> kshim (terminates TLS) --SASL_PLAINTEXT--> broker. The client's SASL
exchange is forwarded byte for byte on its dedicated upstream connection; kshim's own connections
(topology discovery) authenticate with --upstream-sasl-*. The broker's session lifetime is 3 s
(`connections.max.reauth.ms`), so every test here also runs through KIP-368 re-authentications.
Broker data and logs, kshim logs and the test CA live in pytest's temporary directory
(`/tmp/pytest-of-<user>/pytest-current/sasl*`).
"""

from __future__ import annotations

import logging
import time

import pytest

from shim.localkafka import LocalKafka
from testsuite.harness.clients import ck_consume, ck_produce
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block
from testsuite.harness.tlscerts import make_pki

pytestmark = pytest.mark.kafka

USERS = {"alice": "alice-secret", "kshim": "kshim-secret"}
REAUTH_MS = 3000
N = 200


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("sasl")


@pytest.fixture(scope="module")
def pki(workdir):
    return make_pki(workdir / "pki")


@pytest.fixture(scope="module")
def sasl_kafka(kafka_install, workdir):
    """One combined node: client listener SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256/512), INTERNAL plaintext."""
    base = free_port_block(3, start=29300)
    cluster = LocalKafka(nodes=1, base_port=base, workdir=workdir / "kafka",
                         kafka=kafka_install, sasl_users=USERS,
                         overrides={"connections.max.reauth.ms": str(REAUTH_MS)})
    cluster.start(timeout=120)
    yield cluster
    cluster.stop()


def start_kshim(cluster: LocalKafka, name: str, mechanism: str, password: str, pki=None,
                extra: list[str] | None = None) -> KshimProcess:
    extra = ["--upstream-sasl-mechanism", mechanism, "--upstream-sasl-username", "kshim",
             "--upstream-sasl-password", password, *(extra or [])]
    if pki is not None:
        extra += ["--tls-cert", str(pki.cert), "--tls-key", str(pki.key)]
    port = free_port_block(3, start=32300)
    return KshimProcess(cluster.bootstrap, port, cluster.workdir.parent / "kshim" / f"{name}.log", extra).start()


@pytest.fixture(scope="module")
def tls_kshim(sasl_kafka, pki):
    """kshim with TLS client listeners; its own upstream connections use SCRAM-SHA-512."""
    proc = start_kshim(sasl_kafka, "kshim-sasl-tls", "SCRAM-SHA-512", USERS["kshim"], pki)
    yield proc
    proc.stop()


def client_conf(pki, mechanism: str, user: str = "alice", password: str = USERS["alice"]) -> dict:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": password, "ssl.ca.location": str(pki.ca)}


def create_topic(bootstrap: str, conf: dict, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap, **conf})
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30)[name].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        t = admin.list_topics(topic=name, timeout=5).topics.get(name)
        if t and not t.error and len(t.partitions) == partitions and all(
                p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {name} not ready")


# ---------------------------------------------------------------------- librdkafka (confluent-kafka)
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_sasl_ssl_produce_consume_group(tls_kshim, pki, names, mechanism):
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient
    conf = client_conf(pki, mechanism)
    topic, group = names.topic(), names.group()
    create_topic(tls_kshim.bootstrap, conf, topic, partitions=3)
    values = [f"{mechanism}-{i}".encode() for i in range(N)]
    ck_produce(tls_kshim.bootstrap, topic, values, spread=3, **conf)    # every partition gets a commit
    got = ck_consume(tls_kshim.bootstrap, topic, group, N, **conf)
    assert sorted(got) == sorted(values)

    admin = AdminClient({"bootstrap.servers": tls_kshim.bootstrap, **conf})
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(3)])
    committed = admin.list_consumer_group_offsets([req])[group].result(30)
    assert sum(tp.offset for tp in committed.topic_partitions) == N
    md = admin.list_topics(timeout=10)
    assert {(b.host, b.port) for b in md.brokers.values()} == {("127.0.0.1", tls_kshim.broker_port(1))}


@pytest.mark.parametrize("mechanism,broker_text", [
    ("SCRAM-SHA-512", "invalid credentials with SASL mechanism SCRAM-SHA-512"),
    ("PLAIN", "Invalid username or password"),
])
def test_wrong_password_gets_the_brokers_authentication_error(tls_kshim, pki, mechanism, broker_text):
    from confluent_kafka import KafkaError, Producer
    errors: list = []
    p = Producer({"bootstrap.servers": tls_kshim.bootstrap, **client_conf(pki, mechanism, password="wrong"),
                  "error_cb": errors.append})
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    assert errors, "no error reported for a wrong password"
    err = errors[0]
    assert err.code() == KafkaError._AUTHENTICATION, err
    assert broker_text in err.str(), err  # the broker's own message, passed through kshim
    assert tls_kshim.alive()


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def rdkafka_log(name: str) -> tuple[logging.Logger, list[str]]:
    """A logger to pass as librdkafka's `logger`, and the list its lines land in."""
    lines = _Lines()
    logger = logging.getLogger(f"rdkafka.{name}")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return logger, lines.lines


def test_reauthentication_kip368_through_kshim(tls_kshim, pki, names):
    """librdkafka re-authenticates on the same connection every ~3 s; nothing is dropped or failed."""
    from confluent_kafka import Producer
    topic = names.topic()
    conf = client_conf(pki, "SCRAM-SHA-256")
    create_topic(tls_kshim.bootstrap, conf, topic, partitions=1)
    logger, lines = rdkafka_log(topic)
    errors: list = []
    p = Producer({"bootstrap.servers": tls_kshim.bootstrap, **conf, "linger.ms": 5,
                  "debug": "security,broker", "logger": logger, "error_cb": errors.append})
    sent, failed = 0, []
    t0 = time.monotonic()
    while time.monotonic() - t0 < 9.0:
        p.produce(topic, b"r-%d" % sent, on_delivery=lambda e, m: failed.append(e) if e else None)
        sent += 1
        p.poll(0.05)
    assert p.flush(30) == 0
    p.poll(0.5)  # deliver the last log lines
    node = f"127.0.0.1:{tls_kshim.broker_port(1)}"
    reauths = [ln for ln in lines if "Received REAUTH op" in ln and node in ln]
    drops = [ln for ln in lines if "Disconnected" in ln and node in ln]
    assert not errors and not failed, (errors[:3], failed[:3])
    assert len(reauths) >= 2, f"expected re-authentications on {node}; got {len(reauths)}"
    assert not drops, drops[:3]
    got = ck_consume(tls_kshim.bootstrap, topic, names.group(), sent, **conf)
    assert len(got) == sent


def test_mutual_tls_with_sasl(sasl_kafka, pki, names):
    """--tls-client-ca: a client certificate from the CA is required, SASL still passes through."""
    from confluent_kafka import KafkaError, Producer
    proc = start_kshim(sasl_kafka, "kshim-sasl-mtls", "SCRAM-SHA-256", USERS["kshim"], pki,
                       ["--tls-client-ca", str(pki.ca)])
    try:
        conf = client_conf(pki, "SCRAM-SHA-512")
        mtls = {**conf, "ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(pki.client_key)}
        topic = names.topic()
        create_topic(proc.bootstrap, mtls, topic, partitions=1)
        values = [b"m-%d" % i for i in range(N)]
        ck_produce(proc.bootstrap, topic, values, **mtls)
        assert sorted(ck_consume(proc.bootstrap, topic, names.group(), N, **mtls)) == sorted(values)

        logger, lines = rdkafka_log(topic)
        errors: list = []
        p = Producer({"bootstrap.servers": proc.bootstrap, **conf, "error_cb": errors.append, "logger": logger})
        deadline = time.monotonic() + 20
        while not errors and time.monotonic() < deadline:
            p.poll(0.2)
        assert errors and errors[0].code() == KafkaError._ALL_BROKERS_DOWN, errors
        # dropped right after the TLS handshake, before the ApiVersions answer (TLS 1.3 checks the
        # client certificate then): "SSL connection closed" or "connection reset by peer"
        assert any("Disconnected" in ln and "APIVERSION_QUERY" in ln for ln in lines), lines
    finally:
        proc.stop()


# ---------------------------------------------------------------------- kshim's own upstream SASL
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kshim_own_upstream_sasl_mechanisms(sasl_kafka, names, mechanism):
    """kshim discovers the topology over PLAIN / SCRAM-SHA-256 too; clients here use SASL_PLAINTEXT."""
    proc = start_kshim(sasl_kafka, f"kshim-sasl-{mechanism.lower()}", mechanism, USERS["kshim"])
    try:
        conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                "sasl.username": "alice", "sasl.password": USERS["alice"]}
        topic = names.topic()
        create_topic(proc.bootstrap, conf, topic, partitions=1)
        values = [b"%d" % i for i in range(N)]
        ck_produce(proc.bootstrap, topic, values, **conf)
        assert sorted(ck_consume(proc.bootstrap, topic, names.group(), N, **conf)) == sorted(values)
    finally:
        proc.stop()


def test_kshim_upstream_wrong_password_is_reported(sasl_kafka):
    with pytest.raises(AssertionError) as info:
        start_kshim(sasl_kafka, "kshim-sasl-wrong", "SCRAM-SHA-512", "not-the-password")
    text = str(info.value)
    assert "exited 2" in text and "SASL authentication failed" in text, text


# ---------------------------------------------------------------------- Java client
@pytest.mark.java
def test_java_clients_sasl_ssl_scram(tls_kshim, pki, kafka_install, names, tmp_path):
    from shim.compat.javaclient import JavaTools
    props = tmp_path / "client.properties"
    props.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="alice" password="{USERS["alice"]}";\n'
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={pki.ca}\n")
    topic, group = names.topic(), names.group()
    create_topic(tls_kshim.bootstrap, client_conf(pki, "SCRAM-SHA-512"), topic, partitions=2)
    java = JavaTools(kafka_install, tls_kshim.bootstrap, tmp_path)
    try:
        prod = java.verifiable_producer(topic, N, extra=["--command-config", str(props)])
        prod.wait_event("shutdown_complete", timeout=90)
        assert len(prod.named("producer_send_success")) == N, prod.stderr_tail()
        cons = java.verifiable_consumer(topic, group, max_messages=N, extra=["--command-config", str(props)])
        cons.wait_for(lambda evs: sum(e.get("count", 0) for e in evs if e.get("name") == "records_consumed") >= N,
                      timeout=90, what="all records")
        cons.wait_event("offsets_committed", timeout=30)
    finally:
        java.stop_all()


# ---------------------------------------------------------------------- pure-Python clients
def test_aiokafka_sasl_ssl_scram(tls_kshim, pki, names):
    import asyncio
    import ssl

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    topic, group = names.topic(), names.group()
    create_topic(tls_kshim.bootstrap, client_conf(pki, "SCRAM-SHA-256"), topic, partitions=2)
    values = [b"aio-%d" % i for i in range(N)]

    async def go():
        common = dict(bootstrap_servers=tls_kshim.bootstrap, security_protocol="SASL_SSL",
                      ssl_context=ssl.create_default_context(cafile=str(pki.ca)),
                      sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                      sasl_plain_password=USERS["alice"])
        p = AIOKafkaProducer(**common)
        await p.start()
        try:
            await asyncio.gather(*[await p.send(topic, v) for v in values])
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                             **common)
        await c.start()
        out = []
        try:
            deadline = time.monotonic() + 60
            while len(out) < N and time.monotonic() < deadline:
                for msgs in (await c.getmany(timeout_ms=500)).values():
                    out.extend(m.value for m in msgs)
            await c.commit()
        finally:
            await c.stop()
        return out
    assert sorted(asyncio.run(go())) == sorted(values)


def test_kafka_python_sasl_ssl_plain(tls_kshim, pki, names):
    from kafka import KafkaConsumer, KafkaProducer
    topic, group = names.topic(), names.group()
    create_topic(tls_kshim.bootstrap, client_conf(pki, "PLAIN"), topic, partitions=2)
    common = dict(bootstrap_servers=tls_kshim.bootstrap, security_protocol="SASL_SSL", ssl_cafile=str(pki.ca),
                  sasl_mechanism="PLAIN", sasl_plain_username="alice", sasl_plain_password=USERS["alice"])
    values = [b"kp-%d" % i for i in range(N)]
    p = KafkaProducer(**common)
    try:
        for f in [p.send(topic, v) for v in values]:
            f.get(timeout=30)
    finally:
        p.close(timeout=10)
    c = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, **common)
    out: list[bytes] = []
    try:
        deadline = time.monotonic() + 60
        while len(out) < N and time.monotonic() < deadline:
            for msgs in c.poll(timeout_ms=500).values():
                out.extend(m.value for m in msgs)
        c.commit()
    finally:
        c.close()
    assert sorted(out) == sorted(values)
