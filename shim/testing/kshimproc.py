"""kshim as a real subprocess (`kshim run ...`), as users run it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


class KshimProcess:
    def __init__(self, upstream: str, listen_port: int, log_path: Path, extra: list[str] | None = None,
                 same_as_broker: bool = True, code_dir: Path | None = None):
        self.upstream, self.listen_port, self.log_path = upstream, listen_port, log_path
        self.code_dir = code_dir               # another checkout to run (its shim/ and codecs/ first)
        self.extra = extra or []
        self.same_as_broker = same_as_broker   # False: no group flags, kshim adopts the broker's values
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.listen_port}"

    def broker_port(self, node_id: int) -> int:
        return self.listen_port + 1 + node_id

    def start(self, timeout: float = 30.0) -> "KshimProcess":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self._offset = self.log_path.stat().st_size
        from shim.localkafka.cluster import FAST_SETTINGS
        # the same group settings as the test broker, so differential tests compare like with like
        same_as_broker = ["--group-initial-rebalance-delay-ms", FAST_SETTINGS["group.initial.rebalance.delay.ms"],
                          "--group-min-session-timeout-ms", FAST_SETTINGS["group.min.session.timeout.ms"],
                          "--group-consumer-session-timeout-ms", FAST_SETTINGS["group.consumer.session.timeout.ms"],
                          "--group-consumer-heartbeat-interval-ms",
                          FAST_SETTINGS["group.consumer.heartbeat.interval.ms"]] if self.same_as_broker else []
        cmd = [sys.executable, "-m", "shim.cli", "run", "--upstream", self.upstream,
               "--listen-port", str(self.listen_port), "--metadata-refresh-s", "2", *same_as_broker, *self.extra]
        env = cwd = None
        if self.code_dir is not None:          # ahead of the installed (editable) shim and kcodec
            cwd = self.code_dir
            env = {**os.environ, "PYTHONPATH": f"{self.code_dir}:{self.code_dir / 'codecs'}"}
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
                                     cwd=cwd, env=env)
        deadline = time.monotonic() + timeout
        while "kshim listening" not in self.log_text():
            if self.proc.poll() is not None:
                raise AssertionError(f"kshim exited {self.proc.returncode}:\n{self.log_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"kshim not listening after {timeout}s:\n{self.log_text()}")
            time.sleep(0.05)
        return self

    def log_text(self) -> str:
        with open(self.log_path, "rb") as f:
            f.seek(self._offset)
            return f.read().decode(errors="replace")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL to kshim's process group: no shutdown code runs (a crash, as far as state goes)."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        if self.proc:
            self._log.close()

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if self.proc:
            self._log.close()
            return self.proc.returncode
        return None
