"""The kshim image's facts: its size, its layers (`docker history`), and the time from `docker run` to
healthy (its HEALTHCHECK: kshim answers ApiVersions) in front of a running Kafka container, median of
N starts. Runs on the suite's own engine (testsuite/harness/docker_engine.py).
Usage: scripts/bench-image [--runs 5]"""

from __future__ import annotations

import argparse
import statistics
import time

from testsuite.harness import docker_engine as engine
from testsuite.harness import docker_images as images
from shim.testcontainers import kafka_spec


def _run(*args: str) -> str:
    return engine.docker(*args).stdout.decode().strip()


def start_to_healthy(network: str) -> float:
    t0 = time.monotonic()
    cid = _run("run", "-d", "--network", network, "-e", "KSHIM_UPSTREAM=kafka:19092", images.KSHIM)
    try:
        while time.monotonic() - t0 < 60:
            if _run("inspect", "-f", "{{.State.Health.Status}}", cid) == "healthy":
                return time.monotonic() - t0
            time.sleep(0.05)
        raise RuntimeError("kshim never became healthy: " + _run("logs", cid))
    finally:
        engine.docker("rm", "-f", cid, check=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    was_running = engine.running()
    engine.start()
    try:
        images.build_all(log=lambda m: None)
        spec = kafka_spec()
        network = "kshim-bench"
        engine.docker("network", "create", network, check=False)
        env = [a for k, v in spec.env.items() for a in ("-e", f"{k}={v}")]
        kafka = _run("run", "-d", "--network", network, "--network-alias", "kafka", *env, spec.image)
        try:
            deadline = time.monotonic() + 120
            while spec.ready_log not in engine.docker("logs", kafka).stdout.decode() and time.monotonic() < deadline:
                time.sleep(0.5)
            times = [start_to_healthy(network) for _ in range(args.runs)]
        finally:
            engine.docker("rm", "-f", kafka, check=False)
            engine.docker("network", "rm", network, check=False)
        size = int(_run("image", "inspect", "-f", "{{.Size}}", images.KSHIM))
        base = int(_run("image", "inspect", "-f", "{{.Size}}", images.PYTHON))
        print(f"image {images.KSHIM}: {size / 1e6:.1f} MB ({(size - base) / 1e6:.1f} MB above {images.PYTHON}, "
              f"{base / 1e6:.1f} MB)")
        print(f"start to healthy: median {statistics.median(times):.2f} s over {len(times)} starts "
              f"({', '.join(f'{t:.2f}' for t in times)})")
        print("docker history:")
        print(_run("history", "--format", "{{.Size}}\t{{.CreatedBy}}", "--no-trunc", images.KSHIM)[:4000])
    finally:
        if not was_running:
            engine.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
