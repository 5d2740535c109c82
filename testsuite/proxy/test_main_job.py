"""The README's main job: `kshim run` with no upstream starts a local real Kafka, puts kshim in
front of it, serves clients, and stops both cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from shim.compat.pymembers import create_topic
from shim.localkafka import probe_brokers
from testsuite.harness.clients import ck_consume, ck_produce
from shim.testing.ports import free_port_block


@pytest.mark.kafka
def test_kshim_run_without_upstream_starts_local_kafka(tmp_path):
    kport = free_port_block(2, start=46000 + (os.getpid() % 50) * 20)
    lport = free_port_block(5, start=47000 + (os.getpid() % 50) * 20)
    log = open(tmp_path / "run.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "shim.cli", "run", "--listen-port", str(lport),
                             "--local-kafka-port", str(kport), "--group-initial-rebalance-delay-ms", "0"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while "kshim listening" not in (tmp_path / "run.log").read_text():
            assert proc.poll() is None, (tmp_path / "run.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "run.log").read_text()
            time.sleep(0.2)
        text = (tmp_path / "run.log").read_text()
        assert "Apache Kafka 4." in text and f"127.0.0.1:{kport}" in text
        assert f"bootstrap servers for clients = 127.0.0.1:{lport}" in text
        bootstrap = f"127.0.0.1:{lport}"
        create_topic(bootstrap, "main-job", 2)
        ck_produce(bootstrap, "main-job", [b"a", b"b", b"c"])
        assert sorted(ck_consume(bootstrap, "main-job", "main-job-group", 3)) == [b"a", b"b", b"c"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        rc = proc.wait(60)
        log.close()
    text = (tmp_path / "run.log").read_text()
    assert rc == 0, text
    assert "kshim stopped." in text and "stopping the local Kafka" in text
    with pytest.raises(OSError):
        probe_brokers(kport, timeout=1)
