"""Transactions that end without the client's EndTxn passing through kshim: timed out by the
transaction coordinator, fenced by a new InitProducerId sent straight to the broker, aborted with
`kafka-transactions.sh abort`. Each holds offsets for a group that a read_committed consumer then
joins (OffsetFetch RequireStable: UNSTABLE_OFFSET_COMMIT while pending). The broker's group
coordinator learns the end from the transaction's markers; so must kshim (groupservice/txn_markers.py), so
the consumer gets its first record at the same time on both sides.

Both sides run at once against the same broker, so the transaction coordinator's periodic abort of
timed-out transactions (every 10 s) ends both transactions in the same pass."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from shim.compat.pymembers import create_topic
from testsuite.groups.test_transactions import UNSTABLE_OFFSET_COMMIT, _fetch_stable
from testsuite.harness.clients import ck_produce

pytestmark = pytest.mark.timing   # compares wall-clock measurements: runs alone (scripts/test)

TXN_TIMEOUT_MS = 10_000


def _open_transaction(bootstrap: str, tid: str, group: str, topic: str, offset: int = 3):
    """A transactional producer that sends offsets for `group` and is then left alone (its
    transaction stays open); returns it (kept referenced: librdkafka must not end it)."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    meta = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                         "transaction.timeout.ms": TXN_TIMEOUT_MS})
    try:
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, offset)], meta.consumer_group_metadata(), 60)
    finally:
        meta.close()
    return producer


def _first_record(bootstrap: str, group: str, topic: str, out: dict, key: str, limit: float = 120.0) -> None:
    """A read_committed member of `group`: when it got its first record, and its offset (None: none)."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                out[key] = (time.monotonic(), m.offset())
                return
        out[key] = None
    finally:
        c.close()


class _AbortWatch(threading.Thread):
    """Asks the transaction coordinator (DescribeTransactions) every 0.1 s when each transaction
    stopped being Ongoing: the moment its abort began, the same for both sides whatever the phase
    of the coordinator's periodic timeout check."""

    def __init__(self, broker: str, tids: dict[str, str]):
        super().__init__(daemon=True)
        self.broker, self.tids, self.at, self.halt = broker, tids, {}, threading.Event()

    def run(self) -> None:
        from kcodec.generated.describe_transactions import DescribeTransactionsRequest
        from shim.compat.wire import Wire
        with Wire(self.broker) as w:
            while len(self.at) < len(self.tids) and not self.halt.is_set():
                w.send(65, 0, DescribeTransactionsRequest(transactional_ids=list(self.tids.values())))
                _, body = w.read_response(65, 0)
                for st in body.transaction_states:
                    side = next(s for s, t in self.tids.items() if t == st.transactional_id)
                    if st.transaction_state != "Ongoing" and side not in self.at:
                        self.at[side] = time.monotonic()
                time.sleep(0.1)


def _both_sides(kafka, kshim, names, tag: str, prepare=None, end_it=None, opener=None) -> dict:
    """Open a transaction on each side; start each side's read_committed member (blocked); then
    `end_it(prepare(tid, group))` on each side in turn: seconds from the start of the side's opener
    (before its transaction began; or from the start of the side's `end_it`) to that side's first record, and its offset; `after_abort`: seconds
    from the transaction coordinator's abort to the first record."""
    sides = {"broker": kafka.bootstrap, "kshim": kshim.bootstrap}
    topic = names.topic(tag)
    create_topic(kafka.bootstrap, topic, 1)
    ck_produce(kafka.bootstrap, topic, [b"r%d" % i for i in range(6)])
    opened, since = {}, {}

    def open_side(side: str, boot: str) -> None:      # (both at once: their timeouts end together)
        tid, group = names.instance(f"{tag}-{side}"), names.group(f"{tag}-{side}")
        # The clock starts before the opener: the transaction coordinator's own timer starts at the
        # transaction's first AddOffsetsToTxn / AddPartitionsToTxn (TransactionMetadata.txnStartTimestamp),
        # which is inside the opener, so the abort can never come sooner than the timeout after this.
        since[side] = time.monotonic()
        opened[side] = ((opener or _open_transaction)(boot, tid, group, topic), tid, group)
    openers = [threading.Thread(target=open_side, args=item) for item in sides.items()]
    for t in openers:
        t.start()
    for t in openers:
        t.join()
    assert set(opened) == set(sides), opened
    for side, boot in sides.items():
        assert _fetch_stable(boot, opened[side][2], topic) == (UNSTABLE_OFFSET_COMMIT, -1), side
    aborts = _AbortWatch(kafka.bootstrap, {side: opened[side][1] for side in sides})
    aborts.start()
    prepared = {side: prepare(*opened[side][1:]) if prepare else None for side in sides}
    first: dict = {}
    threads = [threading.Thread(target=_first_record, args=(boot, opened[side][2], topic, first, side))
               for side, boot in sides.items()]
    for t in threads:
        t.start()
    time.sleep(3)                                 # (both members joined and blocked)
    if end_it is not None:
        for side in sides:
            assert side not in first, first       # still blocked
            since[side] = time.monotonic()
            end_it(prepared[side])
    for t in threads:
        t.join()
    aborts.halt.set()
    aborts.join()
    got = {side: None if first.get(side) is None else (first[side][0] - since[side], first[side][1])
           for side in sides}
    got["after_abort"] = {side: round(first[side][0] - aborts.at[side], 2)
                          for side in sides if first.get(side) and side in aborts.at}
    got["aborts_apart"] = round(abs(aborts.at["kshim"] - aborts.at["broker"]), 2) if len(aborts.at) == 2 else None
    print(tag, got)
    opened.clear()                                # (the producers were kept alive until here)
    return got


