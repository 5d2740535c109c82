"""Group API authorization through kshim (`--authorizer`) against a real SASL broker running
StandardAuthorizer with the same ACLs: the same raw-wire requests, sent by users with different
rights directly to the broker and through kshim, get the same error codes (differential).

Users: admin (super user: set-up), alice (GROUP ALL on the prefix "ok-", DESCRIBE only on group
"desc-only", a DENY READ on "ok-denied", READ on topic tok, DESCRIBE on tdesc, WRITE on
transactional id txn-ok), mallory (READ on topic tok only). kshim's own upstream user is a super
user, as is ANONYMOUS (the broker's PLAINTEXT inter-broker and controller listeners).
Broker data and logs, kshim logs: pytest's temporary directory (`.../pytest-current/authz*`).
"""

from __future__ import annotations

import time
import uuid

import pytest

from kcodec import api
from shim.localkafka import LocalKafka
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block
from shim.compat.wire import Wire

pytestmark = pytest.mark.kafka

USERS = {"admin": "admin-secret", "kshim": "kshim-secret", "alice": "alice-secret", "mallory": "mallory-secret"}
SUPER = "User:admin;User:kshim;User:ANONYMOUS"
TOPICS = {"tok": 2, "tno": 1, "tdesc": 1}
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


@pytest.fixture(scope="module")
def authz_kafka(kafka_install, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("authz")
    base = free_port_block(3, start=29500)
    cluster = LocalKafka(nodes=1, base_port=base, workdir=workdir / "kafka", kafka=kafka_install, sasl_users=USERS,
                         overrides={"authorizer.class.name":
                                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                    "super.users": SUPER})
    cluster.start(timeout=120)
    try:
        _setup(cluster)
        yield cluster
    finally:
        cluster.stop()


def _admin(cluster):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": cluster.plaintext_bootstrap})   # ANONYMOUS: a super user


def _binding(rtype, name, pattern, user, op, perm="ALLOW"):
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
    return AclBinding(getattr(ResourceType, rtype), name, getattr(ResourcePatternType, pattern), f"User:{user}", "*",
                      getattr(AclOperation, op), getattr(AclPermissionType, perm))


def _create_acls(cluster, bindings) -> None:
    admin = _admin(cluster)          # kept alive until the futures are done
    for fut in admin.create_acls(bindings, request_timeout=30).values():
        fut.result(30)


def _setup(cluster) -> None:
    from confluent_kafka.admin import NewTopic
    admin = _admin(cluster)
    for f in admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()], operation_timeout=30).values():
        f.result(30)
    _create_acls(cluster, [
        _binding("GROUP", "ok-", "PREFIXED", "alice", "ALL"),
        _binding("GROUP", "ok-denied", "LITERAL", "alice", "READ", "DENY"),
        _binding("GROUP", "desc-only", "LITERAL", "alice", "DESCRIBE"),
        _binding("TOPIC", "tok", "LITERAL", "alice", "READ"),
        _binding("TOPIC", "tdesc", "LITERAL", "alice", "DESCRIBE"),
        _binding("TRANSACTIONAL_ID", "txn-ok", "LITERAL", "alice", "WRITE"),
        _binding("TOPIC", "tok", "LITERAL", "mallory", "READ"),
    ])


@pytest.fixture(scope="module")
def authz_kshim(authz_kafka):
    port = free_port_block(3, start=32500)
    proc = KshimProcess(authz_kafka.bootstrap, port, authz_kafka.workdir.parent / "kshim" / "kshim-authz.log", [
        "--upstream-sasl-mechanism", "PLAIN", "--upstream-sasl-username", "kshim",
        "--upstream-sasl-password", USERS["kshim"], "--authorizer", "--authorizer-super-users", SUPER,
        "--authorizer-refresh-ms", "300"]).start()
    yield proc
    proc.stop()


