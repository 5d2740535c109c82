"""Per-partition unavailability from `kshim trace analyze` (REPORT/partition_gaps.parquet, columns in
shim/trace/analyze/partition_tables.py) against the consumers' own logs (consumer_gaps.py).

A log gap and an analysis gap are the same gap when they end with the same assignment: same topic,
partition, next member id and generation (the consumer logs consumer.groupMetadata() in its
onPartitionsAssigned). The analysis's view of a gap: from `stalled_from_wall_ms` when it gives one
(the previous owner really stopped before the group noticed: its connection closed, or its last
request), else `from_wall_ms`, to `to_wall_ms`; its length `stalled_ms`, else `duration_ms`.
Judged, each |analysis - log| <= tolerance to pass:
- the end (the next owner's SyncGroup answer / its onPartitionsAssigned), always;
- the start and the length when the log knows when the previous owner stopped: a cooperative
  revocation, a clean close (revoke callback), a poll timeout (its LeaveGroup log line), a lost
  callback, and a SIGKILL (the scenario's time just before the signal) when the analysis says when the
  owner stopped (`stalled_from_wall_ms`); without it, a killed owner's start is shown, not judged.
Gaps that end before the group was first stable (the members' JVMs starting, all at once) are shown,
not judged. A gap on one side only, longer than the tolerance, fails; so does a different previous
owner."""

from __future__ import annotations

from pathlib import Path

from testsuite.trace.consumer_gaps import Gap, log_gaps

JUDGED_STARTS = ("revoked", "closed", "poll_timeout", "lost")


def read_tables(report: Path, names=("partition_gaps", "partition_owners", "causes", "rebalance_impact")) -> dict:
    import pyarrow.parquet as pq
    return {n: pq.read_table(report / f"{n}.parquet").to_pylist() if (report / f"{n}.parquet").exists() else None
            for n in names}


def compare(incarnations: list[dict], tables: dict, group: str, window: tuple[int, int], tolerance: int) -> dict:
    """Rows (one per gap, either side) of the gaps ending in `window` (wall ms: judged from the first,
    shown from the start), the max |difference| of the judged edges, ok."""
    names = member_names(incarnations)
    mine = [g for g in tables["partition_gaps"] or () if g["group"] == group and not g["initial"]]
    by_key = {(g["topic"], g["partition"], g["next_member"], g["next_generation"]): g for g in mine}
    rows, worst, ok = [], 0, tables["partition_gaps"] is not None
    for lg in log_gaps(incarnations):
        if lg.previous is None or lg.end > window[1]:
            continue
        ag = by_key.pop((lg.topic, lg.partition, lg.next.member, lg.next.generation), None)
        r = _row(lg, ag, names, tolerance, judged=lg.end > window[0])
        rows.append(r)
        worst = max([worst, *(abs(d) for d in r["judged"])])
        ok &= r["ok"]
    for ag in by_key.values():
        if ag["from_wall_ms"] <= window[1] and (ag["to_wall_ms"] or ag["from_wall_ms"]) > window[0]:
            short = (ag["duration_ms"] or 0) <= tolerance
            rows.append({"topic": ag["topic"], "partition": ag["partition"],
                         "previous": _name(names, ag["previous_member"], ag["previous_client_id"]),
                         "log_kind": None, "next": _name(names, ag["next_member"], ag["next_client_id"]),
                         "log": None, "analysis": (ag["from_wall_ms"], ag["to_wall_ms"], ag["duration_ms"]),
                         "a_kind": ag["previous_end_kind"], "d_from": None, "d_to": None, "d_dur": None,
                         "judged": [], "ok": short,
                         "note": "only in the analysis" + (" (within tolerance)" if short else "")})
            ok &= short
    rows.sort(key=lambda r: ((r["log"] or r["analysis"])[1] or 0, r["topic"], r["partition"]))
    return {"rows": rows, "max_diff_ms": worst, "ok": ok and any(r["judged"] for r in rows)}


def member_names(incarnations: list[dict]) -> dict[str, str]:
    """member id -> incarnation name, from the ids the consumers logged."""
    return {e["member"]: inc["name"] for inc in incarnations for e in inc["events"] if e.get("member")}


def _name(names: dict, member, client_id) -> str:
    return names.get(member) or client_id or str(member)


