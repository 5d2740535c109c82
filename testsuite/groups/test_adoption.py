"""Moving an application between the broker and kshim keeps its position (living beside the
broker). A consumer reads part of a topic directly from the broker and commits; pointed at kshim it
resumes at the committed offsets (kshim adopts the group: shim/groupservice/adoption.py); after `kshim
groups export`, pointed back at the broker, it resumes where it stopped through kshim: 0 records
read twice, 0 skipped, with librdkafka (manual commits) and the Java console consumer (auto commit,
one record per poll so the committed position is the last record printed)."""

from __future__ import annotations

import subprocess
import sys
import time

from shim.compat.pymembers import create_topic
from testsuite.harness.clients import ck_produce


def _rdkafka_read(bootstrap: str, topic: str, group: str, count: int, settle: float = 0.0) -> list[bytes]:
    """Read up to `count` records (committing each); with `settle`, go on that many seconds and return
    any record beyond them too (the end of the topic was expected: extras fail the test)."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    extra_until = None
    while time.monotonic() < (extra_until or deadline):
        m = c.poll(0.3)
        if m is not None and not m.error():
            if len(got) < count:
                got.append(m.value())
                c.commit(message=m, asynchronous=False)
            else:
                got.append(m.value())          # one too many: the test fails on it
        if len(got) >= count and extra_until is None:
            if not settle:
                break
            extra_until = time.monotonic() + settle
    c.close()
    return got


def _export(kafka, *groups: str) -> str:
    cmd = [sys.executable, "-m", "shim.cli", "groups", "export", "--upstream", kafka.bootstrap]
    for g in groups:
        cmd += ["--group", g]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_librdkafka_consumer_moves_to_kshim_and_back(kshim, kafka, names):
    topic, group = names.topic(), names.group()
    create_topic(kafka.bootstrap, topic, partitions=3)
    first = [b"a%03d" % i for i in range(90)]
    ck_produce(kafka.bootstrap, topic, first, spread=3)
    direct = _rdkafka_read(kafka.bootstrap, topic, group, 45)
    through = _rdkafka_read(kshim.bootstrap, topic, group, 45)
    assert len(direct) == 45 and len(through) == 45
    assert not set(direct) & set(through) and sorted(direct + through) == sorted(first)
    assert f"adopted group {group} from the broker" in kshim.log_text()

    second = [b"b%03d" % i for i in range(30)]
    ck_produce(kafka.bootstrap, topic, second, spread=3)
    more = _rdkafka_read(kshim.bootstrap, topic, group, 10)
    out = _export(kafka, group)
    assert f"{group}:" in out and "exported" in out
    back = _rdkafka_read(kafka.bootstrap, topic, group, 20, settle=3.0)
    assert sorted(more + back) == sorted(second)            # 0 re-read, 0 skipped


def test_java_console_consumer_moves_to_kshim_and_back(kshim, kafka, kafka_install, names):
    topic, group = names.topic(), names.group()
    create_topic(kafka.bootstrap, topic, partitions=2)
    values = [f"j{i:03d}" for i in range(60)]
    ck_produce(kafka.bootstrap, topic, [v.encode() for v in values], spread=2)

    def console(bootstrap: str, n: int) -> list[str]:
        cmd = kafka_install.java_cmd("org.apache.kafka.tools.consumer.ConsoleConsumer", [
            "--bootstrap-server", bootstrap, "--topic", topic, "--group", group, "--max-messages", str(n),
            "--timeout-ms", "20000", "--consumer-property", "max.poll.records=1",
            "--consumer-property", "auto.offset.reset=earliest"])
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return [ln for ln in out.stdout.splitlines() if ln.startswith("j")]

    direct = console(kafka.bootstrap, 20)
    through = console(kshim.bootstrap, 20)
    _export(kafka, group)
    back = console(kafka.bootstrap, 20)
    assert [len(direct), len(through), len(back)] == [20, 20, 20]
    assert sorted(direct + through + back) == values             # 0 re-read, 0 skipped


def test_groups_import_adopts_ahead_of_time(kshim, kafka, names):
    topic, group, other = names.topic(), names.group("imp"), names.group("skip")
    create_topic(kafka.bootstrap, topic, partitions=1)
    ck_produce(kafka.bootstrap, topic, [b"i%02d" % i for i in range(10)])
    assert len(_rdkafka_read(kafka.bootstrap, topic, group, 4)) == 4
    assert len(_rdkafka_read(kafka.bootstrap, topic, other, 2)) == 2
    out = subprocess.run([sys.executable, "-m", "shim.cli", "groups", "import", "--upstream", kafka.bootstrap,
                          "--kshim", kshim.bootstrap, "--group", group], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{group}: 1 offsets held by kshim" in out.stdout and "imported 1 of 1 groups" in out.stdout
    log = kshim.log_text()
    assert f"adopted group {group} from the broker" in log and f"adopted group {other}" not in log
    assert _rdkafka_read(kshim.bootstrap, topic, group, 6) == [b"i%02d" % i for i in range(4, 10)]


def test_a_live_consumer_group_on_the_broker_stays_the_brokers(kshim, kafka, names):
    """A KIP-848 group with a live member on the broker (DescribeGroups answers 'not a classic group'
    for it; ConsumerGroupDescribe shows the member): a member joining through kshim joins the
    broker's group, not a second group of the same id in kshim."""
    import uuid

    from kcodec.generated.consumer_group_describe import ConsumerGroupDescribeRequest
    from kcodec.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
    from kcodec.protocol import ApiKey, Error
    from shim.compat.wire import Wire

    def call(addr, key, body, v=1):
        with Wire(addr) as w:
            w.send(key, v, body)
            return w.read_response(key, v)[1]

    topic, group = names.topic(), names.group("live")
    create_topic(kafka.bootstrap, topic, partitions=2)

    def join(addr):
        deadline = time.monotonic() + 30
        while True:
            r = call(addr, ApiKey.CONSUMER_GROUP_HEARTBEAT, ConsumerGroupHeartbeatRequest(
                group_id=group, member_id=str(uuid.uuid4()), member_epoch=0, rebalance_timeout_ms=30000,
                subscribed_topic_names=[topic], topic_partitions=[]))
            if r.error_code != Error.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
                return r
            time.sleep(0.3)
    assert join(kafka.bootstrap).error_code == Error.NONE
    assert join(kshim.bootstrap).error_code == Error.NONE
    described = call(kafka.bootstrap, ApiKey.CONSUMER_GROUP_DESCRIBE, ConsumerGroupDescribeRequest(group_ids=[group]))
    assert len(described.groups[0].members) == 2
    assert f"group {group} has live members on the broker" in kshim.log_text()
