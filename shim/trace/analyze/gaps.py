"""Unavailability from owner segments (partition_tables): `partition_gaps`, the intervals in which a
partition had no owner, and `rebalance_impact`, those gaps summed per rebalance with its slowest
members. Works the same for classic and KIP-848 groups (pure Python over the folds' rows).

Unknown is not zero: a partition whose owner before its first segment the trace never showed
(`previous_owner_unknown`: the trace began after the group formed) gets an `initial` row without a
duration, and a rebalance that assigned such partitions has its unavailability figures null."""

from __future__ import annotations

from .partition_tables import GAP_COLUMNS, IMPACT_COLUMNS, cause_id, row, static_cause_id


def partition_gaps(owners: list[dict], trace_end_wall_ms: int | None, rounds: dict | None = None) -> list[dict]:
    """Gaps of every (group, topic, partition) of `owners`; the first assignment of each partition is an
    `initial` row (no previous owner: not unavailability). `rounds`: (group, generation) -> round dict
    with `start_wall_ms` (for the cause ids of still-open rounds)."""
    by_part: dict[tuple, list[dict]] = {}
    for s in owners:
        by_part.setdefault((s["group"], s["topic"], s["partition"]), []).append(s)
    out = []
    for (group, topic, partition), segs in sorted(by_part.items(), key=lambda kv: tuple(map(str, kv[0]))):
        segs.sort(key=lambda s: s["from_wall_ms"])
        first = segs[0]
        base = {"group": group, "group_type": first["group_type"], "topic": topic, "partition": partition}
        gen0 = first["generation"] if first["generation"] is not None else first["epoch"]
        unknown = bool(first.get("previous_owner_unknown"))     # the owner before it: not in the trace
        out.append(row(GAP_COLUMNS, **base, from_wall_ms=first["from_wall_ms"], to_wall_ms=first["from_wall_ms"],
                       duration_ms=None if unknown else 0, open=False, initial=True, next_member=first["member"],
                       next_instance=first["instance"], next_client_id=first["client_id"], generation=gen0,
                       next_generation=gen0, cause_id=_cause(group, gen0, rounds), previous_owner_unknown=unknown))
        for prev, nxt in zip(segs, segs[1:] + [None]):
            start = prev["to_wall_ms"]
            if start is None:
                continue
            end = nxt["from_wall_ms"] if nxt is not None else None
            unseen = bool(prev.get("end_unseen"))              # the gap's length is not in the trace
            if end is not None and end <= start and not unseen:
                continue            # handed over without a gap (or overlapping: `lost`)
            stop = end if end is not None else trace_end_wall_ms
            seen = min((t for t in (prev.get("last_seen_wall_ms"), prev.get("revoke_asked_wall_ms")) if t is not None),
                       default=None)
            stalled = seen if seen is not None and seen < start else None
            g = prev.get("end_generation")
            out.append(row(
                GAP_COLUMNS, **base, from_wall_ms=start, to_wall_ms=end,
                duration_ms=stop - start if stop is not None and not unseen else None, open=nxt is None,
                initial=False,
                stalled_from_wall_ms=stalled,
                stalled_ms=stop - stalled if stalled is not None and stop is not None else None,
                previous_member=prev["member"], previous_instance=prev["instance"],
                previous_client_id=prev["client_id"], previous_end_kind=prev["end_kind"],
                next_member=nxt["member"] if nxt else None, next_instance=nxt["instance"] if nxt else None,
                next_client_id=nxt["client_id"] if nxt else None, generation=g,
                next_generation=(nxt["generation"] if nxt["generation"] is not None else nxt["epoch"]) if nxt else None,
                cause_id=static_cause_id(group, start) if prev["end_kind"] == "static_replaced"
                else _cause(group, g, rounds), previous_owner_unknown=False))
    return out


def _cause(group: str, generation, rounds: dict | None) -> str | None:
    if generation is not None:
        return cause_id(group, generation, None)
    r = (rounds or {}).get((group, None))
    return cause_id(group, None, r["start_wall_ms"]) if r else None


def rebalance_impact(rounds: list[dict], gaps: list[dict], causes: list[dict] | None = None) -> list[dict]:
    """One row per round (dicts with group, group_type, generation, protocol, start_wall_ms,
    end_wall_ms, `joins` (classic: its JoinGroup, after an eager revocation; KIP-848: its revocation ack)
    and `syncs` (its assignment answer): member -> wall_ms) with the non-initial gaps it caused."""
    by_cause: dict[str, list[dict]] = {}
    unknown: dict[str, set] = {}        # cause id -> partitions it assigned whose earlier owner is unknown
    for g in gaps:
        if not g["initial"] and g["cause_id"]:
            by_cause.setdefault(g["cause_id"], []).append(g)
        elif g.get("previous_owner_unknown") and g["cause_id"]:
            unknown.setdefault(g["cause_id"], set()).add((g["topic"], g["partition"]))
    first_cause = {}
    for c in causes or ():
        if c["seq"] == 0:
            first_cause[c["cause_id"]] = c
    out = []
    for r in rounds:
        cid = cause_id(r["group"], r["generation"], r["start_wall_ms"])
        mine = by_cause.get(cid, [])
        start = r["start_wall_ms"]
        slow_revoke = _slowest(r.get("joins") or {}, start)
        slow_rejoin = _slowest(r.get("syncs") or {}, start)
        c = first_cause.get(cid)
        durations = [g["duration_ms"] for g in mine if g["duration_ms"] is not None]
        n_unknown = len(unknown.get(cid, ()))
        unseen = any(g["duration_ms"] is None and not g["open"] for g in mine)   # gap lengths not in the trace
        figures = {"partitions_unavailable": len({(g["topic"], g["partition"]) for g in mine}),
                   "max_gap_ms": max(durations, default=None), "unavailable_partition_ms": sum(durations),
                   "max_stalled_ms": max((g["stalled_ms"] or g["duration_ms"] for g in mine
                                          if (g["stalled_ms"] or g["duration_ms"]) is not None), default=None)}
        if n_unknown or unseen:  # owners before it, or when they stopped, not in the trace: totals unknown
            figures = dict.fromkeys(figures)
        out.append(row(
            IMPACT_COLUMNS, group=r["group"], group_type=r["group_type"], generation=r["generation"],
            protocol=r["protocol"], start_wall_ms=start, end_wall_ms=r.get("end_wall_ms"), **figures,
            slowest_revoke_member=slow_revoke[0], slowest_revoke_ms=slow_revoke[1],
            slowest_rejoin_member=slow_rejoin[0], slowest_rejoin_ms=slow_rejoin[1], cause_id=cid,
            cause=_cause_text(c) if c else None, partitions_owner_unknown=n_unknown))
    return out


def _slowest(times: dict, start) -> tuple:
    if not times or start is None:
        return None, None
    member, t = max(times.items(), key=lambda kv: kv[1])
    return member, max(t - start, 0)    # a member whose JoinGroup started the rebalance: 0


def _cause_text(c: dict) -> str:
    who = c.get("instance") or c.get("member")
    text = c["kind"] + (f" {who}" if who else "")
    text += f": {c['reason']}" if c.get("reason") else ""
    return text + (" (inferred)" if c.get("source") in ("inferred", "records") else "")
