"""`kshim compat --wire`: seeded differential runs, replays, shrinking (docs/kshim-compat.md)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from .compare import Normaliser, compare
from .known import reason
from .driver import run_scenario
from .generate import generate
from .runner import load_replay, minimize, prepare, ranges_of, run_one, run_seeds, save_replay


def add_arguments(p) -> None:
    g = p.add_argument_group("wire mode (--wire)")
    g.add_argument("--wire", action="store_true",
                   help="seeded random raw group requests sent to --bootstrap and --against in lock-step")
    g.add_argument("--seeds", default="0-99", help="seeds: N-M or a comma list (default 0-99)")
    g.add_argument("--control", action="store_true", help="compare --bootstrap with itself (a baseline: expect 0)")
    g.add_argument("--concurrency", type=int, default=6, help="scenarios at once (default 6)")
    g.add_argument("--replay", type=Path, nargs="+", default=None, metavar="FILE", help="run saved scenarios")
    g.add_argument("--minimize", type=Path, default=None, metavar="DIR",
                   help="shrink one failing seed per difference class into a replay file in DIR")
    g.add_argument("--show", type=int, default=None, metavar="SEED", help="print one seed's steps and answers")
    g.add_argument("--ignore-messages", action="store_true", help="error-message differences do not fail the run")


def parse_seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        if "-" in part.strip()[1:]:
            lo, hi = part.split("-", 1)
            out += range(int(lo), int(hi) + 1)
        elif part.strip():
            out.append(int(part))
    return out


def cmd_wire(args) -> int:
    if not args.bootstrap or not (args.against or args.control):
        print("kshim compat --wire: needs --bootstrap A and --against B (two targets to compare), or "
              "--bootstrap A --control (A against itself)", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_main(args, args.bootstrap, args.bootstrap if args.control else args.against))
    except (OSError, asyncio.TimeoutError, RuntimeError) as e:   # a target down, refusing or not ready
        print(f"kshim compat --wire: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


async def _main(args, bootstrap_a: str, bootstrap_b: str) -> int:
    a, b = await prepare(bootstrap_a, bootstrap_b)
    labels = (args.labels or ["A", "B"])[:2]
    if args.show is not None:
        sc = load_replay(args.replay[0]) if args.replay else generate(args.show, ranges_of(a, b))
        await _show(sc, a, b, labels)
        return 0
    if args.replay:
        failed = 0
        for path in args.replay:
            res = await run_one(load_replay(path), a, b)
            kinds = res.classes(messages=not args.ignore_messages)
            failed += bool(kinds or res.error)
            print(f"{path}: {'error ' + res.error if res.error else ('same' if not kinds else 'DIFFERENT')}")
            for d in res.diffs:
                print(f"  {d.line()}")
        return 1 if failed else 0
    seeds = parse_seeds(args.seeds)
    print(f"kshim compat --wire: {len(seeds)} seeds, {labels[0]}={bootstrap_a} {labels[1]}={bootstrap_b}"
          f"{' (control)' if args.control else ''}", file=sys.stderr)

    def progress(res, n):
        if n % 25 == 0 or n == len(seeds):
            print(f"  [{n}/{len(seeds)}] seeds done", file=sys.stderr)
    report = await run_seeds(seeds, a, b, args.concurrency, progress)
    classes = report.by_class()
    known = {k: v for k, v in classes.items() if reason(k)}
    hard = {k: v for k, v in classes.items() if " (message): " not in k and k not in known}
    soft = {k: v for k, v in classes.items() if " (message): " in k and k not in known}
    print(f"{len(report.results)} seeds, {report.requests} requests in {report.seconds:.0f} s: "
          f"{len(hard)} difference classes, {len(soft)} error-message classes, {len(known)} known, "
          f"{len(report.errors())} seeds failed to run, {len(report.unconfirmed)} classes set aside (not confirmed, or the broker's own)")
    for title, group in (("differences", hard), ("error messages", soft), ("known differences", known)):
        if group:
            print(f"\n{title} ({labels[0]} vs {labels[1]}); count, class, seeds:")
            for k, v in group.items():
                print(f"  {len(v):4d}  {k}   seeds {','.join(map(str, v[:8]))}{',...' if len(v) > 8 else ''}")
                if title.startswith("known"):
                    print(f"        reason: {reason(k)}")
    if report.unconfirmed:
        print("\nnot shown again by a rerun of the seed, or shown by the broker against itself (not counted): "
              + "; ".join(f"{k} (seeds {','.join(map(str, v[:4]))})" for k, v in report.unconfirmed.items()))
    for r in report.errors():
        print(f"  seed {r.seed}: {r.error}")
    if args.json:
        args.json.write_text(json.dumps({
            "labels": labels, "bootstraps": [bootstrap_a, bootstrap_b], "seeds": len(report.results),
            "requests": report.requests, "seconds": round(report.seconds, 1), "classes": classes,
            "errors": {r.seed: r.error for r in report.errors()}, "unconfirmed": report.unconfirmed}, indent=1))
    if args.minimize and classes:
        args.minimize.mkdir(parents=True, exist_ok=True)
        todo = hard if args.ignore_messages else {**hard, **soft}
        await _minimize_all(todo, a, b, args.minimize, args.concurrency)
    bad = hard or report.errors() or (soft and not args.ignore_messages)
    return 1 if bad else 0


async def _minimize_all(classes: dict, a, b, out: Path, concurrency: int) -> None:
    """One replay file per difference class, shrunk from its first seed (several at once)."""
    ranges = ranges_of(a, b)
    sem = asyncio.Semaphore(max(1, concurrency // 2))

    async def one(i: int, kind: str, seed: int):
        async with sem:
            small = await minimize(generate(seed, ranges), kind, a, b)
            path = out / f"diff-{i:02d}-seed{seed}.json"
            save_replay(path, small, kind)
            print(f"minimized {kind!r}: seed {seed}, {len(small.steps)} steps -> {path}", flush=True)
    await asyncio.gather(*(one(i, k, v[0]) for i, (k, v) in enumerate(classes.items())))


async def _show(sc, a, b, labels) -> None:
    sides = await run_scenario(sc, a, b)
    norms = [Normaliser(s) for s in sides]
    print(json.dumps({"members": sc.members}, indent=None))
    for idx, step in enumerate(sc.steps):
        if "sleep" in step:
            print(f"[{idx}] sleep {step['sleep']} ms")
            continue
        print(f"[{idx}] {step['conn']} api {step['api']} v{step['v']} {json.dumps(step['body'])[:300]}")
        for lab, s, n in zip(labels, sides, norms):
            got = s.answers.get(idx)
            shown = "parked (no answer)" if got is None else json.dumps(n.answer(step["api"], got))
            print(f"   {lab}: {shown[:600]}")
    for d in compare(sides):
        print("DIFF", d.line())
