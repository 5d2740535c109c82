"""`kshim trace import --consumer-offsets` where it is needed: a 3.9.1 broker whose `__consumer_offsets`
the log cleaner has compacted, a SASL_SSL listener with ACLs (TLS and SCRAM through kshim's client, and
a clear refusal without READ on the internal topic), and `--follow` on a group that is running."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from shim.config import Config
from shim.localkafka import LocalKafka
from shim.localkafka.home import install
from shim.offsets_import import import_from_cluster
from shim.offsets_reader import OffsetsReadError
from shim.testing.ports import free_port_block
from shim.trace.show import read_trace
from testsuite.harness.tlscerts import make_pki
from testsuite.trace.capture_compare import analysis
from testsuite.trace.python_members import PARTITIONS, member, poll_until

pytestmark = pytest.mark.kafka


def _bounce(bootstrap: str, topic: str, group: str, rounds: int, **conf) -> list:
    """A classic group of librdkafka consumers that rebalances `rounds` times: a second member joins and
    leaves, over and over. Returns the generations the first member saw (librdkafka's assignment
    callbacks do not give them: the rounds count is what is known)."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap, **conf})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)], operation_timeout=30)[topic].result(30)
    a = member(bootstrap, group, topic, "a", **conf)
    assert poll_until([a], lambda: len(a.owned) == PARTITIONS, 90), a.owned
    for i in range(rounds):
        b = member(bootstrap, group, topic, f"b{i}", **conf)
        assert poll_until([a, b], lambda: len(a.owned) == 1 and len(b.owned) == 1, 90), (a.owned, b.owned)
        b.close()
        assert poll_until([a], lambda: len(a.owned) == PARTITIONS, 90), a.owned
    return [a]


def _gens(out, group: str) -> list[tuple[int, bool]]:
    return [(e["body"]["generation"], bool(e["body"].get("in_force"))) for e in read_trace(out)
            if e.get("event") == "generation" and e.get("group") == group]


@pytest.fixture(scope="module")
def compacting_391(tmp_path_factory):
    """Kafka 3.9.1 whose log cleaner compacts __consumer_offsets within seconds (segments roll every
    2 s, any dirt is cleanable)."""
    try:
        home = install("3.9.1")
    except Exception as e:     # noqa: BLE001 - the release is set up by scripts/setup --test
        pytest.skip(f"Kafka 3.9.1 not installed (scripts/setup --test): {e}")
    cluster = LocalKafka(nodes=1, base_port=free_port_block(2, start=29500), kafka=home,
                         workdir=tmp_path_factory.mktemp("kafka-391"),
                         overrides={"log.roll.ms": "2000", "log.cleaner.backoff.ms": "500",
                                    "log.cleaner.min.cleanable.ratio": "0.01", "log.segment.delete.delay.ms": "100"})
    cluster.start(timeout=120)
    yield cluster
    cluster.stop()


def test_a_391_brokers_records_and_a_compacted_history(compacting_391, tmp_path):
    """3.9.1's records read with 4.4.0's schemas; a group that rebalanced often enough for the cleaner to
    compact its records: the import says what is gone (from which offset the history is complete), the
    generations before that are the state in force, never a rebalance, and those after it are every
    generation formed."""
    k, group = compacting_391, "records-391"
    consumers = _bounce(k.bootstrap, "records-391-topic", group, rounds=2)
    a, out, n = consumers[0], tmp_path / "records", 0
    deadline = time.monotonic() + 120
    while True:                                 # more generations, until the cleaner removed older records
        n += 1
        s = import_from_cluster(Config(upstream=k.bootstrap), out.with_name(f"records-{n}"), [group])
        assert not s["consumer_offsets"]["skipped"] and s["consumer_offsets"]["by_type"]["GroupMetadata"], s
        if any(p["gaps"] for p in s["consumer_offsets"]["partitions"].values()) or time.monotonic() > deadline:
            break
        b = member(k.bootstrap, group, "records-391-topic", f"late{n}")
        assert poll_until([a, b], lambda: len(b.owned) == 1, 60)
        b.close()
        assert poll_until([a], lambda: len(a.owned) == PARTITIONS, 60)
        time.sleep(2.5)                         # (a segment rolls after 2 s)
    b = member(k.bootstrap, group, "records-391-topic", "last")     # two generations after the compaction
    assert poll_until([a, b], lambda: len(b.owned) == 1, 60)
    b.close()
    assert poll_until([a], lambda: len(a.owned) == PARTITIONS, 60)
    out = out.with_name("records-last")
    s = import_from_cluster(Config(upstream=k.bootstrap), out, [group])
    parts = s["consumer_offsets"]["partitions"]
    assert any(p["gaps"] for p in parts.values()), f"the cleaner never compacted __consumer_offsets: {parts}"
    gens = _gens(out, group)
    print("generations (number, in force):", gens)
    forced = [g for g, f in gens if f]
    formed = [g for g, f in gens if not f]
    assert forced and forced[0] == gens[0][0], gens                  # the first one seen is in force
    assert formed == list(range(formed[0], formed[0] + len(formed))), gens   # after it, every one formed
    rounds = analysis(list(read_trace(out)), group)["rebalances"]
    assert [r["generation"] for r in rounds] == formed
    from shim.trace.offsets_topic.output import records_losses
    assert any("compacted away" in x["what"] for x in records_losses(s)), records_losses(s)
    a.close()


