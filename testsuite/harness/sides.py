"""Run the broker side and the kshim side of a differential test at the same time: most of their time
is waiting (session timeouts, rebalance delays, a producer's throttle), and each side uses its own
fresh topic and group names, so they do not see each other."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable


def both_sides(run: Callable[[str], object], sides=("broker", "kshim")) -> dict:
    """{side: run(side)} with the sides run concurrently; the first side's exception (in `sides`
    order) is raised after both finished."""
    with ThreadPoolExecutor(len(sides)) as pool:
        futures = {side: pool.submit(run, side) for side in sides}
        done = {}
        for side in sides:
            done[side] = futures[side].exception() or futures[side].result()
    for side in sides:
        if isinstance(done[side], BaseException):
            raise done[side]
    return done