def test_a_timed_out_transaction_unblocks_the_group_as_on_the_broker(kafka, kshim, names):
    """The transaction coordinator aborts an abandoned transaction after its timeout; the group's
    read_committed member then starts from the beginning (the offsets were never committed). Through
    kshim it starts as soon as on the broker, not after kshim's own fallback (90 s)."""
    got = _both_sides(kafka, kshim, names, "abandoned")
    assert got["broker"] is not None and got["kshim"] is not None, got
    (broker_s, broker_offset), (kshim_s, kshim_offset) = got["broker"], got["kshim"]
    assert broker_offset == kshim_offset == 0
    assert TXN_TIMEOUT_MS / 1000 <= broker_s < 45, got
    assert abs(kshim_s - broker_s) <= 2.0 or _other_pass(got), got
    assert abs(got["after_abort"]["kshim"] - got["after_abort"]["broker"]) <= 2.0, got


def test_a_java_producer_killed_mid_transaction_unblocks_the_group_as_on_the_broker(kafka, kshim, names,
                                                                                     kafka_install, tmp_path):
    """The same with the Java client (transactions v2 on a 4.x broker: TxnOffsetCommit v5, whose
    partition kshim enlists itself) killed with SIGKILL right after sendOffsetsToTransaction."""
    from shim.compat.javaclient import JavaTools
    from testsuite.harness.javaapps import compile_app, start_app
    from shim.groupservice.txn_verify import offsets_partition
    classes = compile_app("TxnAbandon.java", tmp_path / "classes")
    enlisted = {}

    def java_opener(boot, tid, group, topic):
        tools = JavaTools(kafka_install, boot, tmp_path / tid)
        app = start_app(tools, "TxnAbandon", [boot, tid, group, topic, "3", str(TXN_TIMEOUT_MS)], tid,
                        [str(classes)])
        app.wait_event("sent", timeout=90)
        app.kill()
        d = _describe(kafka, tid)        # the group's offsets partition is in the transaction on both sides
        enlisted[boot] = (d["TransactionState"], d.get("TopicPartitions", ""),
                          f"__consumer_offsets-{offsets_partition(group, _offsets_partitions(kafka))}")
        return app
    got = _both_sides(kafka, kshim, names, "javakill", opener=java_opener)
    assert [(state, parts == want) for state, parts, want in enlisted.values()] == [("Ongoing", True)] * 2, enlisted
    assert got["broker"] is not None and got["kshim"] is not None, got
    assert got["broker"][1] == got["kshim"][1] == 0
    assert TXN_TIMEOUT_MS / 1000 <= got["broker"][0] < 45, got
    assert abs(got["kshim"][0] - got["broker"][0]) <= 2.0 or _other_pass(got), got
    assert abs(got["after_abort"]["kshim"] - got["after_abort"]["broker"]) <= 2.0, got