def _row(lg: Gap, ag: dict | None, names: dict, tolerance: int, judged: bool) -> dict:
    prev = lg.previous
    r = {"topic": lg.topic, "partition": lg.partition, "previous": prev.owner, "log_kind": prev.end_kind,
         "next": lg.next.owner, "log": (lg.start, lg.end), "analysis": None, "a_kind": None,
         "d_from": None, "d_to": None, "d_dur": None, "judged": [], "ok": True, "note": ""}
    if ag is None:
        r["ok"] = not judged or (lg.duration is not None and lg.duration <= tolerance)
        r["note"] = "only in the logs" + ("" if r["ok"] else "") + ("" if judged else "; setup, not judged")
        return r
    stalled = ag.get("stalled_from_wall_ms")
    start = stalled if stalled is not None else ag["from_wall_ms"]
    length = ag["stalled_ms"] if stalled is not None and ag.get("stalled_ms") is not None else ag["duration_ms"]
    r["analysis"], r["a_kind"] = (start, ag["to_wall_ms"], length), ag["previous_end_kind"]
    r["d_to"] = ag["to_wall_ms"] - lg.end
    notes = []
    if start != ag["from_wall_ms"]:
        notes.append(f"analysis: stopped {ag['from_wall_ms'] - start} ms before its {ag['previous_end_kind']}")
    if prev.end is not None:
        r["d_from"] = start - prev.end
        r["d_dur"] = length - lg.duration if length is not None else None
    if not judged:
        notes.append("setup, not judged")
    elif prev.end_kind in JUDGED_STARTS or (prev.end_kind == "killed" and stalled is not None):
        r["judged"] += [r["d_to"], r["d_from"], r["d_dur"] if r["d_dur"] is not None else 10 ** 9]
    else:
        r["judged"].append(r["d_to"])
        notes.append(f"{prev.end_kind}: start and duration not judged")
    if ag["previous_member"] != prev.member:
        notes.append(f"previous owner differs: analysis {_name(names, ag['previous_member'], ag['previous_client_id'])}")
        r["ok"] = False
    r["ok"] &= all(abs(d) <= tolerance for d in r["judged"])
    r["note"] = "; ".join(notes)
    return r


def cause_lines(tables: dict, group: str, names: dict, until: int | None = None) -> list[str]:
    """One line per rebalance (and static replacement) that started by `until`: its generation, its
    impact and its cause chain (kind, member, instance, reason); a last line counts the later ones."""
    causes = [c for c in tables.get("causes") or () if c["group"] == group]
    impact = {r["cause_id"]: r for r in tables.get("rebalance_impact") or () if r["group"] == group}
    chains: dict[str, list[dict]] = {}
    for c in sorted(causes, key=lambda c: (c["seq"] or 0)):
        chains.setdefault(c["cause_id"], []).append(c)

    def start(cid: str) -> int:
        return impact.get(cid, {}).get("start_wall_ms") or min((c["wall_ms"] or 0 for c in chains.get(cid, ())),
                                                                default=0)
    ids = sorted(set(chains) | set(impact), key=start)
    lines, later = [], 0
    for cid in ids:
        if until is not None and start(cid) > until:
            later += 1
            continue
        imp = impact.get(cid, {})
        chain = " <- ".join(
            f"{c['kind']} {_name(names, c['member'], c['client_id']) if c['member'] or c['client_id'] else ''}".strip()
            + (f" ({c['instance']})" if c.get("instance") else "")
            + (f" \"{c['reason']}\"" if c.get("reason") else "") for c in chains.get(cid, ()))
        gen = imp.get("generation") if imp else ("static" if ":static@" in cid else cid.rsplit(":", 1)[-1])
        impact_text = (f"{imp.get('partitions_unavailable')} partition(s) unavailable, max gap "
                       f"{imp.get('max_gap_ms') if imp.get('max_gap_ms') is not None else '-'} ms" if imp else
                       "no rebalance")
        lines.append(f"  gen {gen!s:>6} {imp.get('protocol') or '':<11} {impact_text:<42} | {chain or '(no cause row)'}")
    if later:
        lines.append(f"  ... {later} more after the scenario's end (the consumers closing)")
    return lines


# scenario step (rebalance_scenario.drive marks) -> the cause kind the analysis must name for it
EXPECTED_CAUSES = {"poll_loop_blocked": "poll_interval_exceeded", "static_member_closed": "static_replaced",
                   "killed": "session_timeout"}


