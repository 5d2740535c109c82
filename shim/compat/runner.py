"""Runs planned scenarios against one or two targets, one scenario at a time (on the first target,
then the second), with a progress line per run on stderr. A scenario that fails records the
observation {"failed": reason} with generated names removed, so failures compare too."""

from __future__ import annotations

import re
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from shim.localkafka import KafkaInstall

from .context import Ctx
from .javaclient import JavaTools
from .scenarios import Scenario

_NAMES = re.compile(r"compat-[A-Za-z0-9._-]+|[0-9a-f]{8,}")


@dataclass
class Target:
    label: str                 # e.g. "kafka" / "kshim", or the bootstrap
    bootstrap: str
    results: dict[str, dict] = field(default_factory=dict)    # run key -> observation


def run_key(s: Scenario, client: str, protocol: str) -> str:
    return f"{s.name} [{client}, {protocol}]"


def normalise_failure(e: BaseException) -> str:
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return f"{type(e).__name__}: {_NAMES.sub('<name>', first)[:200]}"


def run_one(target: Target, kafka: KafkaInstall, log_dir: Path, s: Scenario, client: str, protocol: str,
            tag: str) -> dict:
    ctx = Ctx(target.bootstrap, tag, JavaTools(kafka, target.bootstrap, log_dir / tag / s.name))
    try:
        return s.fn(ctx, client, protocol)
    except Exception as e:
        (log_dir / tag).mkdir(parents=True, exist_ok=True)
        with open(log_dir / tag / "failures.log", "a") as f:
            f.write(f"== {run_key(s, client, protocol)}\n{traceback.format_exc()}\n")
        return {"failed": normalise_failure(e)}
    finally:
        ctx.stop_all()


def run_all(targets: list[Target], kafka: KafkaInstall, plan: list[tuple[Scenario, str, str]], log_dir: Path,
            out=sys.stderr) -> None:
    total = len(plan) * len(targets)
    n = 0
    for s, client, protocol in plan:
        for i, target in enumerate(targets):
            n += 1
            key = run_key(s, client, protocol)
            print(f"[{n}/{total}] {key} on {target.label} ...", file=out, end="", flush=True)
            t0 = time.monotonic()
            obs = run_one(target, kafka, log_dir, s, client, protocol, "ab"[i])
            target.results[key] = obs
            status = "FAILED" if "failed" in obs else "done"
            print(f" {status} ({time.monotonic() - t0:.0f}s)", file=out, flush=True)
