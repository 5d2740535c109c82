"""Fixtures of the scale-out tests: several kshim instances in front of one real Kafka."""

from __future__ import annotations

import os
import uuid

import pytest

from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block
from testsuite.conftest import RUN_DIR

SESSION_MS = 6000


@pytest.fixture
def instances(kafka, request):
    """instances(tag) -> a kshim process with scale_out on a state topic of this test's own."""
    procs: list[KshimProcess] = []
    state_topic = f"__kshim_state_{uuid.uuid4().hex[:8]}"

    def start(tag: str) -> KshimProcess:
        port = free_port_block(5, start=36000 + (os.getpid() % 97) * 40 + len(procs) * 10)
        proc = KshimProcess(kafka.bootstrap, port, RUN_DIR / "kshim" / f"{request.node.name}-{tag}.log",
                            ["--state-topic", state_topic, "--scale-out",
                             "--scale-out-session-timeout-ms", str(SESSION_MS)]).start()
        procs.append(proc)
        return proc
    yield start
    for p in procs:
        p.stop()
