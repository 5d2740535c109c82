"""KIP-848 offset retention, kshim versus the real broker (scenario cg-retention): both run with a
one-minute offsets retention checked every second, on a broker of their own (offsets.retention.minutes
is a static broker setting). The broker's observations must be Kafka 4.3's behaviour and kshim's the same."""

from __future__ import annotations

import pytest

from shim.compat.diff import compare
from shim.compat.report import table
from shim.compat.runner import Target, run_all
from shim.compat.scenarios import plan
from shim.localkafka import LocalKafka
from testsuite.conftest import _SPREAD, RUN_DIR
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block

RETENTION = {"offsets.retention.minutes": "1", "offsets.retention.check.interval.ms": "1000"}


@pytest.mark.kafka
def test_consumer_group_retention_kshim_matches_kafka(kafka_install, tmp_path):
    broker = LocalKafka(nodes=1, base_port=free_port_block(2, start=29600 + _SPREAD), workdir=RUN_DIR / "kafka-retention",
                        kafka=kafka_install, overrides=RETENTION).start()
    kshim = None
    try:
        kshim = KshimProcess(broker.bootstrap, free_port_block(5, start=32600 + _SPREAD), RUN_DIR / "kshim" / "retention.log",
                             ["--offsets-retention-minutes", "1", "--offsets-retention-check-interval-ms", "1000"]).start()
        targets = [Target("Kafka", broker.bootstrap), Target("kshim", kshim.bootstrap)]
        run_all(targets, kafka_install, plan(["cg-retention"], ["wire"], ["consumer"]), tmp_path)
        seen, through = targets[0].results["cg-retention [wire, consumer]"], targets[1].results
        diffs = compare(targets[0].results, through)
        assert not diffs, table(["Kafka", "kshim"], diffs)
        assert seen["commit"] == ["NONE"], seen
        offsets = seen["while_member_active"]["offsets"]
        assert offsets[0] == {0: 5, 1: 6} and offsets[1] == {0: -1}, seen      # subscribed kept, other expired
        assert seen["while_member_active"]["describe"] == ("NONE", "Stable"), seen
        after = seen["after_empty"]
        assert after["describe"] == "GROUP_ID_NOT_FOUND" and not after["listed"], seen
        assert after["offsets"] == [{0: -1, 1: -1}, {0: -1}], seen
    finally:
        if kshim is not None:
            kshim.stop()
        broker.stop()
