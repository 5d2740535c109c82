"""The proxy benchmark (scripts/bench-proxy): Kafka's own perf tools run directly against a broker
and through kshim, alternating, on one single-node LocalKafka started for the purpose (its data on
/dev/shm by default, so disk write-back stays out of the figures).

Method:
  1. warm-up: one short unmeasured producer run per target (broker and kshim warm up), then a direct
     run that fills the consumers' source topic;
  2. throughput: R rounds of kafka-producer-perf-test (1 KB records, --throughput -1, acks=all), each
     round running every target once (direct, kshim[, kshim with another loop]), the order rotated by
     one each round; then R rounds of kafka-consumer-perf-test reading N records of the source topic;
  3. latency: --latency-rounds rounds of the producer at half the through-kshim ceiling (the lowest
     median records/sec of the kshim targets), each measured for --latency-seconds after
     --latency-warmup-seconds the tool leaves out (a fresh client JVM needs seconds to keep pace).
Every producer run writes to a fresh one-partition topic. Before each run the bench waits (up to
--quiet-wait s) until other processes use at most --quiet-cores, and it records how much CPU they
used during the run. kshim's CPU is user+sys from /proc/<pid>/stat around each run, divided by the
tool's own measured duration (% of one core), and per MB moved; RSS is VmRSS after each run. The
clients run with the full JIT (not the C1-only test setting).

Results: a table on stdout and JSON in build/bench/proxy.json (--out).
This module starts the broker and the kshims; the runs are in proxy_runner.py, the /proc and tool
output figures in proxy_figures.py, the table in proxy_report.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from pathlib import Path

from shim.localkafka import LocalKafka, install
from shim.localkafka.home import KAFKA_VERSION, build_dir
from testsuite.bench.proxy_figures import BenchError, loop_in_use
from testsuite.bench.proxy_kroxylicious import Kroxylicious
from testsuite.bench.proxy_relay import MODES, Relay, listener_overrides
from testsuite.bench.proxy_report import machine, table
from testsuite.bench.proxy_runner import ProxyBench, Target
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block

PEERS = ("kroxylicious", "relay-copy", "relay-splice")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="scripts/bench-proxy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=300_000, help="records per throughput run (default 300000)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per measurement (default 3)")
    p.add_argument("--loop", default="auto",
                   help="kshim's event loop: asyncio, uvloop or auto; a comma list (asyncio,uvloop) runs one "
                        "kshim per loop, measured side by side (default auto: uvloop when installed, as `kshim run`)")
    p.add_argument("--record-size", type=int, default=1024)
    p.add_argument("--acks", default="all")
    p.add_argument("--linger-ms", type=int, default=5)
    p.add_argument("--producer-prop", action="append", default=[], metavar="K=V",
                   help="an extra producer property (repeatable)")
    p.add_argument("--warmup-records", type=int, default=50_000)
    p.add_argument("--latency-seconds", type=int, default=15,
                   help="measured length of each latency run (default 15)")
    p.add_argument("--latency-warmup-seconds", type=int, default=10,
                   help="unmeasured start of each latency run (default 10)")
    p.add_argument("--latency-rounds", type=int, default=5, help="rounds of latency runs (default 5)")
    p.add_argument("--latency-rate", type=int, default=0,
                   help="records/sec of the latency runs (default: half the through-kshim ceiling)")
    p.add_argument("--phases", default="producer,consumer,latency", help="which measurements to run")
    p.add_argument("--quiet-cores", type=float, default=0.25,
                   help="before each run, wait until other processes use at most this many cores (default 0.25)")
    p.add_argument("--quiet-wait", type=float, default=120.0,
                   help="longest wait for that, in seconds; 0 disables the wait (default 120)")
    p.add_argument("--tool-timeout", type=float, default=600.0)
    p.add_argument("--ab", type=Path, default=None, metavar="DIR",
                   help="also run, for each loop, a kshim from DIR (a folder holding another shim/ package) "
                        "to compare two versions of the code side by side")
    p.add_argument("--kshim-arg", action="append", default=[], metavar="ARG",
                   help="an extra `kshim run` argument for every kshim (repeatable; e.g. --kshim-arg=--trace "
                        "--kshim-arg=build/bench/trace)")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                   help="also run, for each loop, a kshim with these extra arguments, measured side by side as "
                        "kshim-<loop>+NAME (repeatable; e.g. --variant 'traced=--trace build/bench/trace')")
    p.add_argument("--peers", default=",".join(PEERS),
                   help="the other proxies measured beside kshim, a comma list of kroxylicious (Kroxylicious, "
                        "a Java Kafka proxy, pass-through), relay-copy and relay-splice (protocol-free TCP "
                        "relays in Go: the floor any user-space proxy pays here), or none "
                        f"(default {','.join(PEERS)}; CPU columns: each proxy's own)")
    p.add_argument("--no-traced", dest="traced", action="store_false",
                   help="leave out kshim-traced (kshim with --trace, the default trace format, no bodies)")
    p.add_argument("--port-base", type=int, default=43100, help="first port to look for free ones from")
    p.add_argument("--out", type=Path, default=build_dir() / "bench" / "proxy.json")
    p.add_argument("--workdir", type=Path, default=build_dir() / "bench" / "proxy-run",
                   help="scratch folder for the broker and kshim logs, emptied first (default build/bench/proxy-run; "
                        "give another one to run next to a benchmark already running)")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="where the benchmark broker keeps its data (default: /dev/shm when it has 4 GB free, "
                        "so disk write-back stays out of the figures; else the workdir)")
    p.add_argument("--keep-data", action="store_true", help="keep the benchmark broker's data directory")
    args = p.parse_args(argv)
    for loop in args.loop.split(","):
        if loop not in ("asyncio", "uvloop", "auto"):
            p.error(f"--loop {loop!r}: use asyncio, uvloop or auto")
    args.peers = [] if args.peers == "none" else args.peers.split(",")
    for peer in args.peers:
        if peer not in PEERS:
            p.error(f"--peers {peer!r}: use {', '.join(PEERS)} or none")
    for v in args.variant:
        if "=" not in v or not v.split("=", 1)[0]:
            p.error(f"--variant {v!r}: use NAME=ARGS")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    kafka = install()
    host = machine()
    workdir = args.workdir
    shutil.rmtree(workdir, ignore_errors=True)
    shm = Path("/dev/shm")
    base = args.data_dir or (shm if shm.is_dir() and shutil.disk_usage(shm).free > 4 << 30 else workdir)
    kafka_dir = base / f"kshim-bench-kafka-{os.getpid()}"
    broker_port = free_port_block(2, start=args.port_base)
    overrides = {"log.retention.check.interval.ms": "5000"}
    relays: list[Relay] = []
    modes = [m for m in MODES if f"relay-{m}" in args.peers]
    if modes:
        block = free_port_block(2 * len(modes), start=args.port_base + 120)
        ports = {m: (block + 2 * i, block + 2 * i + 1) for i, m in enumerate(modes)}
        overrides.update(listener_overrides(broker_port, broker_port + 1, ports))
        relays = [Relay(m, relay, own, workdir / f"relay-{m}.log") for m, (own, relay) in ports.items()]
    cluster = LocalKafka(nodes=1, base_port=broker_port, workdir=kafka_dir, kafka=kafka, overrides=overrides)
    host["kafka_dir"] = str(kafka_dir)
    print(f"starting Kafka {KAFKA_VERSION} in {kafka_dir} (logs copied to {workdir / 'kafka-logs'})", flush=True)
    cluster.start(timeout=180)
    shims: list[KshimProcess] = []
    peer: Kroxylicious | None = None
    try:
        targets = [Target("direct", cluster.bootstrap)]
        sources = [("", None, [])] + ([(f"@{args.ab.name}", args.ab, [])] if args.ab else [])
        if args.traced:   # each kshim once more, tracing
            sources += [(f"{suffix}-traced", src, [*extra, "--trace", str(workdir / f"trace{suffix}")])
                        for suffix, src, extra in list(sources)]
        for v in args.variant:
            name, _, extra = v.partition("=")
            sources.append((f"+{name}", None, shlex.split(extra)))
        for loop in args.loop.split(","):
            for suffix, src, extra in sources:
                port = free_port_block(3, start=args.port_base + 40)
                shim = KshimProcess(cluster.bootstrap, port, workdir / f"kshim-{loop}{suffix}.log",
                                    ["--loop", loop, "--metadata-refresh-s", "10", "--log-level", "warning",
                                     *args.kshim_arg, *extra], code_dir=src and src.resolve())
                shim.start()
                shims.append(shim)
                actual = loop_in_use(shim.proc.pid)
                if loop != "auto" and actual != loop:
                    raise BenchError(f"kshim --loop {loop} runs {actual}")
                targets.append(Target(f"kshim-{actual}{suffix}", shim.bootstrap, shim.proc.pid))
                print(f"kshim ({actual}{', from ' + str(src) if src else ''}) on {shim.bootstrap}, "
                      f"pid {shim.proc.pid}", flush=True)
        if "kroxylicious" in args.peers:
            peer = Kroxylicious(cluster.bootstrap, free_port_block(3, start=args.port_base + 80), 2,
                                workdir / "kroxylicious")
            peer.start()
            targets.append(Target("kroxylicious", peer.bootstrap, peer.proc.pid))
            print(f"Kroxylicious on {peer.bootstrap}, pid {peer.proc.pid}", flush=True)
        for relay in relays:
            relay.start()
            targets.append(Target(f"relay-{relay.mode}", relay.bootstrap, relay.proc.pid))
            print(f"relay ({relay.mode}) on {relay.bootstrap}, pid {relay.proc.pid}", flush=True)
        bench = ProxyBench(kafka, cluster, targets, args, log=lambda s: print(s, flush=True))
        summary = bench.run()
        for shim in shims:
            if not shim.alive():
                raise BenchError(f"kshim exited during the benchmark:\n{shim.log_text()[-3000:]}")
        if peer and not peer.alive():
            raise BenchError(f"Kroxylicious exited during the benchmark:\n{peer.log_file.read_text()[-3000:]}")
    finally:
        for shim in shims:
            shim.stop()
        if peer:
            peer.stop()
        for relay in relays:
            relay.stop()
        cluster.stop()
        shutil.copytree(kafka_dir / "logs", workdir / "kafka-logs", dirs_exist_ok=True)
        if not args.keep_data:
            shutil.rmtree(kafka_dir, ignore_errors=True)
    print()
    print(table(summary, args))
    result = {"machine": host, "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
              "summary": summary, "runs": [vars(r) for r in bench.runs], "loadavg_end": os.getloadavg()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"\nJSON: {args.out}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"bench-proxy: {e}", file=sys.stderr)
        sys.exit(1)
