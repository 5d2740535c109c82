"""`kshim compat`: run the scenario suite against a bootstrap, or against two and diff them
(docs/kshim-compat.md). Exit status 1 when the two differ (or, with one target, a scenario failed)."""

from __future__ import annotations

import sys
import time
from pathlib import Path


def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def add_parser(sub) -> None:
    from .scenarios import ALL_CLIENTS, SCENARIOS
    p = sub.add_parser("compat", help="run group scenarios with real clients against a bootstrap (and diff two)",
                       description="Scenarios: " + ", ".join(SCENARIOS) + ". See docs/kshim-compat.md.")
    p.add_argument("--bootstrap", metavar="A", help="host:port of the target (kshim or Kafka)")
    p.add_argument("--against", metavar="B", help="a second target; differences are listed, exit 1 if any")
    p.add_argument("--clients", type=_csv, default=list(ALL_CLIENTS),
                   help=f"comma-separated subset of {','.join(ALL_CLIENTS)} (default: all)")
    p.add_argument("--protocol", type=_csv, default=["classic", "consumer"],
                   help="classic,consumer (default both)")
    p.add_argument("--scenarios", type=_csv, default=None, help="comma-separated scenario names (default all)")
    p.add_argument("--quick", action="store_true", help="only the quick subset CI runs")
    p.add_argument("--labels", type=_csv, default=None, help="names of the targets in the table (default A,B)")
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="write every observation as JSON")
    p.add_argument("--html", type=Path, default=None, metavar="OUT", help="write an HTML report")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    from .wirediff.command import add_arguments
    add_arguments(p)
    p.set_defaults(func=cmd_compat)


def cmd_compat(args) -> int:
    from shim.localkafka import install
    from shim.localkafka.home import build_dir

    from . import report
    from .diff import compare
    from .runner import Target, run_all
    from .scenarios import SCENARIOS, plan
    if args.wire:
        from .wirediff.command import cmd_wire
        return cmd_wire(args)
    if args.list:
        for s in SCENARIOS.values():
            print(f"{s.name:28s} {','.join(s.clients):40s} {','.join(s.protocols):10s} {s.doc}")
        return 0
    if not args.bootstrap:
        print("kshim compat: --bootstrap is required: give the target's host:port, e.g. --bootstrap "
              "127.0.0.1:9092 (and --against 127.0.0.1:19092 to diff it with a broker)", file=sys.stderr)
        return 2
    try:
        todo = plan(args.scenarios, args.clients, args.protocol, args.quick)
    except ValueError as e:
        print(f"kshim compat: {e}", file=sys.stderr)
        return 2
    if not todo:
        print("kshim compat: nothing to run for these --scenarios/--clients/--protocol: "
              "see `kshim compat --list` for which clients and protocols each scenario takes", file=sys.stderr)
        return 2
    bootstraps = [args.bootstrap] + ([args.against] if args.against else [])
    labels = (args.labels or ["A", "B"])[:len(bootstraps)]
    targets = [Target(lab, b) for lab, b in zip(labels, bootstraps)]
    log_dir = build_dir() / "compat" / time.strftime("%Y%m%d-%H%M%S")
    print(f"kshim compat: {len(todo)} runs on {len(targets)} target(s); client logs in {log_dir}", file=sys.stderr)
    run_all(targets, install(), todo, log_dir)
    results = [t.results for t in targets]
    diffs = compare(*results) if len(targets) == 2 else []
    if len(targets) == 2:
        sys.stdout.write(report.table(labels, diffs))
    else:
        for key, obs in results[0].items():
            print(f"{key}: {obs}")
    print(report.summary(labels, results, diffs), file=sys.stderr)
    if args.json:
        args.json.write_text(report.to_json(labels, bootstraps, results, diffs))
    if args.html:
        args.html.write_text(report.to_html(labels, bootstraps, results, diffs))
    if len(targets) == 2:
        return 1 if diffs else 0
    return 1 if any("failed" in o for o in results[0].values()) else 0
