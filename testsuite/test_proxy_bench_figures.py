"""bench-proxy's summary: ranges over rounds and the paired comparisons of kshim with the peers
(testsuite/bench/proxy_runner.py), from runs whose figures are given."""

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from testsuite.bench.proxy_figures import children, cpu_seconds
from testsuite.bench.proxy_runner import ProxyBench, Run, Target

# a process that starts a child burning 0.6 s of CPU, then both wait
_BURNER = ("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\ntime.sleep(30)")
_PARENT = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {_BURNER!r}]); time.sleep(30)"


def bench_with(rates: dict[str, list[tuple[float, float]]]) -> ProxyBench:
    """A ProxyBench whose runs are given: per target, per round, (producer rec/s, consumer MB/s)."""
    bench = ProxyBench.__new__(ProxyBench)
    bench.args = SimpleNamespace(quiet_cores=0.25)
    bench.targets = [Target(n, "x", None if n == "direct" else 1) for n in rates]
    bench.runs = []
    for name, rounds in rates.items():
        for rnd, (rps, mbps) in enumerate(rounds):
            bench.runs.append(Run("producer", name, rnd, 1.0, {"rps": rps}))
            bench.runs.append(Run("consumer", name, rnd, 1.0, {"MB.sec": mbps}))
    return bench


def test_kshim_is_compared_per_round_with_the_best_relay_the_peer_and_its_untraced_self():
    bench = bench_with({
        "direct": [(100, 50), (200, 100), (100, 50)],
        "kshim-uvloop": [(90, 45), (180, 80), (95, 40)],
        "kshim-uvloop-traced": [(81, 45), (171, 40), (95, 40)],
        "kroxylicious": [(60, 30), (120, 100), (100, 20)],
        "relay-copy": [(90, 50), (200, 100), (90, 40)],     # medians 90 rec/s, 50 MB/s
        "relay-splice": [(100, 40), (200, 90), (100, 40)],  # medians 100 rec/s, 40 MB/s
    })
    c = bench.comparisons()
    k = c["kshim-uvloop"]
    # against the relay of the higher median, round by round: producer relay-splice 90/100, 180/200,
    # 95/100 -> median 0.9; consumer relay-copy 45/50, 80/100, 40/40 -> 0.9
    assert k["best relay"]["producer"] == pytest.approx(0.9)
    assert k["best relay"]["consumer"] == pytest.approx(0.9)
    assert k["kroxylicious"]["producer"] == pytest.approx(1.5)   # 1.5, 1.5, 0.95
    assert "kshim-uvloop" not in k
    t = c["kshim-uvloop-traced"]
    assert t["kshim-uvloop"]["producer"] == pytest.approx(0.95)  # 0.9, 0.95, 1.0
    assert t["kshim-uvloop"]["consumer"] == pytest.approx(1.0)   # 1.0, 0.5, 1.0
    assert set(c) == {"kshim-uvloop", "kshim-uvloop-traced"}


def test_no_peer_no_comparison_and_the_range_covers_every_round():
    bench = bench_with({"direct": [(100, 50), (120, 60)], "kshim-uvloop": [(80, 55), (110, 40)]})
    assert bench.comparisons() == {"kshim-uvloop": {}}
    assert bench.paired("producer", "rps", "kshim-uvloop", "direct") == pytest.approx((0.8 + 110 / 120) / 2)


def test_a_proxys_child_processes_count_apart_from_it():
    """cpu_seconds(kids_only=True): the CPU of a proxy's child processes (kshim's trace writer) alone,
    which bench-proxy reports beside the proxy's whole CPU."""
    parent = subprocess.Popen([sys.executable, "-c", _PARENT])
    try:
        deadline = time.monotonic() + 20
        while cpu_seconds(parent.pid, kids_only=True) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.1)
        kids, both = cpu_seconds(parent.pid, kids_only=True), cpu_seconds(parent.pid)
        assert kids >= 0.5
        assert both >= kids + 0.01                  # the parent's own start-up is in the whole only
        assert cpu_seconds(os.getpid(), kids_only=True) >= kids   # a grandchild counts too
    finally:
        for pid in children(parent.pid):
            os.kill(pid, 9)
        parent.kill()
        parent.wait()