# ---------------------------------------------------------------------- raw wire with SASL PLAIN
def login(bootstrap: str, user: str) -> Wire:
    w = Wire(bootstrap)
    w.send(SASL_HANDSHAKE, 1, api.REQUESTS[SASL_HANDSHAKE](mechanism="PLAIN"))
    assert w.read_response(SASL_HANDSHAKE, 1)[1].error_code == 0
    token = b"\0" + user.encode() + b"\0" + USERS[user].encode()
    w.send(SASL_AUTHENTICATE, 2, api.REQUESTS[SASL_AUTHENTICATE](auth_bytes=token))
    assert w.read_response(SASL_AUTHENTICATE, 2)[1].error_code == 0
    return w


def call(w: Wire, api_key: int, version: int, **fields):
    w.send(api_key, version, api.REQUESTS[api_key](**fields))
    return w.read_response(api_key, version)[1]


def _req(api_key, cls, **fields):
    import importlib
    mod = importlib.import_module(api.REQUESTS[api_key].__module__)
    return getattr(mod, cls)(**fields)


def refused_first(entries: list) -> tuple:
    """Where the refused (GROUP_AUTHORIZATION_FAILED) entries are, and the others sorted: the broker's
    coordinator answers groups grouped by __consumer_offsets partition, kshim's in request order
    (not what this test is about)."""
    return ([i for i, e in enumerate(entries) if e[1] == 30], [e for e in entries if e[1] == 30],
            sorted((e for e in entries if e[1] != 30), key=repr))


def _parts(topics, name_attr="name", parts_attr="partitions", index="partition_index"):
    return sorted((getattr(t, name_attr), getattr(p, index), p.error_code)
                  for t in topics for p in getattr(t, parts_attr))


