"""The proxy benchmark's report (testsuite/bench/proxy_bench.py): the table printed from a
ProxyBench summary, and the machine the run was on (for the JSON)."""

from __future__ import annotations

import os
import platform
import subprocess

from shim.localkafka.home import KAFKA_VERSION


def _cpu_cell(d: dict) -> str:
    return f"{d['proxy_cpu_pct']:10.0f}%{d['proxy_cpu_ms_per_mb']:7.2f}" if "proxy_cpu_pct" in d else ""


def _range(d: dict, decimals: int) -> str:
    lo, hi = d.get("spread", (float("nan"),) * 2)
    return f"{lo:.{decimals}f}-{hi:.{decimals}f}"


def table(summary: dict, args) -> str:
    tg = summary["targets"]
    lines = [f"kshim proxy benchmark: Kafka {KAFKA_VERSION}, {args.records} x {args.record_size} B records, "
             f"acks={args.acks} linger.ms={args.linger_ms}, medians of {args.rounds} rounds",
             "",
             f"{'producer':24}{'rec/s':>10}{'range':>14}{'MB/s':>8}{'avg ms':>8}{'p50':>6}{'p95':>6}{'p99':>6}"
             f"{'p99.9':>7}{'proxy CPU%':>11}{'ms/MB':>7}"]
    for name, d in tg.items():
        p = d["producer"]
        cpu = _cpu_cell(p)
        lines.append(f"{name:24}{p['rps']:10.0f}{_range(p, 0):>14}{p['mbps']:8.2f}{p['avg']:8.1f}{p['p50']:6.0f}"
                     f"{p['p95']:6.0f}{p['p99']:6.0f}{p['p999']:7.0f}{cpu:>18}")
    lines += ["", f"{'consumer':24}{'msg/s':>10}{'MB/s':>9}{'range':>14}{'fetch MB/s':>12}{'rebal ms':>10}"
                  f"{'proxy CPU%':>11}{'ms/MB':>7}"]
    for name, d in tg.items():
        c = d["consumer"]
        cpu = _cpu_cell(c)
        lines.append(f"{name:24}{c['nMsg.sec']:10.0f}{c['MB.sec']:9.2f}{_range(c, 1):>14}{c['fetch.MB.sec']:12.2f}"
                     f"{c['rebalance.time.ms']:10.0f}{cpu:>18}")
    if "latency" in args.phases:
        lines += ["", f"latency at {summary['latency_rate_rps']} rec/s (half the through-kshim ceiling)",
                  f"{'':24}{'avg ms':>8}{'p50':>6}{'p95':>6}{'p99':>6}{'p99.9':>7}{'proxy CPU%':>11}{'ms/MB':>7}"]
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
                     f"RSS max {d['proxy_rss_mb_max']:.0f} MB")
    comparisons = summary.get("comparisons") or {}
    if any(comparisons.values()):
        lines += ["", "kshim against the others (median over rounds of the same round's ratio):"]
        for name, against in comparisons.items():
            for other, r in against.items():
                lines.append(f"  {name} / {other}: producer {r['producer']:.3f}, consumer {r['consumer']:.3f}")
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
