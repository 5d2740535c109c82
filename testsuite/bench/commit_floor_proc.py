"""The compiled commit floor (commit_floor/*.go) as a subprocess for scripts/bench-commits
--proxy-floor: built with Go when missing or older than its sources, its state topic created like
kshim's (shim/state/log.py StateLog._create), started on a port of its own, in its goroutine mode
or its single-thread epoll mode (`loop`); or the same floor in Python (commit_floor_py.py, `python`)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from shim.config import Config
from testsuite.bench.gobuild import go_build

SOURCE_DIR = Path(__file__).resolve().parent / "commit_floor"
ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / "build" / "bench" / "commit-floor"   # the repository's build/


def create_state_topic(bootstrap: str, topic: str) -> int:
    """The floor's state topic with kshim's defaults (partition count, compaction, replication as the
    cluster allows: up to 3); returns its partition count."""
    from confluent_kafka.admin import AdminClient
    from shim.compat.pymembers import create_topic
    partitions = Config().state_topic_partitions
    brokers = len(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).brokers)
    rf = min(3, max(brokers, 1))
    create_topic(bootstrap, topic, partitions, rf, config={
        "cleanup.policy": "compact", "min.insync.replicas": str(2 if rf >= 3 else 1)})
    return partitions


class FloorProcess:
    def __init__(self, upstream: str, port: int, log_path: Path, partitions: int, topic: str, mode: str):
        self.upstream, self.port, self.log_path = upstream.split(",")[0], port, log_path
        self.partitions, self.topic, self.mode = partitions, topic, mode
        self.proc: subprocess.Popen | None = None

    @property
    def address(self) -> tuple[str, int]:
        return "127.0.0.1", self.port

    def start(self, timeout: float = 60.0) -> "FloorProcess":
        args = ["-listen", f"127.0.0.1:{self.port}", "-upstream", self.upstream, "-topic", self.topic,
                "-partitions", str(self.partitions)]
        if self.mode == "python":
            cmd = [sys.executable, "-m", "testsuite.bench.commit_floor_py", *args]
        else:
            binary = go_build(SOURCE_DIR, BINARY, "--proxy-floor")
            cmd = [str(binary), *args, *(["-loop"] if self.mode == "loop" else [])]
        self._log = open(self.log_path, "ab")
        offset = self.log_path.stat().st_size       # (a log of an earlier run may already say "listening")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + timeout
        while "floor listening" not in self.log_text(offset):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"commit floor did not start:\n{self.log_text(offset)}")
            time.sleep(0.05)
        return self

    def log_text(self, offset: int = 0) -> str:
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc is not None:
            self._log.close()
