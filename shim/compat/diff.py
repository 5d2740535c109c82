"""Compares two targets' observations run by run, key by key (nested dicts flattened to dotted
keys), and attaches the reviewed reason of shim/compat/known_differences.py when there is one."""

from __future__ import annotations

from dataclasses import dataclass

from .known_differences import reason


@dataclass
class Difference:
    run: str          # "scenario [client, protocol]"
    key: str          # dotted observation key
    a: object
    b: object
    reason: str | None


def flatten(obs: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in obs.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and not (set(obs) == {"failed"}):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _parse(run: str) -> tuple[str, str, str]:
    scenario, rest = run.split(" [", 1)
    client, protocol = rest.rstrip("]").split(", ")
    return scenario, client, protocol


def compare(a: dict[str, dict], b: dict[str, dict]) -> list[Difference]:
    diffs = []
    for run in a:
        if run not in b:
            continue
        fa, fb = flatten(a[run]), flatten(b[run])
        if "failed" in fa or "failed" in fb:          # one failed: the whole run differs, as one row
            if fa != fb:
                fa = {"outcome": fa.get("failed", "ok")}
                fb = {"outcome": fb.get("failed", "ok")}
        scenario, client, protocol = _parse(run)
        for key in sorted(set(fa) | set(fb)):
            va, vb = fa.get(key, "(absent)"), fb.get(key, "(absent)")
            if va != vb:
                diffs.append(Difference(run, key, va, vb, reason(scenario, client, protocol, key)))
    return diffs
