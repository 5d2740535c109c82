"""Outputs of `kshim compat`: the side-by-side table of differences (text), the JSON document (every
observation of every target, the differences), and an HTML page of the same."""

from __future__ import annotations

import html
import json
from dataclasses import asdict

from .diff import Difference, flatten


def _cell(v: object, width: int) -> str:
    s = json.dumps(v, default=str) if not isinstance(v, str) else v
    return s if len(s) <= width else s[:width - 1] + "…"


def table(labels: list[str], diffs: list[Difference], width: int = 34) -> str:
    if not diffs:
        return "no differences\n"
    head = ["run", "observation", *labels, "reason"]
    rows = [[d.run, d.key, _cell(d.a, width), _cell(d.b, width), d.reason or "unexplained"] for d in diffs]
    widths = [min(max(len(r[i]) for r in [head, *rows]), 60 if i == 4 else 48) for i in range(5)]
    line = lambda r: "  ".join(_cell(c, w).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(head), "  ".join("-" * w for w in widths), *map(line, rows)]) + "\n"


def summary(labels: list[str], results: list[dict], diffs: list[Difference]) -> str:
    runs = len(results[0])
    failed = {lab: sum(1 for o in r.values() if "failed" in o) for lab, r in zip(labels, results)}
    runs_differing = len({d.run for d in diffs})
    unexplained = sum(1 for d in diffs if not d.reason)
    parts = [f"{runs} runs", ", ".join(f"{lab}: {n} failed" for lab, n in failed.items())]
    if len(labels) == 2:
        parts.append(f"{runs_differing} runs differ ({len(diffs)} observations, {unexplained} unexplained)")
    return "; ".join(parts)


def to_json(labels: list[str], bootstraps: list[str], results: list[dict], diffs: list[Difference]) -> str:
    doc = {"targets": [{"label": lab, "bootstrap": b, "results": r} for lab, b, r in zip(labels, bootstraps, results)],
           "differences": [asdict(d) for d in diffs]}
    return json.dumps(doc, indent=2, default=str, sort_keys=False)


def to_html(labels: list[str], bootstraps: list[str], results: list[dict], diffs: list[Difference]) -> str:
    e = lambda v: html.escape(v if isinstance(v, str) else json.dumps(v, default=str))  # noqa: E731
    out = ["<!doctype html><meta charset=utf-8><title>kshim compat</title>",
           "<style>body{font:14px sans-serif}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
           "padding:3px 6px;vertical-align:top}.d{background:#fdd}.k{background:#ffd}</style>",
           f"<h1>kshim compat</h1><p>{e(summary(labels, results, diffs))}</p><p>",
           "<br>".join(f"{e(lab)}: {e(b)}" for lab, b in zip(labels, bootstraps)), "</p>"]
    if len(labels) == 2:
        out.append("<h2>Differences</h2><table><tr><th>run<th>observation<th>" + "<th>".join(map(e, labels))
                   + "<th>reason</tr>")
        for d in diffs:
            out.append(f"<tr class={'k' if d.reason else 'd'}><td>{e(d.run)}<td>{e(d.key)}<td>{e(d.a)}<td>{e(d.b)}"
                       f"<td>{e(d.reason or 'unexplained')}</tr>")
        out.append("</table>")
    out.append("<h2>Observations</h2><table><tr><th>run<th>observation<th>" + "<th>".join(map(e, labels)) + "</tr>")
    differing = {(d.run, d.key) for d in diffs}
    for run in results[0]:
        flats = [flatten(r.get(run, {})) for r in results]
        for key in sorted(set().union(*flats)):
            cls = " class=d" if (run, key) in differing else ""
            out.append(f"<tr{cls}><td>{e(run)}<td>{e(key)}" + "".join(f"<td>{e(f.get(key, '(absent)'))}" for f in flats)
                       + "</tr>")
    out.append("</table>")
    return "\n".join(out) + "\n"
