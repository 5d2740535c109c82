"""A real traced rebalance scenario through kshim, analysed live and after kshim stopped, compared
with the consumers' own logs (scripts/rebalance-scenario).

A real Kafka broker, kshim in front of it with `--trace`, N Java consumers (RebalanceConsumer,
classic protocol, CooperativeStickyAssignor, session timeout and max.poll.interval.ms 6 s) on one
topic. Once the group is stable: one member blocks its poll loop past max.poll.interval.ms (its
heartbeat thread sends a LeaveGroup "consumer poll timeout has expired."; it rejoins when the loop
returns), one static member is closed and restarted with the same group.instance.id within its
session timeout, one member is SIGKILLed (the group waits for its session timeout). Then `kshim
trace analyze` runs while kshim still runs, the consumers stop, kshim stops, and `kshim trace
analyze` runs again. Each report's partition gaps are compared with the gaps the consumers' logs
show (testsuite/trace/consumer_gaps.py); the script prints both, the differences and each
rebalance's cause, and exits 1 when an edge both sides measure differs by more than --tolerance-ms.

Usage: scripts/rebalance-scenario [--members 6] [--partitions 12] [--out DIR] [--port P]"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from shim.localkafka import LocalKafka
from testsuite.harness.clients import create_topic
from testsuite.harness.javatools import JavaTools
from testsuite.harness.kshimproc import KshimProcess
from testsuite.harness.ports import free_port_block
from testsuite.trace.scenario_members import ScenarioMembers, Timing, now_ms


def roles(members: int) -> dict[str, str]:
    """Which member does what: m1 stalls, m2 is the static bouncer (with 4+ members), the last is killed."""
    r = {"stall": "m1", "kill": f"m{members - 1}"}
    if members >= 4:
        r["bounce"] = "m2"
    return r


def drive(group: ScenarioMembers, members: int, partitions: int, say=print) -> list[dict]:
    """Runs the scenario on a started topic; returns its marks (step, member, wall ms)."""
    r, t = roles(members), group.timing
    marks: list[dict] = []

    def mark(step: str, label: str | None = None, **more) -> None:
        marks.append({"step": step, "member": label, "wall_ms": now_ms(), **more})
        say(f"[scenario {marks[-1]['wall_ms'] - marks[0]['wall_ms'] if len(marks) > 1 else 0:>6} ms] {step}"
            + (f" {label}" if label else ""))

    mark("start")
    for i in range(members):
        label = f"m{i}"
        group.start(label, instance=f"{group.group}-static-{label}" if r.get("bounce") == label else None)
    group.wait_stable(partitions, timeout=90)
    mark("stable")
    stall_ms = t.max_poll_interval_ms + 2500
    group.stall(r["stall"], stall_ms)
    mark("poll_loop_blocked", r["stall"], ms=stall_ms)
    group.live[r["stall"]].client.wait_event("stall_end", timeout=stall_ms / 1000 + 10)
    group.wait_stable(partitions, timeout=60)
    mark("stable")
    if "bounce" in r:
        inc = group.stop(r["bounce"])
        mark("static_member_closed", r["bounce"])
        group.start(r["bounce"], instance=inc.instance, name=f"{r['bounce']}b")
        mark("static_member_restarted", r["bounce"])
        group.wait_stable(partitions, timeout=60)
        mark("stable")
    group.kill(r["kill"])
    mark("killed", r["kill"])
    group.wait_stable(partitions, timeout=t.session_timeout_ms / 1000 + 60)
    mark("stable")
    return marks


def analyze_cli(trace: Path, out: Path, log: Path) -> float:
    """`kshim trace analyze TRACE --out OUT` as a user runs it; returns its wall seconds."""
    t0 = time.monotonic()
    with open(log, "w") as f:
        rc = subprocess.run([sys.executable, "-m", "shim.cli", "trace", "analyze", str(trace), "--out", str(out),
                             "--master", "local[2]", "--no-png", "--shuffle-partitions", "2"],
                            stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise SystemExit(f"kshim trace analyze exited {rc}; see {log}:\n{log.read_text()[-3000:]}")
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=6)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--out", type=Path, default=None, help="run folder (default: a new one under build/run)")
    ap.add_argument("--port", type=int, default=0, help="first of 8 ports (broker, controller, kshim)")
    ap.add_argument("--tolerance-ms", type=int, default=100)
    ap.add_argument("--no-analyze", action="store_true", help="only run the scenario and write trace and logs")
    args = ap.parse_args()
    from testsuite.trace.gap_compare import compare_report, print_comparison

    out = args.out or Path("build/run") / f"rebalance-scenario-{time.strftime('%Y%m%d-%H%M%S')}"
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    base = args.port or free_port_block(8, start=34100 + (os.getpid() % 97) * 40)
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    t_run = time.monotonic()
    kafka = LocalKafka(base_port=base, workdir=out / "kafka")
    say(f"[scenario] starting Kafka on {kafka.bootstrap}, kshim on 127.0.0.1:{base + 2}, run folder {out}")
    kafka.start()
    shim = None
    try:
        shim = KshimProcess(kafka.bootstrap, base + 2, out / "kshim.log", ["--trace", str(out / "trace")]).start()
        topic, group_id = "scenario-topic", f"scenario-{int(time.time())}"
        create_topic(shim.bootstrap, topic, partitions=args.partitions)
        tools = JavaTools(kafka.kafka, shim.bootstrap, out / "consumers")
        group = ScenarioMembers(tools, topic, group_id, out / "work", Timing())
        try:
            marks = drive(group, args.members, args.partitions, say)
            logs = group.write_logs()
            (out / "marks.json").write_text(json.dumps(marks, indent=1))
            results = {}
            if not args.no_analyze:
                say("[scenario] kshim trace analyze (live: kshim and the consumers still run)")
                secs = analyze_cli(out / "trace", out / "report-live", out / "analyze-live.log")
                results["live"] = (out / "report-live", secs)
        finally:
            group.stop_all()
            tools.stop_all()
        rc = shim.stop()
        shim = None
        say(f"[scenario] kshim stopped ({rc})")
        if not args.no_analyze:
            say("[scenario] kshim trace analyze (after kshim stopped)")
            secs = analyze_cli(out / "trace", out / "report-final", out / "analyze-final.log")
            results["final"] = (out / "report-final", secs)
    finally:
        if shim:
            shim.stop()
        kafka.stop()
    print(f"run folder: {out} (trace/, consumers/*.events.jsonl and *.stderr.log, marks.json, report-*/)")
    worst, failed = 0, False
    for name, (report, secs) in results.items():
        cmp = compare_report(report, group_id, group.write_logs(), marks, args.tolerance_ms)
        print_comparison(name, cmp, secs, marks)
        worst = max(worst, cmp["max_diff_ms"])
        failed |= not cmp["ok"]
    print(f"scenario {time.monotonic() - t_run:.0f} s; max |difference| {worst} ms; "
          + ("FAIL" if failed else "OK") + f" (tolerance {args.tolerance_ms} ms)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
