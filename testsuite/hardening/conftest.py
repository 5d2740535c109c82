"""A kshim of this package's own (its admin endpoint on, a state topic of its own) in front of the
session's single-node Kafka, and a small HTTP client for the admin endpoint."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest

from testsuite.conftest import RUN_DIR
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block


class Admin:
    def __init__(self, port: int):
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method: str, path: str, body=None) -> tuple[int, object]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        return status, (json.loads(text) if text.startswith(("{", "[")) else text)

    def add(self, *rules: dict) -> list[dict]:
        status, out = self.call("POST", "/faults", list(rules))
        assert status == 200, out
        return out["added"]

    def rules(self) -> dict[int, dict]:
        return {r["id"]: r for r in self.call("GET", "/faults")[1]["rules"]}

    def clear(self) -> None:
        assert self.call("DELETE", "/faults")[0] == 200

    def metrics(self) -> dict[str, float]:
        """{'name{labels}': value} from a real scrape of /metrics."""
        status, text = self.call("GET", "/metrics")
        assert status == 200
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                out[key] = float(value)
        return out


def start_admin_kshim(kafka, name: str, extra: list[str] | None = None) -> tuple[KshimProcess, Admin]:
    base = free_port_block(6, start=36000 + (os.getpid() % 97) * 40)
    proc = KshimProcess(kafka.bootstrap, base, RUN_DIR / "kshim" / f"{name}.log",
                        ["--admin-port", str(base + 5), "--state-topic", f"__kshim_hardening_{os.getpid()}",
                         *(extra or [])]).start()
    return proc, Admin(base + 5)


@pytest.fixture(scope="module")
def admin_kshim(kafka, request):
    """(kshim process, Admin) with the admin endpoint on; fault rules cleared around each use."""
    proc, admin = start_admin_kshim(kafka, f"hardening-{request.module.__name__.rsplit('.', 1)[-1]}")
    yield proc, admin
    proc.stop()


@pytest.fixture
def faulty(admin_kshim):
    proc, admin = admin_kshim
    admin.clear()
    yield proc, admin
    admin.clear()
