"""Many seeds at once, difference classes, shrinking a failing scenario, replay files."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from .compare import Difference, compare
from .driver import run_scenario
from .generate import Scenario, generate
from .target import Target


@dataclass
class SeedResult:
    seed: int
    requests: int
    diffs: list[Difference]
    error: str | None = None

    def classes(self, messages: bool = True) -> set[str]:
        return {d.kind for d in self.diffs if messages or not d.message}


@dataclass
class RunReport:
    results: list[SeedResult] = field(default_factory=list)
    seconds: float = 0.0
    unconfirmed: dict[str, list[int]] = field(default_factory=dict)   # seen once, not on the rerun

    @property
    def requests(self) -> int:
        return sum(r.requests for r in self.results)

    def by_class(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for r in self.results:
            for k in sorted(r.classes()):
                out.setdefault(k, []).append(r.seed)
        return dict(sorted(out.items(), key=lambda kv: (-len(kv[1]), kv[0])))

    def errors(self) -> list[SeedResult]:
        return [r for r in self.results if r.error]


def new_run_id() -> str:
    return "kw" + format(int(time.time() * 1000) % 36**6, "x")


async def prepare(bootstrap_a: str, bootstrap_b: str, run_id: str | None = None) -> tuple[Target, Target]:
    run_id = run_id or new_run_id()
    a, b = Target("a", bootstrap_a, run_id), Target("b", bootstrap_b, run_id)
    await a.setup()
    await b.setup()
    return a, b


def ranges_of(a: Target, b: Target) -> dict:
    return {k: (max(a.ranges[k][0], b.ranges[k][0]), min(a.ranges[k][1], b.ranges[k][1]))
            for k in a.ranges if k in b.ranges}


async def run_one(sc: Scenario, a: Target, b: Target) -> SeedResult:
    n = sum(1 for s in sc.steps if "sleep" not in s)
    try:
        sides = await run_scenario(sc, a, b)
    except Exception as e:          # a target refused a connection, a request could not be built...
        return SeedResult(sc.seed, n, [], f"{type(e).__name__}: {e}")
    return SeedResult(sc.seed, n, compare(sides))


RERUNS = 3
CONTROL_RUNS = 8


async def confirm(report: RunReport, a: Target, b: Target, ranges: dict, concurrency: int) -> None:
    """Run every seed that showed a difference RERUNS more times (fresh groups): a class missing from
    any rerun is a timing the tester does not control (two targets under load) or an outcome that
    follows generated ids on both sides (kshim's own differences repeat every time). A class that
    shows in every rerun is then looked for in up to CONTROL_RUNS runs of the seed on A against A itself: one that shows
    there is the broker differing from itself (e.g. an outcome that follows the hash order of
    generated member ids). Both kinds are kept apart in `unconfirmed`, not counted."""
    sem = asyncio.Semaphore(concurrency)
    control = Target("c", a.bootstrap, a.run_id)
    await control.setup()

    def set_aside(res: SeedResult, kinds: set[str]) -> None:
        for d in res.diffs:
            if d.kind in kinds:
                seeds = report.unconfirmed.setdefault(d.kind, [])
                if res.seed not in seeds:
                    seeds.append(res.seed)
        res.diffs = [d for d in res.diffs if d.kind not in kinds]

    async def again(res: SeedResult):
        sc = generate(res.seed, ranges)
        for _ in range(RERUNS):
            if not res.diffs:
                return
            async with sem:
                again_res = await run_one(sc, a, b)
            set_aside(res, res.classes() - again_res.classes())
        for _ in range(CONTROL_RUNS):
            if not res.diffs:
                return
            async with sem:
                noise = await run_one(sc, a, control)
            set_aside(res, res.classes() & noise.classes())
    await asyncio.gather(*(again(r) for r in report.results if r.diffs))


async def run_seeds(seeds, a: Target, b: Target, concurrency: int = 6, progress=None,
                    confirm_differences: bool = True) -> RunReport:
    report = RunReport()
    ranges = ranges_of(a, b)
    sem = asyncio.Semaphore(concurrency)
    start = time.monotonic()

    async def one(seed: int):
        async with sem:
            res = await run_one(generate(seed, ranges), a, b)
            report.results.append(res)
            if progress:
                progress(res, len(report.results))
    await asyncio.gather(*(one(s) for s in seeds))
    if confirm_differences:
        await confirm(report, a, b, ranges, concurrency)
    report.results.sort(key=lambda r: r.seed)
    report.seconds = time.monotonic() - start
    return report


async def minimize(sc: Scenario, kind: str, a: Target, b: Target, tries: int = 2) -> Scenario:
    """Delta debugging over the steps: drop chunks, then single steps, while the difference class
    `kind` still shows (each candidate run `tries` times: one sighting is enough to keep it)."""
    async def shows(steps: list) -> bool:
        cand = Scenario(sc.seed, sc.members, steps)
        for _ in range(tries):
            res = await run_one(cand, a, b)
            if kind in res.classes():
                return True
        return False

    steps = list(sc.steps)
    chunk = max(1, len(steps) // 2)
    while chunk >= 1:
        i, removed = 0, False
        while i < len(steps):
            cand = steps[:i] + steps[i + chunk:]
            if cand and await shows(cand):
                steps, removed = cand, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return Scenario(sc.seed, sc.members, steps)


def save_replay(path: Path, sc: Scenario, kind: str | None = None, note: str | None = None) -> None:
    data = {"difference": kind, "note": note, **sc.to_json()}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def load_replay(path: Path) -> Scenario:
    return Scenario.from_json(json.loads(Path(path).read_text()))
