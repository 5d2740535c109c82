"""A real traced rebalance scenario through kshim, analysed live and after kshim stopped, compared
with the consumers' own logs (scripts/rebalance-scenario).

A real Kafka broker, kshim in front of it with `--trace`, N Java consumers (RebalanceConsumer,
classic protocol, CooperativeStickyAssignor, session timeout and max.poll.interval.ms 6 s; the static
member's session timeout 15 s, as its JVM restart takes 2-5 s on a busy machine) on one topic. Once the group is stable: one member blocks its poll loop past max.poll.interval.ms (its
heartbeat thread sends a LeaveGroup "consumer poll timeout has expired."; it rejoins when the loop
returns), one static member is closed and restarted with the same group.instance.id within its
session timeout, one member is SIGKILLed (the group waits for its session timeout). Then `kshim
trace analyze` runs while kshim still runs, the consumers stop, kshim stops, and `kshim trace
analyze` runs again. Each report's partition gaps are compared with the gaps the consumers' logs
show (testsuite/trace/consumer_gaps.py); the script prints both, the differences and each
rebalance's cause, and exits 1 when an edge both sides measure differs by more than --tolerance-ms.

Usage: scripts/rebalance-scenario [--members 6] [--partitions 12] [--out DIR] [--port P] [--no-analyze]
       scripts/rebalance-scenario --compare RUN_DIR   (compare an earlier run folder again)"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from shim.compat.pymembers import create_topic
from shim.localkafka import LocalKafka
from shim.compat.javaclient import JavaTools
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block
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


def run_scenario(kafka_install, bootstrap: str, topic: str, group_id: str, workdir: Path, members: int = 3,
                 partitions: int = 6) -> tuple[list[dict], list[dict]]:
    """The scenario's Java consumers against `bootstrap` (kshim or the broker): (marks, consumer logs);
    every consumer stopped whatever happens."""
    create_topic(bootstrap, topic, partitions=partitions)
    tools = JavaTools(kafka_install, bootstrap, workdir / "consumers")
    group = ScenarioMembers(tools, topic, group_id, workdir / "work")
    try:
        marks = drive(group, members, partitions)
        return marks, group.write_logs()
    finally:
        group.stop_all()
        tools.stop_all()


def analyze_cli(trace: Path, out: Path, log: Path) -> dict:
    """`kshim trace analyze TRACE --out OUT` as a user runs it: its exit code and wall seconds."""
    t0 = time.monotonic()
    with open(log, "w") as f:
        rc = subprocess.run([sys.executable, "-m", "shim.cli", "trace", "analyze", str(trace), "--out", str(out),
                             "--master", "local[2]", "--no-png", "--shuffle-partitions", "2"],
                            stdout=f, stderr=subprocess.STDOUT).returncode
    return {"rc": rc, "seconds": round(time.monotonic() - t0, 1), "log": str(log)}


def compare_run(out: Path, tolerance: int) -> bool:
    """Compares each report of a run folder with its consumer logs and prints the tables; True: all agree."""
    from testsuite.trace.gap_compare import compare_report, print_comparison
    from testsuite.trace.scenario_members import read_logs
    run = json.loads((out / "run.json").read_text())
    logs, marks = read_logs(out / "consumers"), run["marks"]
    worst, ok = 0, True
    for name in ("live", "final"):
        a = run["analyses"].get(name)
        if a is None:
            continue
        if a["rc"] != 0:
            print(f"\n== report {name}: kshim trace analyze exited {a['rc']} after {a['seconds']} s; its output, "
                  f"{a['log']}:\n" + Path(a["log"]).read_text()[-1500:])
            ok = False
            continue
        cmp = compare_report(out / f"report-{name}", run["group"], logs, marks, tolerance)
        print_comparison(name, cmp, a["seconds"], marks)
        worst, ok = max(worst, cmp["max_diff_ms"]), ok and cmp["ok"]
    print(f"\nmax |difference| of judged edges {worst} ms; " + ("OK" if ok else "FAIL") + f" (tolerance {tolerance} ms)")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=6)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--out", type=Path, default=None, help="run folder (default: a new one under build/run)")
    ap.add_argument("--port", type=int, default=0, help="first of 8 ports (broker, controller, kshim)")
    ap.add_argument("--tolerance-ms", type=int, default=100)
    ap.add_argument("--no-analyze", action="store_true", help="only run the scenario and write trace and logs")
    ap.add_argument("--compare", type=Path, metavar="RUN_DIR", help="only compare an earlier run folder again")
    args = ap.parse_args()
    if args.compare:
        return 0 if compare_run(args.compare.resolve(), args.tolerance_ms) else 1
    out = (args.out or Path("build/run") / f"rebalance-scenario-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    base = args.port or free_port_block(8, start=34100 + (os.getpid() % 97) * 40)
    t_run = time.monotonic()
    say = lambda m: print(f"{time.monotonic() - t_run:6.1f}s {m}", file=sys.stderr, flush=True)  # noqa: E731
    kafka = LocalKafka(base_port=base, workdir=out / "kafka")
    say(f"[scenario] starting Kafka on {kafka.bootstrap}, kshim on 127.0.0.1:{base + 2}, run folder {out}")
    kafka.start()
    shim = None
    run = {"group": f"scenario-{int(time.time())}", "topic": "scenario-topic", "members": args.members,
           "partitions": args.partitions, "analyses": {}}
    try:
        shim = KshimProcess(kafka.bootstrap, base + 2, out / "kshim.log", ["--trace", str(out / "trace")]).start()
        create_topic(shim.bootstrap, run["topic"], partitions=args.partitions)
        tools = JavaTools(kafka.kafka, shim.bootstrap, out / "consumers")
        group = ScenarioMembers(tools, run["topic"], run["group"], out / "work", Timing())
        try:
            run["marks"] = drive(group, args.members, args.partitions, say)
            group.write_logs()
            if not args.no_analyze:
                say("[scenario] kshim trace analyze (live: kshim and the consumers still run)")
                run["analyses"]["live"] = analyze_cli(out / "trace", out / "report-live", out / "analyze-live.log")
        finally:
            group.stop_all()
            tools.stop_all()
            group.write_logs()
        say(f"[scenario] consumers closed; kshim stopped ({shim.stop()})")
        shim = None
        if not args.no_analyze:
            say("[scenario] kshim trace analyze (after kshim stopped)")
            run["analyses"]["final"] = analyze_cli(out / "trace", out / "report-final", out / "analyze-final.log")
    finally:
        if shim:
            shim.stop()
        kafka.stop()
        (out / "run.json").write_text(json.dumps(run, indent=1))
    print(f"run folder: {out} (trace/, consumers/: NAME.events.jsonl, NAME.stderr.log; run.json, report-live/, "
          f"report-final/); scenario and analyses took {time.monotonic() - t_run:.0f} s")
    if args.no_analyze:
        return 0
    return 0 if compare_run(out, args.tolerance_ms) else 1


if __name__ == "__main__":
    sys.exit(main())
