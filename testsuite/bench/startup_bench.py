"""Startup (scripts/bench-startup): how soon kshim answers, and how soon the pytest plugin's fixtures
are ready.

1. `kshim run` in front of a running single-node Kafka: from the process's start to the first
   ApiVersions answer read from its port (a client that retries the connect every 10 ms). Also:
   to its "kshim listening" log line, and `python -c "import shim.runner"` alone (the imports).
2. `pytest --kshim` on a one-test file using `kshim_server` (the plugin's Kafka and kshim): the
   fixtures' setup time as pytest reports it (`--durations`), and the whole pytest run.

N runs each (default 5); the medians and every run are printed, JSON in build/bench/startup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kcodec import api
from shim.localkafka import LocalKafka, install
from shim.localkafka.home import build_dir
from shim.testing.ports import free_port_block

API_VERSIONS = 18
TEST_FILE = "def test_ready(kshim_server):\n    assert kshim_server.alive()\n"


def api_versions_request(corr: int = 1) -> bytes:
    head = api.RequestHeader(request_api_key=API_VERSIONS, request_api_version=3, correlation_id=corr,
                             client_id="startup-bench").encode(api.request_header_version(API_VERSIONS, 3))
    body = head + api.REQUESTS[API_VERSIONS](client_software_name="bench",
                                              client_software_version="1").encode(3)
    return struct.pack(">i", len(body)) + body


def first_answer(port: int, deadline: float) -> float:
    """The monotonic time at which an ApiVersions answer came from 127.0.0.1:port."""
    request = api_versions_request()
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.sendall(request)
                head = s.recv(4)
                if len(head) == 4:
                    size = struct.unpack(">i", head)[0]
                    got = 0
                    while got < size:
                        chunk = s.recv(size - got)
                        if not chunk:
                            break
                        got += len(chunk)
                    if got == size:
                        return time.monotonic()
        except OSError:
            pass
        time.sleep(0.01)
    raise RuntimeError(f"no ApiVersions answer on port {port}")


def kshim_runs(bootstrap: str, runs: int, workdir: Path) -> list[dict]:
    out = []
    for i in range(runs):
        port = free_port_block(4, start=27100)
        log = workdir / f"kshim-{i}.log"
        t0 = time.monotonic()
        with open(log, "wb") as f:
            proc = subprocess.Popen([sys.executable, "-m", "shim.cli", "run", "--upstream", bootstrap,
                                     "--listen-port", str(port), "--log-level", "info"],
                                    stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            answered = first_answer(port, t0 + 30) - t0
            listening = None
            while listening is None and time.monotonic() < t0 + 30:
                if "kshim listening" in log.read_text(errors="replace"):
                    listening = time.monotonic() - t0   # read after the answer: an upper bound
                time.sleep(0.01)
        finally:
            proc.terminate()
            proc.wait(15)
        out.append({"first_api_versions_s": answered, "listening_line_seen_s": listening})
        print(f"  kshim run {i}: first ApiVersions answer after {answered:.3f} s", flush=True)
    return out


def import_runs(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", "import shim.runner"], check=True)
        out.append(time.monotonic() - t0)
    return out


def fixture_runs(runs: int, workdir: Path) -> list[dict]:
    out = []
    test = workdir / "test_startup_fixture.py"
    test.write_text(TEST_FILE)
    for i in range(runs):
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", "--kshim", "-q", "-p", "no:cacheprovider",
                               "--durations=0", "--durations-min=0", str(test)],
                              capture_output=True, text=True, cwd=workdir)
        wall = time.monotonic() - t0
        m = re.search(r"([\d.]+)s setup\s+\S*test_ready", done.stdout)
        if done.returncode != 0 or not m:
            raise RuntimeError(f"pytest --kshim failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        setup = float(m.group(1))
        out.append({"fixture_setup_s": setup, "pytest_wall_s": wall})
        print(f"  pytest --kshim run {i}: fixtures ready in {setup:.2f} s, whole run {wall:.2f} s", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scripts/bench-startup", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", type=Path, default=build_dir() / "bench" / "startup.json")
    args = p.parse_args(argv)
    result: dict = {"runs": args.runs, "cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="kshim-startup-") as tmp:
        work = Path(tmp)
        print("imports (python -c 'import shim.runner')", flush=True)
        result["import_s"] = import_runs(args.runs)
        cluster = LocalKafka(nodes=1, base_port=free_port_block(2, start=27000), workdir=work / "kafka",
                             kafka=install())
        cluster.start(timeout=180)
        try:
            print(f"kshim run in front of Kafka at {cluster.bootstrap}", flush=True)
            result["kshim"] = kshim_runs(cluster.bootstrap, args.runs, work)
        finally:
            cluster.stop()
        print("pytest --kshim (its own Kafka and kshim)", flush=True)
        result["fixture"] = fixture_runs(args.runs, work)
    med = statistics.median
    summary = {
        "import_s": med(result["import_s"]),
        "first_api_versions_s": med(r["first_api_versions_s"] for r in result["kshim"]),
        "fixture_setup_s": med(r["fixture_setup_s"] for r in result["fixture"]),
        "pytest_wall_s": med(r["pytest_wall_s"] for r in result["fixture"]),
    }
    result["median"] = summary
    print(f"\nmedians of {args.runs}: import shim.runner {summary['import_s']:.3f} s; kshim's first ApiVersions "
          f"answer {summary['first_api_versions_s']:.3f} s after start; pytest --kshim fixtures ready in "
          f"{summary['fixture_setup_s']:.2f} s (whole pytest run {summary['pytest_wall_s']:.2f} s)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
