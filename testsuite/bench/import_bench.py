"""`kshim trace import` on a large capture of real traffic (scripts/bench-import).

A local real Kafka; tcpdump on its port; Kafka's own perf tools: a producer writing --mb MB of 1 KB
records while two consumer-perf-test members of one group read them (the second joins halfway: a
rebalance). Then, each timed as a user runs it (a subprocess: wall time, peak RSS):
`kshim trace import` of the capture, `kshim trace analyze` of the result (local[2]), and with
--master URL the import on a Spark cluster (scripts/spark-standalone). Prints one JSON object.

Usage: scripts/bench-import [--mb 1000] [--out DIR] [--master spark://127.0.0.1:7077] [--keep]"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from shim.compat.javaclient import run_tool
from shim.localkafka import LocalKafka
from shim.localkafka.home import build_dir
from testsuite.harness import tcpdump
from shim.testing.ports import free_port_block


def timed(cmd: list[str], log: Path) -> dict:
    """Runs cmd; its exit code and wall seconds."""
    t0 = time.monotonic()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    return {"rc": rc, "seconds": round(time.monotonic() - t0, 1), "log": str(log)}


def capture_traffic(out: Path, mb: int) -> tuple[Path, int]:
    kafka = LocalKafka(nodes=1, base_port=free_port_block(2, start=26100), workdir=out / "kafka").start()
    port = int(kafka.bootstrap.rsplit(":", 1)[1])
    inst = kafka.kafka
    try:
        run_tool(inst, "kafka-topics", ["--bootstrap-server", kafka.bootstrap, "--create", "--topic", "bench",
                                        "--partitions", "6"])
        # a rotated set (tcpdump -C 100: files of 100 MB), as a long production capture is
        (out / "capture").mkdir(exist_ok=True)
        cap = tcpdump.Capture(out / "capture" / "cap.pcap", [port], extra=["-C", "100"],
                              log=out / "tcpdump.log").start()
        records = mb * 1000
        consumers = []

        def consume(name: str) -> None:
            consumers.append(run_tool(inst, "kafka-consumer-perf-test", [
                "--bootstrap-server", kafka.bootstrap, "--topic", "bench", "--group", "bench-group",
                "--messages", str(records), "--timeout", "30000", "--print-metrics"], timeout=3600, check=False))
        first = threading.Thread(target=consume, args=("c1",))
        first.start()
        prod = run_tool(inst, "kafka-producer-perf-test", [
            "--topic", "bench", "--num-records", str(records // 2), "--record-size", "1000", "--throughput", "-1",
            "--producer-props", f"bootstrap.servers={kafka.bootstrap}", "acks=1"], timeout=3600)
        second = threading.Thread(target=consume, args=("c2",))
        second.start()
        run_tool(inst, "kafka-producer-perf-test", [
            "--topic", "bench", "--num-records", str(records // 2), "--record-size", "1000", "--throughput", "-1",
            "--producer-props", f"bootstrap.servers={kafka.bootstrap}", "acks=1"], timeout=3600)
        first.join()
        second.join()
        cap.stop()
        print(prod.stdout.strip().splitlines()[-1] if prod.stdout.strip() else "", file=sys.stderr)
    finally:
        kafka.stop()
    return out / "capture", port


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=int, default=1000, help="MB of records produced (the capture holds them twice)")
    p.add_argument("--out", default=str(build_dir() / "bench-import"))
    p.add_argument("--master", default=None, help="also import on this Spark master")
    p.add_argument("--capture", default=None, help="an existing capture (with --port) instead of making one")
    p.add_argument("--port", type=int, default=None)
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.capture:
        pcap, port = Path(a.capture), a.port
    else:
        pcap, port = capture_traffic(out, a.mb)
    files = sorted(pcap.iterdir()) if pcap.is_dir() else [pcap]
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    py = [sys.executable, "-m", "shim.cli"]
    res = {"capture_mb": round(size_mb, 1), "capture_files": len(files), "cores": os.cpu_count()}
    if (out / "tcpdump.log").exists():
        res["tcpdump"] = (out / "tcpdump.log").read_text().strip().splitlines()[-3:]
    imp = out / "imported"
    subprocess.run(["rm", "-rf", str(imp), str(out / "report"), str(out / "imported-spark")])
    res["import"] = timed([*py, "trace", "import", str(pcap), "--out", str(imp), "--port", str(port)], out / "import.log")
    summary = json.loads((imp / "import-summary.json").read_text())
    res["import"].update(frames=summary["frames"], packets=summary["packets"], peak_rss_mb=summary["peak_rss_mb"],
                         mb_per_s=round(size_mb / max(summary["seconds"], 0.01), 1))
    res["analyze"] = timed([*py, "trace", "analyze", str(imp), "--out", str(out / "report"), "--master", "local[2]",
                            "--no-png"], out / "analyze.log")
    if a.master:
        res["import_spark"] = timed([*py, "trace", "import", str(pcap), "--out", str(out / "imported-spark"),
                                     "--port", str(port), "--master", a.master], out / "import-spark.log")
    res["pipeline_seconds"] = round(res["import"]["seconds"] + res["analyze"]["seconds"], 1)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
