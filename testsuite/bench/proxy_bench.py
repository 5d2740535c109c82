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
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from shim.localkafka import KafkaInstall, LocalKafka, install
from shim.localkafka.home import KAFKA_VERSION, build_dir
from shim.localkafka.layout import TOOLS
from testsuite.harness.kshimproc import KshimProcess
from testsuite.harness.ports import free_port_block

CLK_TCK = os.sysconf("SC_CLK_TCK")
PRODUCER_RE = re.compile(
    r"(?P<records>\d+) (?:steady state )?records sent, (?P<rps>[\d.]+) records/sec \((?P<mbps>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99.9th")
PRODUCER_KEYS = ("rps", "mbps", "avg", "p50", "p95", "p99", "p999")
CONSUMER_KEYS = ("MB.sec", "nMsg.sec", "fetch.MB.sec", "fetch.nMsg.sec", "rebalance.time.ms")


class BenchError(RuntimeError):
    pass


# ---------------------------------------------------------------------------- process figures
def cpu_seconds(pid: int | None, part: str = "both") -> float:
    """user + sys (or only "user" / "sys") CPU time of `pid` so far (0 for no process)."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    fields = text[text.rindex(")") + 2:].split()  # fields from #3 (state) on
    user, sys_ = int(fields[11]), int(fields[12])
    return {"both": user + sys_, "user": user, "sys": sys_}[part] / CLK_TCK


def system_busy_s() -> float:
    """CPU time the whole machine has spent busy (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / CLK_TCK


def self_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rss_mb(pid: int | None) -> float:
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def loop_in_use(pid: int) -> str:
    """Which event loop a kshim process runs, from its mapped shared objects."""
    with open(f"/proc/{pid}/maps") as f:
        return "uvloop" if "uvloop" in f.read() else "asyncio"


# ---------------------------------------------------------------------------- tool output
def parse_producer(stdout: str) -> dict[str, float]:
    """The last summary line of ProducerPerformance (the steady-state one when there is a warm-up)."""
    matches = list(PRODUCER_RE.finditer(stdout))
    if not matches:
        raise BenchError(f"no producer summary in the output:\n{stdout[-2000:]}")
    m, whole = matches[-1], matches[0]  # with --warmup-records: the whole run, then the steady state
    figures = {k: float(m.group(k)) for k in ("records", *PRODUCER_KEYS, "max")}
    figures["all_records"], figures["all_rps"] = float(whole.group("records")), float(whole.group("rps"))
    return figures


def parse_consumer(stdout: str) -> dict[str, float]:
    """The CSV line under ConsumerPerformance's header (start.time, end.time, data.consumed.in.MB, ...)."""
    lines = [ln.strip() for ln in stdout.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if line.startswith("start.time") and i + 1 < len(lines):
            names = [n.strip() for n in line.split(",")]
            values = [v.strip() for v in lines[i + 1].split(",")]
            out = {}
            for n, v in zip(names, values):
                try:
                    out[n] = float(v)
                except ValueError:
                    pass
            if "MB.sec" in out:
                return out
    raise BenchError(f"no consumer summary in the output:\n{stdout[-2000:]}")


# ---------------------------------------------------------------------------- targets and runs
@dataclass
class Target:
    name: str              # "direct" or "kshim-<loop>"
    bootstrap: str
    pid: int | None = None  # kshim's pid (None: direct to the broker)

    @property
    def via_kshim(self) -> bool:
        return self.pid is not None


@dataclass
class Run:
    kind: str              # producer | consumer | latency
    target: str
    round: int
    wall_s: float
    figures: dict[str, float]
    kshim_cpu_s: float = 0.0
    kshim_cpu_pct: float = 0.0
    kshim_rss_mb: float = 0.0
    broker_cpu_pct: float = 0.0
    client_cpu_pct: float = 0.0
    others_cores: float = 0.0      # CPU used by other people's processes during the run (cores)
    quiet_before: float | None = None  # the same, in the second before the run
    kshim_cpu_ms_per_mb: float = 0.0
    kshim_user_share: float = 0.0  # the part of kshim's CPU spent in user space (the rest: the kernel)
    extra: dict = field(default_factory=dict)


class ProxyBench:
    def __init__(self, kafka: KafkaInstall, cluster: LocalKafka, targets: list[Target], args, log=print):
        self.kafka, self.cluster, self.targets, self.args, self.log = kafka, cluster, targets, args, log
        self.runs: list[Run] = []
        self.broker_pid = cluster.nodes[0].pid
        self.our_pids = [self.broker_pid] + [t.pid for t in targets if t.pid is not None]

    def ours_s(self) -> float:
        return sum(cpu_seconds(p) for p in self.our_pids) + self_cpu_s()

    def wait_quiet(self) -> float | None:
        """Wait (up to --quiet-wait s) until other processes use at most --quiet-cores; return their use."""
        a = self.args
        if a.quiet_wait <= 0:
            return None
        deadline = time.monotonic() + a.quiet_wait
        while True:
            s0, o0, t0 = system_busy_s(), self.ours_s(), time.monotonic()
            time.sleep(1.0)
            other = (system_busy_s() - s0 - (self.ours_s() - o0)) / (time.monotonic() - t0)
            if other <= a.quiet_cores or time.monotonic() > deadline:
                return max(other, 0.0)

    # -------------------------------------------------------------- tools
    def java(self, tool: str, args: list[str], timeout: float) -> str:
        cmd = self.kafka.java_cmd(TOOLS[tool], args, heap="512m")
        cmd = [c for c in cmd if c != "-XX:TieredStopAtLevel=1"]  # full JIT: the client must not be the limit
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise BenchError(f"{tool} {' '.join(args)} timed out after {timeout:.0f}s") from None
        if proc.returncode != 0:
            raise BenchError(f"{tool} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
        return proc.stdout

    def create_topic(self, name: str, keep: bool = False) -> str:
        """A one-partition topic; unless `keep`, its closed segments are deleted 5 s after they fill."""
        name = re.sub(r"[^A-Za-z0-9._-]", "_", name)
        self.java("kafka-topics", ["--bootstrap-server", self.cluster.bootstrap, "--create", "--topic", name,
                                   "--partitions", "1", "--replication-factor", "1",
                                   *([] if keep else ["--config", "retention.ms=5000"])], timeout=120)
        return name

    def _measure(self, target: Target, kind: str, rnd: int, fn) -> Run:
        quiet = self.wait_quiet()
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)  # the tool's JVM, once it has been waited for
        sys0, ours0 = system_busy_s(), self.ours_s()
        u0 = cpu_seconds(target.pid, "user")
        c0, b0, t0 = cpu_seconds(target.pid), cpu_seconds(self.broker_pid), time.monotonic()
        figures, duration, mb = fn()
        wall = time.monotonic() - t0
        c1, b1 = cpu_seconds(target.pid), cpu_seconds(self.broker_pid)
        user = cpu_seconds(target.pid, "user") - u0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        client = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
        others = (system_busy_s() - sys0 - (self.ours_s() - ours0) - client) / wall
        duration = duration if duration > 0 else wall
        run = Run(kind, target.name, rnd, wall, figures, kshim_cpu_s=c1 - c0,
                  kshim_cpu_pct=100 * (c1 - c0) / duration, kshim_rss_mb=rss_mb(target.pid),
                  broker_cpu_pct=100 * (b1 - b0) / duration, client_cpu_pct=100 * client / wall,
                  others_cores=max(others, 0.0), quiet_before=quiet,
                  kshim_cpu_ms_per_mb=1000 * (c1 - c0) / mb if mb else 0.0,
                  kshim_user_share=user / (c1 - c0) if c1 > c0 else 0.0, extra={"duration_s": duration})
        self.runs.append(run)
        return run

    def producer(self, target: Target, topic: str, records: int, throughput: int, rnd: int,
                 kind: str = "producer", warmup: int | None = None) -> Run:
        """One kafka-producer-perf-test run; its figures are the steady-state ones, after `warmup`
        records (default a tenth) that the tool leaves out."""
        props = [f"acks={self.args.acks}", f"linger.ms={self.args.linger_ms}", *self.args.producer_prop]
        args = ["--bootstrap-server", target.bootstrap, "--topic", topic, "--num-records", str(records),
                "--record-size", str(self.args.record_size), "--throughput", str(throughput),
                "--warmup-records", str(records // 10 if warmup is None else warmup), "--command-property", *props]

        def go():
            f = parse_producer(self.java("kafka-producer-perf-test", args, timeout=self.args.tool_timeout))
            mb = records * self.args.record_size / 2**20  # CPU is measured over the whole run, warm-up included
            return f, (f["all_records"] / f["all_rps"] if f["all_rps"] else 0.0), mb
        run = self._measure(target, kind, rnd, go)
        f = run.figures
        self.log(f"  {kind:8} r{rnd} {target.name:22} {f['rps']:9.0f} rec/s {f['mbps']:7.2f} MB/s  "
                 f"avg {f['avg']:6.2f}  p50 {f['p50']:3.0f}  p99 {f['p99']:4.0f}  p99.9 {f['p999']:4.0f} ms"
                 + self._cpu_note(run, target))
        return run

    @staticmethod
    def _cpu_note(run: Run, target: Target) -> str:
        note = (f"  CPU broker {run.broker_cpu_pct:3.0f}% client {run.client_cpu_pct:3.0f}% "
                f"others {100 * run.others_cores:3.0f}%")
        if target.via_kshim:
            note += f" kshim {run.kshim_cpu_pct:3.0f}% ({run.kshim_cpu_ms_per_mb:.2f} ms/MB)"
        return note

    def consumer(self, target: Target, topic: str, records: int, rnd: int) -> Run:
        args = ["--bootstrap-server", target.bootstrap, "--topic", topic, "--num-records", str(records),
                "--timeout", "60000", "--group", f"bench-{target.name}-{rnd}-{time.time_ns()}"]

        def go():
            f = parse_consumer(self.java("kafka-consumer-perf-test", args, timeout=self.args.tool_timeout))
            mb, rate = f.get("data.consumed.in.MB", 0.0), f.get("MB.sec", 0.0)
            return f, (mb / rate if rate else 0.0), mb
        run = self._measure(target, "consumer", rnd, go)
        f = run.figures
        self.log(f"  consumer r{rnd} {target.name:22} {f['nMsg.sec']:9.0f} msg/s {f['MB.sec']:7.2f} MB/s  "
                 f"fetch {f.get('fetch.MB.sec', 0):7.2f} MB/s  rebalance {f.get('rebalance.time.ms', 0):5.0f} ms"
                 + self._cpu_note(run, target))
        return run

    # -------------------------------------------------------------- the plan
    def order(self, rnd: int) -> list[Target]:
        """The targets in turn, rotated by one each round (direct, kshim / kshim, direct / ...), so no
        target always runs first after a pause or last after the others have warmed the broker."""
        k = rnd % len(self.targets)
        return self.targets[k:] + self.targets[:k]

    def run(self) -> dict:
        a = self.args
        stamp = time.strftime("%H%M%S")
        self.log(f"warm-up ({a.warmup_records} records per target)")
        source = self.create_topic(f"bench-source-{stamp}", keep=True)  # the warm-up topic, then the consumers' source
        for t in self.targets:
            self.producer(t, source, a.warmup_records, -1, -1, kind="warmup")
        self.producer(self.targets[0], source, a.records, -1, -1, kind="fill")
        if "producer" in a.phases:
            self.log(f"producer throughput: {a.records} x {a.record_size} B records, {a.rounds} rounds")
            for r in range(a.rounds):
                for t in self.order(r):
                    topic = self.create_topic(f"bench-p{r}-{t.name}-{stamp}")
                    self.producer(t, topic, a.records, -1, r)
        if "consumer" in a.phases:
            self.log(f"consumer throughput: {a.records} records from {source}, {a.rounds} rounds")
            for r in range(a.rounds):
                for t in self.order(r):
                    self.consumer(t, source, a.records, r)
        rate = a.latency_rate
        if not rate and "producer" in a.phases:
            ceiling = min(self.median("producer", t.name, "rps") for t in self.targets if t.via_kshim)
            rate = max(int(ceiling / 2), 1)
            self.log(f"half the through-kshim ceiling: {rate} rec/s ({ceiling:.0f} / 2)")
        if "latency" in a.phases and rate:
            # the client JVM needs several seconds to catch up with a fixed rate: leave those out
            warmup = rate * a.latency_warmup_seconds
            records = warmup + max(rate * a.latency_seconds, 2000)
            self.log(f"latency at {rate} rec/s, {records} records, {a.latency_rounds} rounds")
            for r in range(a.latency_rounds):
                for t in self.order(r):
                    topic = self.create_topic(f"bench-l{r}-{t.name}-{stamp}")
                    self.producer(t, topic, records, rate, r, kind="latency", warmup=warmup)
        return self.summary(rate)

    # -------------------------------------------------------------- figures
    def values(self, kind: str, target: str, key: str, quiet: bool = False) -> list[float]:
        """`key` of the runs of one kind and target, in order; `quiet`: only runs during which other
        processes used at most --quiet-cores."""
        out = []
        for r in self.runs:
            if r.kind == kind and r.target == target and (not quiet or r.others_cores <= self.args.quiet_cores):
                out.append(getattr(r, key) if hasattr(r, key) else r.figures[key])
        return out

    def median(self, kind: str, target: str, key: str, quiet: bool = False) -> float:
        vals = self.values(kind, target, key, quiet)
        return statistics.median(vals) if vals else float("nan")

    def summary(self, rate: int) -> dict:
        def med(kind, target, keys):
            return {k: self.median(kind, target, k) for k in keys}
        s: dict = {"latency_rate_rps": rate, "targets": {},
                   "others_cores_median": statistics.median(r.others_cores for r in self.runs)}
        for t in self.targets:
            d = {"producer": med("producer", t.name, PRODUCER_KEYS),
                 "consumer": med("consumer", t.name, CONSUMER_KEYS),
                 "latency": med("latency", t.name, PRODUCER_KEYS)}
            for kind in ("producer", "consumer", "latency"):
                d[kind]["others_cores"] = self.median(kind, t.name, "others_cores")
            d["latency_quiet"] = {k: self.median("latency", t.name, k, quiet=True) for k in PRODUCER_KEYS}
            d["latency_quiet"]["runs"] = len(self.values("latency", t.name, "p99", quiet=True))
            if t.via_kshim:
                for kind in ("producer", "consumer", "latency"):
                    d[kind]["kshim_cpu_pct"] = self.median(kind, t.name, "kshim_cpu_pct")
                    d[kind]["kshim_cpu_ms_per_mb"] = self.median(kind, t.name, "kshim_cpu_ms_per_mb")
                    d[kind]["kshim_user_share"] = self.median(kind, t.name, "kshim_user_share")
                d["kshim_rss_mb_max"] = max(r.kshim_rss_mb for r in self.runs if r.target == t.name)
                d["ratios"] = self.ratios(t.name)
            s["targets"][t.name] = d
        return s

    def ratios(self, name: str) -> dict:
        nan = float("nan")

        def ratio(kind, key):
            d = self.median(kind, "direct", key)
            return self.median(kind, name, key) / d if d else nan

        def paired(kind, key):  # per-round kshim/direct, then the median: robust to drift over time
            k, d = self.values(kind, name, key), self.values(kind, "direct", key)
            pairs = [x / y for x, y in zip(k, d) if y]
            return statistics.median(pairs) if pairs else nan

        lat_k, lat_d = self.values("latency", name, "p99"), self.values("latency", "direct", "p99")
        return {
            "producer_rps": ratio("producer", "rps"), "producer_rps_paired": paired("producer", "rps"),
            "consumer_mbps": ratio("consumer", "MB.sec"), "consumer_mbps_paired": paired("consumer", "MB.sec"),
            "consumer_fetch_mbps": ratio("consumer", "fetch.MB.sec"),
            "added_p50_ms": self.median("latency", name, "p50") - self.median("latency", "direct", "p50"),
            "added_p99_ms": self.median("latency", name, "p99") - self.median("latency", "direct", "p99"),
            "added_p99_ms_mean_of_rounds": statistics.fmean(k - d for k, d in zip(lat_k, lat_d)) if lat_d else nan,
            "added_p99_ms_quiet": self.median("latency", name, "p99", True) - self.median("latency", "direct", "p99", True),
            "added_p999_ms": self.median("latency", name, "p999") - self.median("latency", "direct", "p999"),
            "added_avg_ms": self.median("latency", name, "avg") - self.median("latency", "direct", "avg"),
        }


# ---------------------------------------------------------------------------- report
def _cpu_cell(d: dict) -> str:
    return f"{d['kshim_cpu_pct']:10.0f}%{d['kshim_cpu_ms_per_mb']:7.2f}" if "kshim_cpu_pct" in d else ""


def table(summary: dict, args) -> str:
    tg = summary["targets"]
    lines = [f"kshim proxy benchmark: Kafka {KAFKA_VERSION}, {args.records} x {args.record_size} B records, "
             f"acks={args.acks} linger.ms={args.linger_ms}, medians of {args.rounds} rounds",
             "",
             f"{'producer':24}{'rec/s':>10}{'MB/s':>9}{'avg ms':>8}{'p50':>6}{'p95':>6}{'p99':>6}{'p99.9':>7}"
             f"{'kshim CPU%':>11}{'ms/MB':>7}"]
    for name, d in tg.items():
        p = d["producer"]
        cpu = _cpu_cell(p)
        lines.append(f"{name:24}{p['rps']:10.0f}{p['mbps']:9.2f}{p['avg']:8.1f}{p['p50']:6.0f}{p['p95']:6.0f}"
                     f"{p['p99']:6.0f}{p['p999']:7.0f}{cpu:>18}")
    lines += ["", f"{'consumer':24}{'msg/s':>10}{'MB/s':>9}{'fetch MB/s':>12}{'rebal ms':>10}{'kshim CPU%':>11}{'ms/MB':>7}"]
    for name, d in tg.items():
        c = d["consumer"]
        cpu = _cpu_cell(c)
        lines.append(f"{name:24}{c['nMsg.sec']:10.0f}{c['MB.sec']:9.2f}{c['fetch.MB.sec']:12.2f}"
                     f"{c['rebalance.time.ms']:10.0f}{cpu:>18}")
    lines += ["", f"latency at {summary['latency_rate_rps']} rec/s (half the through-kshim ceiling)",
              f"{'':24}{'avg ms':>8}{'p50':>6}{'p95':>6}{'p99':>6}{'p99.9':>7}{'kshim CPU%':>11}{'ms/MB':>7}"]
    for name, d in tg.items():
        p = d["latency"]
        cpu = _cpu_cell(p)
        lines.append(f"{name:24}{p['avg']:8.2f}{p['p50']:6.0f}{p['p95']:6.0f}{p['p99']:6.0f}{p['p999']:7.0f}{cpu:>18}")
    lines.append(f"  only the runs during which other processes used <= {args.quiet_cores} cores:")
    for name, d in tg.items():
        q = d["latency_quiet"]
        lines.append(f"  {name:22}{q['avg']:8.2f}{q['p50']:6.0f}{q['p95']:6.0f}{q['p99']:6.0f}{q['p999']:7.0f}"
                     f"   ({q['runs']} runs)")
    lines.append("")
    for name, d in tg.items():
        if "ratios" not in d:
            continue
        r = d["ratios"]
        lines.append(f"{name}: throughput ratio producer {r['producer_rps']:.3f} (paired {r['producer_rps_paired']:.3f}),"
                     f" consumer {r['consumer_mbps']:.3f} (paired {r['consumer_mbps_paired']:.3f}, fetch-only "
                     f"{r['consumer_fetch_mbps']:.3f}); added p99 {r['added_p99_ms']:+.1f} ms (mean of rounds "
                     f"{r['added_p99_ms_mean_of_rounds']:+.2f}; quiet runs {r['added_p99_ms_quiet']:+.1f}), added avg {r['added_avg_ms']:+.2f} ms; "
                     f"RSS max {d['kshim_rss_mb_max']:.0f} MB")
    lines.append(f"(ProducerPerformance reports percentiles in whole milliseconds; other processes used a median "
                 f"{summary['others_cores_median']:.2f} cores of {os.cpu_count()} during the runs.)")
    return "\n".join(lines)


def machine() -> dict:
    info = {"cpus": os.cpu_count(), "python": platform.python_version(), "kafka": KAFKA_VERSION,
            "loadavg_start": os.getloadavg()}
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu_model"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
        with open("/proc/meminfo") as f:
            info["mem_gb"] = round(int(f.readline().split()[1]) / 1024 / 1024, 1)
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60)
        info["java"] = (out.stderr or out.stdout).splitlines()[0]
    except (OSError, StopIteration, IndexError, subprocess.SubprocessError):
        pass
    return info


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="scripts/bench-proxy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=300_000, help="records per throughput run (default 300000)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per measurement (default 3)")
    p.add_argument("--loop", default="asyncio",
                   help="kshim's event loop: asyncio, uvloop or auto; a comma list (asyncio,uvloop) runs one "
                        "kshim per loop, measured side by side (default asyncio)")
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
    cluster = LocalKafka(nodes=1, base_port=free_port_block(2, start=args.port_base), workdir=kafka_dir, kafka=kafka,
                         overrides={"log.retention.check.interval.ms": "5000"})
    host["kafka_dir"] = str(kafka_dir)
    print(f"starting Kafka {KAFKA_VERSION} in {kafka_dir} (logs copied to {workdir / 'kafka-logs'})", flush=True)
    cluster.start(timeout=180)
    shims: list[KshimProcess] = []
    try:
        targets = [Target("direct", cluster.bootstrap)]
        sources = [("", None, [])] + ([(f"@{args.ab.name}", args.ab, [])] if args.ab else [])
        for v in args.variant:
            name, _, extra = v.partition("=")
            sources.append((f"+{name}", None, shlex.split(extra)))
        for loop in args.loop.split(","):
            for suffix, src, extra in sources:
                port = free_port_block(3, start=args.port_base + 40)
                shim = KshimProcess(cluster.bootstrap, port, workdir / f"kshim-{loop}{suffix}.log",
                                    ["--loop", loop, "--metadata-refresh-s", "10", "--log-level", "warning",
                                     *args.kshim_arg, *extra])
                here = os.getcwd()
                os.chdir(src or here)  # `python -m shim.cli` imports shim/ from the working directory
                try:
                    shim.start()
                finally:
                    os.chdir(here)
                shims.append(shim)
                actual = loop_in_use(shim.proc.pid)
                if loop != "auto" and actual != loop:
                    raise BenchError(f"kshim --loop {loop} runs {actual}")
                targets.append(Target(f"kshim-{actual}{suffix}", shim.bootstrap, shim.proc.pid))
                print(f"kshim ({actual}{', from ' + str(src) if src else ''}) on {shim.bootstrap}, "
                      f"pid {shim.proc.pid}", flush=True)
        bench = ProxyBench(kafka, cluster, targets, args, log=lambda s: print(s, flush=True))
        summary = bench.run()
        for shim in shims:
            if not shim.alive():
                raise BenchError(f"kshim exited during the benchmark:\n{shim.log_text()[-3000:]}")
    finally:
        for shim in shims:
            shim.stop()
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
