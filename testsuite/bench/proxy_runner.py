"""The proxy benchmark's runs (testsuite/bench/proxy_bench.py): ProxyBench runs Kafka's perf tools
against each target (the broker directly, each kshim) in rotated rounds, measures every run's CPU
around it (proxy_figures.py) and sums the runs up into medians and kshim/direct ratios."""

from __future__ import annotations

import re
import resource
import statistics
import subprocess
import time
from dataclasses import dataclass, field

from shim.localkafka import KafkaInstall, LocalKafka
from shim.localkafka.layout import TOOLS
from testsuite.bench.proxy_figures import (CONSUMER_KEYS, PRODUCER_KEYS, BenchError, cpu_seconds, parse_consumer,
                                           parse_producer, rss_mb, self_cpu_s, system_busy_s)


RATES = (("producer", "rps"), ("consumer", "MB.sec"))  # the throughput figure of each kind


@dataclass
class Target:
    name: str              # "direct", "kshim-<loop>[suffix]", "kroxylicious" or "relay-<mode>"
    bootstrap: str
    pid: int | None = None  # the proxy's pid (None: direct to the broker)

    @property
    def via_proxy(self) -> bool:
        return self.pid is not None

    @property
    def is_kshim(self) -> bool:
        return self.name.startswith("kshim")


@dataclass
class Run:
    kind: str              # producer | consumer | latency
    target: str
    round: int
    wall_s: float
    figures: dict[str, float]
    proxy_cpu_s: float = 0.0
    proxy_cpu_pct: float = 0.0
    proxy_rss_mb: float = 0.0
    broker_cpu_pct: float = 0.0
    client_cpu_pct: float = 0.0
    others_cores: float = 0.0      # CPU used by other people's processes during the run (cores)
    quiet_before: float | None = None  # the same, in the second before the run
    proxy_cpu_ms_per_mb: float = 0.0
    proxy_user_share: float = 0.0  # the part of the proxy's CPU spent in user space (the rest: the kernel)
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
        k0 = cpu_seconds(target.pid, kids_only=True)
        c0, b0, t0 = cpu_seconds(target.pid), cpu_seconds(self.broker_pid), time.monotonic()
        figures, duration, mb = fn()
        wall = time.monotonic() - t0
        c1, b1 = cpu_seconds(target.pid), cpu_seconds(self.broker_pid)
        kids = cpu_seconds(target.pid, kids_only=True) - k0
        user = cpu_seconds(target.pid, "user") - u0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        client = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
        others = (system_busy_s() - sys0 - (self.ours_s() - ours0) - client) / wall
        duration = duration if duration > 0 else wall
        run = Run(kind, target.name, rnd, wall, figures, proxy_cpu_s=c1 - c0,
                  proxy_cpu_pct=100 * (c1 - c0) / duration, proxy_rss_mb=rss_mb(target.pid),
                  broker_cpu_pct=100 * (b1 - b0) / duration, client_cpu_pct=100 * client / wall,
                  others_cores=max(others, 0.0), quiet_before=quiet,
                  proxy_cpu_ms_per_mb=1000 * (c1 - c0) / mb if mb else 0.0,
                  proxy_user_share=user / (c1 - c0) if c1 > c0 else 0.0,
                  extra={"duration_s": duration, "children_cpu_ms_per_mb": 1000 * kids / mb if mb else 0.0})
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
        if target.via_proxy:
            note += f" proxy {run.proxy_cpu_pct:3.0f}% ({run.proxy_cpu_ms_per_mb:.2f} ms/MB"
            kids = run.extra.get("children_cpu_ms_per_mb")
            note += f", child processes {kids:.2f})" if kids else ")"
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
            ceiling = min(self.median("producer", t.name, "rps") for t in self.targets if t.is_kshim)
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
            for kind, key in RATES:
                vals = self.values(kind, t.name, key)
                d[kind]["spread"] = (min(vals), max(vals)) if vals else (float("nan"),) * 2
            d["latency_quiet"] = {k: self.median("latency", t.name, k, quiet=True) for k in PRODUCER_KEYS}
            d["latency_quiet"]["runs"] = len(self.values("latency", t.name, "p99", quiet=True))
            if t.via_proxy:
                for kind in ("producer", "consumer", "latency"):
                    d[kind]["proxy_cpu_pct"] = self.median(kind, t.name, "proxy_cpu_pct")
                    d[kind]["proxy_cpu_ms_per_mb"] = self.median(kind, t.name, "proxy_cpu_ms_per_mb")
                    d[kind]["proxy_user_share"] = self.median(kind, t.name, "proxy_user_share")
                d["proxy_rss_mb_max"] = max(r.proxy_rss_mb for r in self.runs if r.target == t.name)
                d["ratios"] = self.ratios(t.name)
            s["targets"][t.name] = d
        s["comparisons"] = self.comparisons()
        return s

    def paired(self, kind: str, key: str, a: str, b: str) -> float:
        """The median over rounds of a's figure / b's figure in the same round: robust to drift."""
        pairs = [x / y for x, y in zip(self.values(kind, a, key), self.values(kind, b, key)) if y]
        return statistics.median(pairs) if pairs else float("nan")

    def comparisons(self) -> dict:
        """Each kshim target against the best relay (the one with the higher median, per rate), Kroxylicious and,
        for a variant (kshim-<loop>-traced, ...), the plain kshim of its loop: {kshim: {other: {kind: r}}}."""
        names = [t.name for t in self.targets]
        kshims = [n for n in names if n.startswith("kshim")]
        plain = {n for n in kshims if n.count("-") == 1}
        out: dict = {}
        for k in kshims:
            against = {}
            relays = [n for n in names if n.startswith("relay-")]
            if relays:  # the relay with the higher median, per rate
                against["best relay"] = {
                    kind: self.paired(kind, key, k, max(relays, key=lambda r: self.median(kind, r, key)))
                    for kind, key in RATES}
            if "kroxylicious" in names:
                against["kroxylicious"] = {kind: self.paired(kind, key, k, "kroxylicious") for kind, key in RATES}
            if k not in plain:
                base = max((n for n in plain if k.startswith(n)), key=len, default=None)
                if base:
                    against[base] = {kind: self.paired(kind, key, k, base) for kind, key in RATES}
            out[k] = against
        return out

    def ratios(self, name: str) -> dict:
        nan = float("nan")

        def ratio(kind, key):
            d = self.median(kind, "direct", key)
            return self.median(kind, name, key) / d if d else nan

        def paired(kind, key):
            return self.paired(kind, key, name, "direct")

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