# Each step: (label, api key, version, request fields(ids), projection(response) -> comparable)
def steps(ids: dict) -> list:
    OC, OF, TXN, OD = 8, 9, 28, 47

    def oc_topics(spec):
        return [_req(OC, "OffsetCommitRequestTopic", name=t, partitions=[
            _req(OC, "OffsetCommitRequestPartition", partition_index=p, committed_offset=5, committed_metadata="")
            for p in ps]) for t, ps in spec]

    def of_topics(spec, v=8):
        cls = "OffsetFetchRequestTopics" if v >= 8 else "OffsetFetchRequestTopic"
        return [_req(OF, cls, name=t, partition_indexes=ps) for t, ps in spec]

    def of_group(gid, spec):
        return _req(OF, "OffsetFetchRequestGroup", group_id=gid, member_id=None, member_epoch=-1,
                    topics=None if spec is None else of_topics(spec))

    def txn_topics(spec):
        return [_req(TXN, "TxnOffsetCommitRequestTopic", name=t, partitions=[
            _req(TXN, "TxnOffsetCommitRequestPartition", partition_index=p, committed_offset=5, committed_metadata="")
            for p in ps]) for t, ps in spec]

    def od_topics(spec):
        return [_req(OD, "OffsetDeleteRequestTopic", name=t, partitions=[
            _req(OD, "OffsetDeleteRequestPartition", partition_index=p) for p in ps]) for t, ps in spec]

    def join(gid):
        return dict(group_id=gid, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                    protocol_type="consumer", protocols=[_req(11, "JoinGroupRequestProtocol", name="range",
                                                              metadata=b"")])

    def cgh(gid, topics):
        return dict(group_id=gid, member_id="", member_epoch=0, rebalance_timeout_ms=30000,
                    subscribed_topic_names=topics, topic_partitions=[])

    def of_view(r):
        return [(g.group_id, g.error_code, sorted((t.name, p.partition_index, p.committed_offset, p.error_code)
                                                  for t in g.topics for p in t.partitions)) for g in r.groups]
    return [
        ("FindCoordinator v4", 10, 4, dict(key_type=0, coordinator_keys=["ok-a", "desc-only", "nope"]),
         lambda r: [(c.key, c.error_code) for c in r.coordinators]),
        ("FindCoordinator v3 nope", 10, 3, dict(key_type=0, key="nope"), lambda r: (r.error_code, r.error_message)),
        ("FindCoordinator v1 ok", 10, 1, dict(key_type=0, key="ok-a"), lambda r: r.error_code),
        ("JoinGroup ok", 11, 5, join("ok-a"), lambda r: (r.error_code, r.generation_id, r.protocol_name)),
        ("JoinGroup desc-only", 11, 7, join("desc-only"), lambda r: (r.error_code, r.generation_id, r.protocol_name)),
        ("JoinGroup denied", 11, 9, join("ok-denied"), lambda r: (r.error_code, r.member_id, r.leader)),
        ("SyncGroup", 14, 3, dict(group_id="ok-a", generation_id=1, member_id="m", assignments=[]),
         lambda r: (r.error_code, r.assignment)),
        ("SyncGroup desc-only", 14, 5, dict(group_id="desc-only", generation_id=1, member_id="m",
                                            protocol_type="consumer", protocol_name="range", assignments=[]),
         lambda r: (r.error_code, r.protocol_type, r.protocol_name)),
        ("Heartbeat", 12, 4, dict(group_id="desc-only", generation_id=1, member_id="m"), lambda r: r.error_code),
        ("LeaveGroup", 13, 3, dict(group_id="ok-denied", members=[_req(13, "MemberIdentity", member_id="m")]),
         lambda r: (r.error_code, [(m.member_id, m.error_code) for m in r.members])),
        ("OffsetCommit mixed", OC, 8, dict(group_id="ok-c", generation_id_or_member_epoch=-1, member_id="",
                                           topics=oc_topics([("tok", [0, 1]), ("tno", [0]), ("tdesc", [0]),
                                                             ("missing-topic", [0])])), lambda r: _parts(r.topics)),
        ("OffsetCommit v10 ids", OC, 10, dict(group_id="ok-c", generation_id_or_member_epoch=-1, member_id="",
                                              topics=[_req(OC, "OffsetCommitRequestTopic", topic_id=ids[t], partitions=[
                                                  _req(OC, "OffsetCommitRequestPartition", partition_index=0,
                                                       committed_offset=7, committed_metadata="")])
                                                  for t in ("tok", "tno")]),
         lambda r: sorted((str(t.topic_id), p.partition_index, p.error_code) for t in r.topics for p in t.partitions)),
        ("OffsetCommit no topic allowed", OC, 8, dict(group_id="ok-none", generation_id_or_member_epoch=-1,
                                                      member_id="", topics=oc_topics([("tno", [0])])),
         lambda r: _parts(r.topics)),
        ("OffsetCommit desc-only", OC, 8, dict(group_id="desc-only", generation_id_or_member_epoch=-1, member_id="",
                                               topics=oc_topics([("tok", [0])])), lambda r: _parts(r.topics)),
        ("OffsetFetch v8", OF, 8, dict(groups=[of_group("ok-c", [("tok", [0, 1]), ("tno", [0]), ("tdesc", [0])]),
                                               of_group("ok-admin", None), of_group("desc-only", [("tok", [0])]),
                                               of_group("nope", [("tok", [0])])], require_stable=False), of_view),
        ("OffsetFetch v7", OF, 7, dict(group_id="ok-c", topics=of_topics([("tok", [0]), ("tno", [0])], 7),
                                       require_stable=False),
         lambda r: (r.error_code, _parts(r.topics))),
        ("OffsetFetch v6 refused", OF, 6, dict(group_id="nope", topics=of_topics([("tok", [0])], 6)),
         lambda r: (r.error_code, _parts(r.topics))),
        ("OffsetFetch v1 refused", OF, 1, dict(group_id="nope", topics=of_topics([("tok", [0])], 1)),
         lambda r: (r.error_code, _parts(r.topics))),
        ("OffsetFetch v6 all", OF, 6, dict(group_id="ok-admin", topics=None),
         lambda r: (r.error_code, _parts(r.topics))),
        ("TxnOffsetCommit txn id", TXN, 3, dict(transactional_id="txn-no", group_id="ok-t", producer_id=1000,
                                                producer_epoch=0, generation_id_or_member_epoch=-1, member_id="",
                                                topics=txn_topics([("tok", [0])])), lambda r: _parts(r.topics)),
        ("TxnOffsetCommit group", TXN, 3, dict(transactional_id="txn-ok", group_id="desc-only", producer_id=1000,
                                               producer_epoch=0, generation_id_or_member_epoch=-1, member_id="",
                                               topics=txn_topics([("tok", [0])])), lambda r: _parts(r.topics)),
        ("TxnOffsetCommit topics", TXN, 3, dict(transactional_id="txn-ok", group_id="ok-t", producer_id=1000,
                                                producer_epoch=0, generation_id_or_member_epoch=-1, member_id="",
                                                topics=txn_topics([("tno", [0]), ("tdesc", [0])])),
         lambda r: _parts(r.topics)),
        ("OffsetDelete", OD, 0, dict(group_id="ok-admin", topics=od_topics([("tok", [0]), ("tno", [0])])),
         lambda r: (r.error_code, _parts(r.topics))),
        ("OffsetDelete desc-only", OD, 0, dict(group_id="desc-only", topics=od_topics([("tok", [0])])),
         lambda r: (r.error_code, _parts(r.topics))),
        ("DescribeGroups", 15, 5, dict(groups=["ok-c", "desc-only", "nope", "ok-a"],
                                       include_authorized_operations=True),
         lambda r: refused_first([(g.group_id, g.error_code, g.group_state, g.protocol_type,
                                   g.authorized_operations) for g in r.groups])),
        ("ConsumerGroupHeartbeat", 68, 0, cgh("ok-cg", ["tok"]), lambda r: (r.error_code, r.member_epoch)),
        ("ConsumerGroupHeartbeat topic", 68, 0, cgh("ok-cg2", ["tok", "tno"]), lambda r: (r.error_code, r.member_id)),
        ("ConsumerGroupDescribe", 69, 0, dict(group_ids=["ok-cg", "ok-admin-cg", "desc-only", "nope"],
                                              include_authorized_operations=True),
         lambda r: refused_first([(g.group_id, g.error_code, g.error_message, g.group_state,
                                   g.authorized_operations, len(g.members)) for g in r.groups])),
        ("ListGroups", 16, 4, dict(states_filter=[]),
         lambda r: sorted(g.group_id for g in r.groups if g.group_id.startswith(("ok-", "desc-", "nope")))),
        ("DeleteGroups", 42, 2, dict(groups_names=["ok-none", "desc-only", "nope", "ok-none", "ok-c"]),
         lambda r: refused_first([(g.group_id, g.error_code) for g in r.results])),
    ]


