"""The analysis of an imported capture against the analysis of kshim's own trace of the same traffic
(both folded as the Spark stage folds each group: timeline.fold_group, partitions.fold_partitions).

Compared, each time within `tolerance` ms: the rebalances (generation, when its first JoinGroup
answer reached a client: kshim's trace also has the moment its coordinator formed it, which a capture
cannot see, kshim persisting the generation before it answers), the partition
owners (topic, partition, owner by group.instance.id or member id, from, to) and the partition gaps;
and the first cause of each rebalance (its kind), where the capture can know it."""

from __future__ import annotations

from shim.trace.analyze.load import client_view
from shim.trace.analyze.partitions import fold_partitions, tables_from
from shim.trace.analyze.timeline import fold_group


def analysis(records: list[dict], group: str) -> dict:
    recs = [client_view(r) for r in records if r.get("group") == group]
    closes = {r["conn"]: r["wall_ms"] for r in records if r.get("type") == "conn_close"}
    end = max(r["wall_ms"] for r in records if r.get("wall_ms"))
    tables = tables_from(fold_partitions(group, recs, closes=closes), end)
    rounds, _, _ = fold_group(group, recs)
    tables["rebalances"] = rounds
    # when each generation reached the clients: its first JoinGroup answer (kshim's own trace also has
    # the coordinator's moment, which a capture cannot see: kshim persists a generation before answering)
    answered: dict[int, int] = {}
    for r in recs:
        if r.get("type") == "frame" and r.get("api_key") == 11 and r.get("dir") == "kshim->client" \
                and not r.get("error_codes"):
            g = (r.get("body") or {}).get("generationId") if isinstance(r.get("body"), dict) else None
            if g is not None and g >= 0:
                answered[g] = min(answered.get(g, r["wall_ms"]), r["wall_ms"])
    tables["answered"] = answered
    return tables


def _near(a, b, tolerance: int) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tolerance


def compare(mine: dict, theirs: dict, tolerance: int = 20) -> list[str]:
    """Differences (empty: the same) between kshim's trace analysis (`mine`) and the capture's (`theirs`)."""
    diffs = []
    g1 = [(r["generation"], mine["answered"].get(r["generation"])) for r in mine["rebalances"]
          if r["generation"] is not None]
    g2 = [(r["generation"], theirs["answered"].get(r["generation"])) for r in theirs["rebalances"]
          if r["generation"] is not None]
    if [g for g, _ in g1] != [g for g, _ in g2]:
        diffs.append(f"generations: trace {[g for g, _ in g1]} capture {[g for g, _ in g2]}")
    else:
        for (g, a), (_, b) in zip(g1, g2):
            if not _near(a, b, tolerance):
                diffs.append(f"generation {g} formed at {a} (trace) vs {b} (capture)")

    def owners(t):
        return sorted((o["topic"], o["partition"], o.get("instance") or o["member"], o["from_wall_ms"], o["to_wall_ms"])
                      for o in t["partition_owners"])
    o1, o2 = owners(mine), owners(theirs)
    if [x[:3] for x in o1] != [x[:3] for x in o2]:
        diffs.append(f"owners differ: trace {len(o1)} rows, capture {len(o2)} rows: "
                     f"{sorted(set(x[:3] for x in o1) ^ set(x[:3] for x in o2))[:6]}")
    else:
        for a, b in zip(o1, o2):
            if not (_near(a[3], b[3], tolerance) and _near(a[4], b[4], tolerance)):
                diffs.append(f"owner {a[:3]}: trace {a[3]}-{a[4]} capture {b[3]}-{b[4]}")

    def gaps(t):
        return sorted((x["topic"], x["partition"], x["from_wall_ms"], x["to_wall_ms"]) for x in t["partition_gaps"])
    p1, p2 = gaps(mine), gaps(theirs)
    if len(p1) != len(p2):
        diffs.append(f"gaps: trace {len(p1)} capture {len(p2)}")
    else:
        for a, b in zip(p1, p2):
            if a[:2] != b[:2] or not (_near(a[2], b[2], tolerance) and _near(a[3], b[3], tolerance)):
                diffs.append(f"gap {a} (trace) vs {b} (capture)")
    return diffs


def first_causes(tables: dict) -> dict:
    """generation -> the kind of its rebalance's first cause."""
    return {c["generation"]: c["kind"] for c in tables["causes"] if c["seq"] == 0 and c["generation"] is not None}
