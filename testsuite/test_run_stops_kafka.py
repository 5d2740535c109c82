"""`kshim run` without --upstream starts a local real Kafka and stops it on Ctrl-C, also when its output
goes to a pipe that Ctrl-C closed first (`scripts/up | tee up.log`: tee dies of the same SIGINT, and
kshim's next line would fail with EPIPE). Before, the failed "kshim stopped." line skipped the stop
and left Kafka running, holding its port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from shim.testing.ports import free_port_block
from testsuite.conftest import _SPREAD

pytestmark = pytest.mark.kafka


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_ctrl_c_with_the_output_pipe_closed_stops_the_local_kafka(tmp_path):
    base = free_port_block(10, start=25100 + _SPREAD)
    kafka_port, listen = base, base + 5
    r, w = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "shim.cli", "run", "--local-kafka-port", str(kafka_port),
                             "--listen-port", str(listen)], stdout=w, stderr=w, cwd=tmp_path,
                            start_new_session=True)
    os.close(w)
    out = b""
    try:
        deadline = time.monotonic() + 120
        while b"kshim listening" not in out and time.monotonic() < deadline and proc.poll() is None:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            out += chunk
        assert b"kshim listening" in out, out.decode(errors="replace")[-2000:]
        assert _listening(kafka_port)
        os.close(r)                       # the reader is gone (tee killed by the same Ctrl-C) ...
        r = None
        proc.send_signal(signal.SIGINT)   # ... then kshim gets its SIGINT
        assert proc.wait(timeout=60) == 0
        deadline = time.monotonic() + 30  # (the local Kafka's stop waits for its nodes to exit)
        while _listening(kafka_port) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _listening(kafka_port), "the local Kafka was left running"
    finally:
        if r is not None:
            os.close(r)
        if proc.poll() is None:
            proc.kill()