def topic_ids(cluster) -> dict:
    with Wire(f"127.0.0.1:{cluster.nodes[0].plaintext_port}") as w:
        resp = call(w, 3, 12, topics=None, allow_auto_topic_creation=False)
    return {t.name: t.topic_id for t in resp.topics}


def admin_setup(bootstrap: str, ids: dict) -> None:
    """State both sides start the users' steps from: offsets of group ok-admin on tok and tno, and a
    consumer group ok-admin-cg whose member is assigned tno (alice may describe the group, not tno)."""
    with login(bootstrap, "admin") as w:
        deadline = time.monotonic() + 30
        while call(w, 10, 3, key_type=0, key="ok-admin").error_code and time.monotonic() < deadline:
            time.sleep(0.3)      # FindCoordinator makes the broker create __consumer_offsets
        while True:      # NOT_COORDINATOR while its partitions load
            commit = call(w, 8, 8, group_id="ok-admin", generation_id_or_member_epoch=-1, member_id="", topics=[
                _req(8, "OffsetCommitRequestTopic", name=t, partitions=[
                    _req(8, "OffsetCommitRequestPartition", partition_index=0, committed_offset=3,
                         committed_metadata="")]) for t in ("tok", "tno")])
            codes = {p.error_code for t in commit.topics for p in t.partitions}
            if not codes & {14, 15, 16} or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert {p.error_code for t in commit.topics for p in t.partitions} == {0}, commit
        hb = call(w, 68, 0, group_id="ok-admin-cg", member_id="", member_epoch=0, rebalance_timeout_ms=30000,
                  subscribed_topic_names=["tno"], topic_partitions=[])
        assert hb.error_code == 0, hb