USERS = {"admin": "admin-secret", "reader": "reader-secret", "nobody": "nobody-secret"}


@pytest.fixture(scope="module")
def sasl_ssl_kafka(kafka_install, tmp_path_factory):
    """4.4.0 with a SASL_SSL client listener (SCRAM, PLAIN) and StandardAuthorizer: `admin` is a super
    user, `reader` may DESCRIBE and READ __consumer_offsets, `nobody` has no ACL."""
    d = tmp_path_factory.mktemp("records-sasl-ssl")
    pki = make_pki(d / "pki")
    key_pem = d / "server-keystore.pem"
    key_pem.write_text(pki.key.read_text() + pki.cert.read_text())
    cluster = LocalKafka(nodes=1, base_port=free_port_block(3, start=29600), workdir=d / "kafka", kafka=kafka_install,
                         sasl_users=USERS, overrides={
                             "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,SASL:SASL_SSL",
                             "listener.name.sasl.ssl.keystore.type": "PEM",
                             "listener.name.sasl.ssl.keystore.location": str(key_pem),
                             "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                             "super.users": "User:admin;User:ANONYMOUS",
                             "allow.everyone.if.no.acl.found": "false"})
    cluster.start(timeout=120)
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                       ResourcePatternType, ResourceType)
    conf = client_conf(pki, "admin")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, **conf})
    acls = [AclBinding(ResourceType.TOPIC, "__consumer_offsets", ResourcePatternType.LITERAL, "User:reader", "*",
                       op, AclPermissionType.ALLOW) for op in (AclOperation.READ, AclOperation.DESCRIBE)]
    for f in admin.create_acls(acls, request_timeout=30).values():
        f.result()
    yield cluster, pki
    cluster.stop()


def client_conf(pki, user: str) -> dict:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user,
            "sasl.password": USERS[user], "ssl.ca.location": str(pki.ca)}


def _tls_sasl(cluster, pki, user: str) -> Config:
    return Config(upstream=cluster.bootstrap, upstream_tls=True, upstream_tls_ca=str(pki.ca),
                  upstream_sasl_mechanism="SCRAM-SHA-512", upstream_sasl_username=user,
                  upstream_sasl_password=USERS[user])


def test_tls_and_sasl_with_acls(sasl_ssl_kafka, tmp_path):
    cluster, pki = sasl_ssl_kafka
    group = "records-tls"
    consumers = _bounce(cluster.bootstrap, "records-tls-topic", group, rounds=1, **client_conf(pki, "admin"))
    s = import_from_cluster(_tls_sasl(cluster, pki, "reader"), tmp_path / "reader", [group])
    assert [g for g, _ in _gens(tmp_path / "reader", group)] == [1, 2, 3], s
    with pytest.raises(OffsetsReadError, match="TOPIC_AUTHORIZATION_FAILED.*DESCRIBE and READ"):
        import_from_cluster(_tls_sasl(cluster, pki, "nobody"), tmp_path / "nobody", [group])
    for c in consumers:
        c.close()


def test_follow_tails_a_running_group(kafka, tmp_path):
    """`--follow`: the trace grows while the group rebalances (a .part file `trace show --follow` reads),
    and every generation is in it when the follow stops."""
    group, out = "records-follow", tmp_path / "follow"
    consumers = _bounce(kafka.bootstrap, "records-follow-topic", group, rounds=0)
    stop = asyncio.Event()          # (only its flag is read: set from this thread)
    result = {}

    def run():
        result["s"] = import_from_cluster(Config(upstream=kafka.bootstrap), out, [group], follow=True, stop=stop)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    time.sleep(3)
    a = consumers[0]
    b = member(kafka.bootstrap, group, "records-follow-topic", "b")
    assert poll_until([a, b], lambda: len(a.owned) == 1 and len(b.owned) == 1, 90)
    time.sleep(2)
    live = [e["body"]["generation"] for e in read_trace(out) if e.get("event") == "generation"]
    assert live == [1, 2], live                          # read while the import still runs
    b.close()
    assert poll_until([a], lambda: len(a.owned) == PARTITIONS, 90)
    time.sleep(2)
    stop.set()
    t.join(30)
    assert not t.is_alive()
    assert [g for g, _ in _gens(out, group)] == [1, 2, 3], result
    a.close()