def test_a_producer_fenced_behind_kshims_back_unblocks_the_group(kafka, kshim, names):
    """A new instance of the transactional id initialises straight at the broker (not through kshim):
    the coordinator aborts the open transaction and writes its markers."""
    from confluent_kafka import Producer
    successors = []

    def fence(tid):
        successor = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": tid})
        successor.init_transactions(60)
        successors.append(successor)
    got = _both_sides(kafka, kshim, names, "fenced", lambda tid, group: tid, fence)
    assert got["broker"] is not None and got["kshim"] is not None, got
    assert got["broker"][0] < 5, got        # not the timeout: the fencing
    assert abs(got["kshim"][0] - got["broker"][0]) <= 2.0, got
    assert got["kshim"][1] == got["broker"][1] == 0


def _describe(kafka, tid: str) -> dict[str, str]:
    out = subprocess.run([str(kafka.kafka.home / "bin" / "kafka-transactions.sh"), "--bootstrap-server", kafka.bootstrap,
                          "describe", "--transactional-id", tid], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    header, row = [line.split("\t") for line in out.stdout.strip().splitlines()[:2]]
    return {h.strip(): v.strip() for h, v in zip(header, row)}


def test_kafka_transactions_abort_unblocks_both_sides_at_once(kafka, kshim, names):
    """`kafka-transactions.sh abort` writes an ABORT marker into the group's __consumer_offsets
    partition (WriteTxnMarkers from the admin client): the pending offsets go on both sides."""
    from shim.groupservice.txn_verify import offsets_partition

    def prepare(tid, group):
        d = _describe(kafka, tid)
        p = offsets_partition(group, _offsets_partitions(kafka))
        return [str(kafka.kafka.home / "bin" / "kafka-transactions.sh"), "--bootstrap-server", kafka.bootstrap,
                "abort", "--topic", "__consumer_offsets", "--partition", str(p), "--producer-id", d["ProducerId"],
                "--producer-epoch", d["ProducerEpoch"], "--coordinator-epoch", "0"]

    def abort(cmd):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
    got = _both_sides(kafka, kshim, names, "adminabort", prepare, abort)
    assert got["broker"] is not None and got["kshim"] is not None, got
    assert got["broker"][0] < 5, got
    assert abs(got["kshim"][0] - got["broker"][0]) <= 1.0, got


def _offsets_partitions(kafka) -> int:
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics("__consumer_offsets", timeout=30)
    return len(md.topics["__consumer_offsets"].partitions)


def _other_pass(got: dict) -> bool:
    """The two transactions timed out on either side of one of the coordinator's periodic checks
    (every 10 s), so one was aborted a pass later: compared from the aborts instead."""
    return got["aborts_apart"] is not None and got["aborts_apart"] > 5


def test_a_transaction_fenced_while_kshim_was_down_is_seen_after_its_restart(kafka, names):
    """Offsets pending in one kshim (state topic), which is then SIGKILLed; the producer is fenced
    straight at the broker meanwhile (its ABORT marker is written while no kshim holds the offsets).
    The restarted kshim replays them with the floor their records keep and reads that marker."""
    import os
    import uuid

    from confluent_kafka import Producer
    from testsuite.conftest import RUN_DIR
    from shim.testing.kshimproc import KshimProcess
    from shim.testing.ports import free_port_block
    state = f"__kshim_state_{uuid.uuid4().hex[:8]}"
    port = free_port_block(5, start=35500 + (os.getpid() % 97) * 40)
    log = RUN_DIR / "kshim" / f"txn-fenced-while-down-{uuid.uuid4().hex[:6]}.log"
    first = KshimProcess(kafka.bootstrap, port, log, ["--state-topic", state]).start()
    topic, group, tid = names.topic("down"), names.group("down"), names.instance("down")
    create_topic(kafka.bootstrap, topic, 1)
    second = None
    try:
        producer = _open_transaction(first.bootstrap, tid, group, topic)
        assert _fetch_stable(first.bootstrap, group, topic) == (UNSTABLE_OFFSET_COMMIT, -1)
        first.kill()
        Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": tid}).init_transactions(60)
        second = KshimProcess(kafka.bootstrap, port, log, ["--state-topic", state]).start()
        t0 = time.monotonic()
        while _fetch_stable(second.bootstrap, group, topic) != (0, -1) and time.monotonic() - t0 < 30:
            time.sleep(0.1)
        took = time.monotonic() - t0
        print(f"the restarted kshim dropped the fenced transaction's offsets {took:.2f} s after it started")
        assert _fetch_stable(second.bootstrap, group, topic) == (0, -1)
        assert took < 5.0
        del producer
    finally:
        if second is not None:
            second.stop()
        first.stop()
