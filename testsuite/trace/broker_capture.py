"""The capture every `kshim trace import` test of a real broker reads (test_trace_import_broker.py,
test_offsets_records_kafka.py): one run of the rebalance scenario and a KIP-848 group's life straight
against the broker, captured on its port, with the consumers' own logs and the broker's log lines of
that time. A session fixture (testsuite/trace/conftest.py): both modules read the same run."""

from __future__ import annotations

import time

from shim.compat.pymembers import create_topic
from testsuite.harness import tcpdump
from testsuite.trace.python_members import PARTITIONS, member, poll_until
from testsuite.trace.rebalance_scenario import run_scenario


def _consumer_group(bootstrap: str, topic: str, group: str, marks: list[dict]) -> None:
    """A KIP-848 group of librdkafka consumers: cg-a joins, cg-b joins; both heartbeat a while (a
    capture cut there starts in the middle of the group's life); cg-a leaves, then cg-b. Marks each step
    with its wall time."""
    create_topic(bootstrap, topic, PARTITIONS)
    a = member(bootstrap, group, topic, "cg-a", consumer_protocol=True)
    assert poll_until([a], lambda: len(a.owned) == PARTITIONS, 90), a.owned
    b = member(bootstrap, group, topic, "cg-b", consumer_protocol=True)
    assert poll_until([a, b], lambda: len(a.owned) == 1 and len(b.owned) == 1, 90), (a.owned, b.owned)
    poll_until([a, b], lambda: False, 4)
    marks.append({"step": "cg_stable", "wall_ms": int(time.time() * 1000)})
    poll_until([a, b], lambda: False, 7)           # (over a heartbeat interval: each member reports in)
    a.close()
    marks.append({"step": "cg_a_closed", "wall_ms": int(time.time() * 1000)})
    assert poll_until([b], lambda: len(b.owned) == PARTITIONS, 60), b.owned
    b.close()
    marks.append({"step": "cg_b_closed", "wall_ms": int(time.time() * 1000)})


def capture_broker(kafka, kafka_install, tmp_path_factory) -> dict:
    """The scenario (4 members: one stalls its poll loop, a static one is bounced, one is killed) run
    straight against the broker while tcpdump captures its port, then a KIP-848 group's life; the
    broker's own log lines of that time in `broker.log`."""
    d = tmp_path_factory.mktemp("broker-capture")
    topic, group_id = "capture-topic", "capture-group"
    port = int(kafka.bootstrap.rsplit(":", 1)[1])
    since = kafka.node(1).log_file.stat().st_size
    cap = tcpdump.Capture(d / "broker.pcap", [port]).start()
    try:
        marks, logs = run_scenario(kafka_install, kafka.bootstrap, topic, group_id, d, members=4)
        cg_marks: list[dict] = []
        _consumer_group(kafka.bootstrap, "capture-cg-topic", "capture-cg", cg_marks)
        time.sleep(1)                             # (the broker logs the last leave's lines)
    finally:
        cap.stop()
    with open(kafka.node(1).log_file, "rb") as f:
        f.seek(since)
        (d / "broker.log").write_bytes(f.read())
    return {"dir": d, "pcap": d / "broker.pcap", "port": port, "group": group_id, "logs": logs, "marks": marks,
            "cg_group": "capture-cg", "cg_marks": cg_marks, "broker_log": d / "broker.log"}