def event_checks(tables: dict, group: str, marks: list[dict], incarnations: list[dict]) -> tuple[list[str], bool]:
    """Each scenario step must appear in `causes` (between the step and the next stable moment) with
    its kind and the member it happened to: by member id (the ids the member logged), or for a static
    replacement by group.instance.id; a static bounce must not have caused a rebalance."""
    names = member_names(incarnations)
    instances = {inc["name"]: inc.get("instance") for inc in incarnations}
    causes = [c for c in tables.get("causes") or () if c["group"] == group]
    lines, ok = [], tables.get("causes") is not None
    t0 = marks[0]["wall_ms"]
    for i, m in enumerate(marks):
        kind = EXPECTED_CAUSES.get(m["step"])
        if kind is None:
            continue
        until = next(n["wall_ms"] for n in marks[i + 1:] if n["step"] == "stable")
        since = marks[i - 1]["wall_ms"]
        hits = [c for c in causes if c["kind"] == kind and since <= (c["wall_ms"] or 0) <= until]
        label = m["member"]
        mine = [c for c in hits if (names.get(c["member"]) == label if kind != "static_replaced"
                                    else c["instance"] == instances.get(label))]
        rebalances = [c for c in causes if c["seq"] == 0 and c["generation"] is not None and c["kind"] != kind
                      and since <= (c["wall_ms"] or 0) <= until] if kind == "static_replaced" else []
        good = bool(mine) and not rebalances
        ok &= good
        found = ", ".join(f"{c['kind']} {_name(names, c['member'], c['client_id'])} at +{(c['wall_ms'] - t0) / 1000:.3f} s"
                          + (f" (gen {c['generation']})" if c["generation"] is not None else "") for c in mine or hits)
        lines.append(f"  {m['step']:<21} {label:<4} expects {kind:<22} found: {found or 'nothing'}"
                     + (f"; and a rebalance: {rebalances[0]['kind']}" if rebalances else "") + ("  ok" if good else "  NO"))
    return lines, ok


def compare_report(report: Path, group: str, incarnations: list[dict], marks: list[dict], tolerance: int) -> dict:
    """compare_tables on the Parquet tables of a `kshim trace analyze` REPORT folder."""
    return compare_tables(read_tables(report), group, incarnations, marks, tolerance)


def compare_tables(tables: dict, group: str, incarnations: list[dict], marks: list[dict], tolerance: int) -> dict:
    """The gaps judged from the group's first stable moment to the scenario's end (marks), the causes
    up to that end, and which tables were missing."""
    window = (next(m["wall_ms"] for m in marks if m["step"] == "stable"), marks[-1]["wall_ms"])
    out = compare(incarnations, tables, group, window, tolerance)
    out["causes"] = cause_lines(tables, group, member_names(incarnations), window[1])
    out["events"], events_ok = event_checks(tables, group, marks, incarnations)
    out["ok"] &= events_ok
    out["missing"] = [n for n, t in tables.items() if t is None]
    return out


def print_comparison(title: str, cmp: dict, seconds: float | None, marks: list[dict]) -> None:
    t0 = marks[0]["wall_ms"]

    def span(s) -> str:
        if s is None:
            return f"{'-':^23}"
        a, b = s[:2]
        rel = lambda t: "   open" if t is None else f"{(t - t0) / 1000:7.3f}"  # noqa: E731
        dur = s[2] if len(s) > 2 else None if a is None or b is None else b - a
        dur = "" if dur is None else f"{dur:5d}"
        return f"{rel(a)}..{rel(b)} {dur:>5}"

    print(f"\n== report {title}" + (f": kshim trace analyze took {seconds:.0f} s" if seconds is not None else "")
          + (f"; tables missing: {', '.join(cmp['missing'])}" if cmp.get("missing") else ""))
    print("Each rebalance's cause and member (causes, rebalance_impact):")
    print("\n".join(cmp["causes"]) or "  (none)")
    print("The scenario's steps as the causes name them:")
    print("\n".join(cmp.get("events") or ()) or "  (none)")
    print("Per-partition unavailability, seconds from the scenario start, then the gap in ms (analysis: from\n"
          "stalled_from_wall_ms where it gives one, stalled_ms; else from_wall_ms, duration_ms); d = analysis - log, ms:")
    print(f"  {'part':>4} {'previous':>8} {'log end':<12} -> {'next':<5} {'log: from..to':^23} "
          f"{'analysis: from..to':^23} {'analysis end':<15} {'d_from':>6} {'d_to':>5} {'d_dur':>6}  ok  note")
    sign = lambda d: "" if d is None else f"{d:+d}"  # noqa: E731
    for r in cmp["rows"]:
        print(f"  {r['partition']:>4} {r['previous']:>8} {r['log_kind'] or '-':<12} -> {r['next']:<5} "
              f"{span(r['log'])} {span(r['analysis'])} {r['a_kind'] or '-':<15} {sign(r['d_from']):>6} "
              f"{sign(r['d_to']):>5} {sign(r['d_dur']):>6}  {'ok' if r['ok'] else 'NO'}  {r['note']}")
    print(f"  {len(cmp['rows'])} gap(s); max |difference| of judged edges {cmp['max_diff_ms']} ms; "
          + ("agree" if cmp["ok"] else "DISAGREE"))