def run_steps(bootstrap: str, user: str, ids: dict) -> dict:
    out = {}
    with login(bootstrap, user) as w:
        for label, key, version, fields, view in steps(ids):
            try:
                out[label] = view(call(w, key, version, **fields))
            except (ConnectionError, OSError) as e:
                out[label] = f"connection lost: {e}"
                break
    return out


def test_group_apis_authorized_as_the_broker_does(authz_kafka, authz_kshim):
    ids = topic_ids(authz_kafka)
    time.sleep(1.0)                     # kshim's topic catalog and ACLs are fresh
    results = {}
    # kshim first: the broker side's groups (same ids, one broker) would otherwise be the broker's
    # groups to kshim (shim/groupservice/adoption.py: a live group there stays the broker's)
    for side, bootstrap in (("kshim", authz_kshim.bootstrap), ("broker", authz_kafka.bootstrap)):
        admin_setup(bootstrap, ids)
        for user in ("alice", "mallory"):
            results[(side, user)] = run_steps(bootstrap, user, ids)
    diffs = []
    for user in ("alice", "mallory"):
        b, k = results[("broker", user)], results[("kshim", user)]
        for label in b:
            if b[label] != k.get(label):
                diffs.append(f"{user} {label}:\n  broker {b[label]}\n  kshim  {k.get(label)}")
    assert not diffs, "\n".join(diffs)
    # the checks did something: alice is refused some, allowed others; mallory refused all groups
    alice = results[("broker", "alice")]
    assert alice["JoinGroup ok"][0] == 79 and alice["JoinGroup desc-only"][0] == 30
    assert ("tno", 0, 29) in alice["OffsetCommit mixed"] and ("tok", 0, 0) in alice["OffsetCommit mixed"]
    assert results[("broker", "mallory")]["JoinGroup ok"][0] == 30


def regex_assignment(bootstrap: str, group: str, ids: dict) -> set[str]:
    """alice joins `group` with the regex "t.*" (ConsumerGroupHeartbeat v1) and heartbeats until she
    is assigned something: the topic names of her assignment (the broker resolves regexes
    asynchronously, so the first answers carry nothing)."""
    names = {tid: n for n, tid in ids.items()}
    with login(bootstrap, "alice") as w:
        deadline = time.monotonic() + 30
        member = str(uuid.uuid4())
        while True:      # the broker creates and loads __consumer_offsets on demand
            hb = call(w, 68, 1, group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=30000,
                      subscribed_topic_regex="t.*", topic_partitions=[])
            if hb.error_code not in (14, 15, 16) or time.monotonic() > deadline:
                break
            call(w, 10, 3, key_type=0, key=group)
            time.sleep(0.3)
        assert hb.error_code == 0, hb
        while hb.assignment is None or not hb.assignment.topic_partitions:
            assert time.monotonic() < deadline, "no assignment for the regex"
            time.sleep(0.3)
            hb = call(w, 68, 1, group_id=group, member_id=hb.member_id, member_epoch=hb.member_epoch,
                      rebalance_timeout_ms=-1, topic_partitions=None)
            assert hb.error_code == 0, hb
        return {names[tp.topic_id] for tp in hb.assignment.topic_partitions}


def test_regex_subscription_resolves_only_describable_topics(authz_kafka, authz_kshim):
    """KIP-848 regex resolution is filtered by the member's TOPIC DESCRIBE right, on both sides:
    alice may describe tok (READ) and tdesc, not tno, so "t.*" assigns her tok and tdesc only."""
    ids = topic_ids(authz_kafka)
    time.sleep(1.0)
    broker = regex_assignment(authz_kafka.bootstrap, "ok-rx-broker", ids)
    shim = regex_assignment(authz_kshim.bootstrap, "ok-rx-kshim", ids)
    assert shim == broker == {"tok", "tdesc"}


def test_group_request_before_sasl_closes_the_connection(authz_kafka, authz_kshim):
    for bootstrap in (authz_kafka.bootstrap, authz_kshim.bootstrap):
        with Wire(bootstrap) as w:
            w.send(12, 4, api.REQUESTS[12](group_id="ok-a", generation_id=1, member_id="m"))
            assert w.closed_by_peer(), bootstrap


