"""The proxy benchmark's figures (testsuite/bench/proxy_bench.py): a process's CPU time, RSS and
event loop and the machine's busy time from /proc, and the summary lines of Kafka's perf tools
(ProducerPerformance, ConsumerPerformance) parsed."""

from __future__ import annotations

import os
import re
import resource

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
def cpu_seconds(pid: int | None, part: str = "both", kids_only: bool = False) -> float:
    """user + sys (or only "user" / "sys") CPU time so far of `pid` and its live child processes
    (kshim's trace writer; 0 for no process); with `kids_only`, of the child processes alone."""
    if pid is None:
        return 0.0
    total = 0
    for p in children(pid) if kids_only else [pid, *children(pid)]:
        try:
            with open(f"/proc/{p}/stat") as f:
                text = f.read()
        except OSError:                     # a child that just ended
            continue
        fields = text[text.rindex(")") + 2:].split()  # fields from #3 (state) on
        user, sys_ = int(fields[11]), int(fields[12])
        total += {"both": user + sys_, "user": user, "sys": sys_}[part]
    return total / CLK_TCK


def children(pid: int) -> list[int]:
    """The live descendants of `pid` (from /proc/<pid>/task/*/children)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            continue
        for k in kids:
            out += [k, *children(k)]
    return out


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