def _cg_member(bootstrap: str, group: str, pattern: str, name: str, instance: str | None = None):
    """A KIP-848 librdkafka consumer subscribed to a regex; `owned` holds (topic, partition)."""
    from confluent_kafka import Consumer
    cfg = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name, "group.protocol": "consumer",
           "auto.offset.reset": "earliest", "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000}
    if instance:
        cfg["group.instance.id"] = instance
    c = type("CgMember", (), {})()
    c.consumer, c.owned = Consumer(cfg), set()
    c.poll = c.consumer.poll
    c.close = c.consumer.close
    c.consumer.subscribe([pattern], on_assign=lambda _, ps: c.owned.update((p.topic, p.partition) for p in ps),
                         on_revoke=lambda _, ps: c.owned.difference_update((p.topic, p.partition) for p in ps),
                         on_lost=lambda _, ps: c.owned.difference_update((p.topic, p.partition) for p in ps))
    return c


def test_kip848_static_replacement_and_a_regex_change_from_the_records(kafka, tmp_path):
    """A KIP-848 group subscribed by regex: a static member joins, a new topic matches (the coordinator
    resolves the regex again: an epoch bump caused by it), the static member is bounced (replaced, no
    bump), a dynamic member joins and leaves. The records show each, with its cause."""
    from confluent_kafka.admin import AdminClient, NewTopic
    group, bs = "records-848", kafka.bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("records-rx-a", 2, 1)], operation_timeout=30)["records-rx-a"].result(30)
    s1 = _cg_member(bs, group, "^records-rx-.*", "s1", "records-848-static")
    assert poll_until([s1], lambda: len(s1.owned) == 2, 90), s1.owned
    time.sleep(11)                          # the coordinator resolves a group's regexes at most every 10 s
    admin.create_topics([NewTopic("records-rx-b", 2, 1)], operation_timeout=30)["records-rx-b"].result(30)
    assert poll_until([s1], lambda: len(s1.owned) == 4, 120), s1.owned
    s1.close()                              # a static member's leave keeps its place (epoch -2)
    s2 = _cg_member(bs, group, "^records-rx-.*", "s2", "records-848-static")
    assert poll_until([s2], lambda: len(s2.owned) == 4, 90), s2.owned
    d = _cg_member(bs, group, "^records-rx-.*", "d")
    assert poll_until([s2, d], lambda: len(s2.owned) == 2 and len(d.owned) == 2, 90), (s2.owned, d.owned)
    d.close()
    assert poll_until([s2], lambda: len(s2.owned) == 4, 90), s2.owned
    out = tmp_path / "records"
    import_from_cluster(Config(upstream=bs), out, [group])
    recs = [r for r in read_trace(out) if r.get("type") == "event"]
    for r in recs:
        print(r["wall_ms"], r["event"], {k: v for k, v in r["body"].items() if k not in ("source", "group", "event")})
    causes = analysis(recs, group)["causes"]
    kinds = [(c["kind"], c["instance"] or c["client_id"]) for c in causes]
    print(kinds)
    assert ("regex_change", None) in kinds, kinds
    assert [k for k in kinds if k[0] == "static_replaced"] == [("static_replaced", "records-848-static")], kinds
    static = next(c for c in causes if c["kind"] == "static_replaced")
    assert ":static@" in static["cause_id"]                         # no rebalance of its own
    assert ("joined", "d") in kinds and ("removed", "d") in kinds, kinds
    epochs = [r["body"]["epoch"] for r in recs if r["event"] == "group_epoch"]
    assert epochs[0] <= 2 and epochs == list(range(epochs[0], epochs[0] + len(epochs))), epochs   # (2 from 4.3)
    owned = {a for r in recs if r["event"] == "member_assignment" for a in r["body"]["assigned"]}
    assert owned == {f"records-rx-{t}-{p}" for t in "ab" for p in (0, 1)}, owned   # topic ids named
    s2.close()