def test_acl_changes_reach_kshim(authz_kafka, authz_kshim):
    """A DENY added on the broker applies through kshim after the next refresh (300 ms here)."""
    group = f"ok-late-{uuid.uuid4().hex[:6]}"
    with login(authz_kshim.bootstrap, "alice") as w:
        assert call(w, 12, 4, group_id=group, generation_id=1, member_id="m").error_code != 30
    _create_acls(authz_kafka, [_binding("GROUP", group, "LITERAL", "alice", "READ", "DENY")])
    deadline = time.monotonic() + 10
    codes = {}
    while time.monotonic() < deadline:
        for side, bootstrap in (("broker", authz_kafka.bootstrap), ("kshim", authz_kshim.bootstrap)):
            with login(bootstrap, "alice") as w:
                codes[side] = call(w, 12, 4, group_id=group, generation_id=1, member_id="m").error_code
        if codes == {"broker": 30, "kshim": 30}:
            return
        time.sleep(0.2)
    raise AssertionError(f"DENY not applied: {codes}")


def test_consumer_without_group_read_fails_alike(authz_kafka, authz_kshim):
    """confluent-kafka: mallory may read topic tok but has no group ACL: GROUP_AUTHORIZATION_FAILED
    from the broker and through kshim."""
    from confluent_kafka import Consumer, KafkaError, KafkaException
    seen = {}
    for side, bootstrap in (("broker", authz_kafka.bootstrap), ("kshim", authz_kshim.bootstrap)):
        c = Consumer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                      "sasl.mechanism": "PLAIN", "sasl.username": "mallory", "sasl.password": USERS["mallory"],
                      "group.id": f"mallory-{side}", "auto.offset.reset": "earliest"})
        try:
            c.subscribe(["tok"])
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and side not in seen:
                try:
                    msg = c.poll(0.5)
                except KafkaException as e:
                    seen[side] = e.args[0].code()
                    break
                if msg is not None and msg.error():
                    seen[side] = msg.error().code()
        finally:
            c.close()
    assert seen == {"broker": KafkaError.GROUP_AUTHORIZATION_FAILED, "kshim": KafkaError.GROUP_AUTHORIZATION_FAILED}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_authorized_consumer_through_kshim(authz_kafka, authz_kshim, mechanism):
    """alice (principal read from her SCRAM client-first / PLAIN token) consumes and commits with a
    group she may READ, through kshim; her committed offsets are visible to her (OffsetFetch)."""
    from confluent_kafka import TopicPartition
    from testsuite.harness.clients import ck_consume, ck_produce
    ck_produce(authz_kafka.plaintext_bootstrap, "tok", [b"v%d" % i for i in range(10)])
    conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": "alice",
            "sasl.password": USERS["alice"]}
    group = f"ok-consumer-{mechanism.lower()}-{uuid.uuid4().hex[:6]}"
    got = ck_consume(authz_kshim.bootstrap, "tok", group, 10, timeout=45, **conf)
    assert len(got) >= 10
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": authz_kshim.bootstrap, "group.id": group, **conf})
    try:
        committed = c.committed([TopicPartition("tok", p) for p in range(TOPICS["tok"])], timeout=20)
    finally:
        c.close()
    assert sum(max(tp.offset, 0) for tp in committed) == len(got)


def test_authorizer_needs_a_broker_with_an_authorizer(kafka, tmp_path):
    """Against a broker without an authorizer (DescribeAcls: SECURITY_DISABLED) `kshim run
    --authorizer` does not start, and says why."""
    import subprocess
    import sys
    port = free_port_block(3, start=32600)
    out = subprocess.run([sys.executable, "-m", "shim.cli", "run", "--upstream", kafka.bootstrap, "--listen-port",
                          str(port), "--state-topic", "", "--authorizer"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out
    assert "no authorizer" in out.stderr and "SECURITY_DISABLED" in out.stderr, out.stderr
