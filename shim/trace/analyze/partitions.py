"""The per-partition tables in Spark (partition_tables.TABLES): each group's records grouped by group
id and folded in time order on the executors - ownership.py (classic), reconcile.py (KIP-848),
causes.py - then, on the driver, gaps.py turns the (small) owner segments into gaps and per-rebalance
impact, as rebalances.py does for the rebalance timeline."""

from __future__ import annotations

from .causes import fold_causes
from .gaps import partition_gaps, rebalance_impact
from .load import (CONSUMER_GROUP_HEARTBEAT, HEARTBEAT, OFFSET_COMMIT, OFFSET_FETCH, consumer_heartbeat_cond,
                   group_records)
from .ownership import fold_ownership
from .reconcile import fold_consumer_group

PART_COLUMNS = ("type", "ts_ns", "wall_ms", "event", "api_key", "dir", "conn", "corr", "client_id", "member",
                "instance", "generation", "error_codes", "body")
KEYS = ("rounds", "partition_owners", "causes", "reconciliation")


def fold_partitions(group: str, records, names: dict[str, str] | None = None,
                    closes: dict[int, int] | None = None) -> dict[str, list[dict]]:
    """One group's owner segments, causes, reconciliation rows and rounds (both group types: a group
    converted between classic and consumer has rows of each); `closes`: connection id -> wall_ms of
    its `conn_close` record."""
    recs = sorted(records, key=lambda r: (r.get("ts_ns") or 0))
    out = {k: [] for k in KEYS}
    if any(r.get("api_key") != CONSUMER_GROUP_HEARTBEAT for r in recs if r.get("type") == "frame") or \
            any(r.get("event") in ("rebalance", "generation") for r in recs):
        owners, rounds = fold_ownership(group, recs, closes)
        out["partition_owners"] += owners
        out["rounds"] += rounds
    if any(r.get("api_key") == CONSUMER_GROUP_HEARTBEAT or r.get("event") == "group_epoch" for r in recs):
        owners, recon, rounds = fold_consumer_group(group, recs, names, closes)
        out["partition_owners"] += owners
        out["reconciliation"] += recon
        out["rounds"] += rounds
    out["causes"] = fold_causes(group, recs)
    return out


HEARTBEAT_TIMES = ("ts_ns", "wall_ms", "conn", "corr")


def partition_records(df, group: str | None = None):
    """What the folds read, as ("r", row) and ("h", member heartbeats) per group: the group records
    without offsets and without Heartbeats (but a fenced Heartbeat answer), the KIP-848 heartbeats;
    and each member's classic Heartbeat requests packed into one row of time arrays (the folds need
    only their times: shipping them one row each to Python cost more than all the folding)."""
    from pyspark.sql import functions as F
    from .timeline import FENCED_INSTANCE_ID
    grp = group_records(df, group)
    classic = grp.where(F.col("api_key").isNull() | ~F.col("api_key").isin(OFFSET_COMMIT, OFFSET_FETCH, HEARTBEAT)
                        | ((F.col("api_key") == HEARTBEAT)
                           & F.array_contains(F.col("error_codes"), FENCED_INSTANCE_ID)))
    rows = classic.unionByName(df.where(consumer_heartbeat_cond(group))).select("group", *PART_COLUMNS)
    beats = (grp.where((F.col("api_key") == HEARTBEAT) & (F.col("dir") == "client->kshim")
                       & F.col("member").isNotNull())
             .groupBy("group", "member").agg(*[F.collect_list(c).alias(c) for c in HEARTBEAT_TIMES]))
    return (rows.rdd.map(lambda r: (r[0], ("r", tuple(r[1:]))))
            .union(beats.rdd.map(lambda r: (r[0], ("h", tuple(r[1:]))))))


def unpack(items) -> list[dict]:
    """The records of partition_records' items: heartbeat time arrays back into Heartbeat requests."""
    recs = []
    for kind, values in items:
        if kind == "r":
            recs.append(dict(zip(PART_COLUMNS, values)))
            continue
        member, *cols = values
        for ts, wall, conn, corr in zip(*cols):
            recs.append({"type": "frame", "ts_ns": ts, "wall_ms": wall, "conn": conn, "corr": corr,
                         "api_key": HEARTBEAT, "dir": "client->kshim", "member": member})
    return recs


def partition_analysis(df, names: dict[str, str], group: str | None = None,
                       with_timelines: bool = False) -> dict[str, list[dict]]:
    """The five tables of partition_tables.TABLES for every group of the trace (or one).
    `with_timelines`: also the rebalance timelines (rebalances.timelines' result under "timelines"),
    folded in the same pass: their records are a subset of these, and the pass costs most in moving
    rows from Spark to Python."""
    from pyspark.sql import functions as F
    from .rebalances import sorted_timelines
    from .timeline import fold_group, wanted
    items = partition_records(df, group)
    closes = {r["conn"]: r["wall_ms"] for r in df.where(F.col("type") == "conn_close").select("conn", "wall_ms")
              .collect()}
    bc = df.sparkSession.sparkContext.broadcast((names, closes))

    def fold(item):
        grp, values = item
        recs = unpack(values)
        out = fold_partitions(grp, recs, *bc.value)
        pairs = [(k, row) for k, rows_ in out.items() for row in rows_]
        if with_timelines:      # what rebalances.timelines reads: no KIP-848 heartbeats, no plain Heartbeats
            rounds, members, changes = fold_group(grp, [r for r in recs if r.get("api_key") != CONSUMER_GROUP_HEARTBEAT
                                                        and wanted(r)])
            pairs += [(("tl", k), row) for k, rows_ in (("rounds", rounds), ("members", members),
                                                        ("changes", changes)) for row in rows_]
        return pairs

    got: dict[str, list[dict]] = {k: [] for k in KEYS}
    timeline_rows = []
    for kind, row in items.groupByKey().flatMap(fold).collect():
        if isinstance(kind, tuple):
            timeline_rows.append((kind[1], row))
        else:
            got[kind].append(row)
    bc.unpersist()
    end = df.agg(F.max("wall_ms")).first()[0]
    tables = tables_from(got, end)
    if with_timelines:
        tables["timelines"] = sorted_timelines(timeline_rows)
    return tables


def tables_from(got: dict[str, list[dict]], trace_end_wall_ms) -> dict[str, list[dict]]:
    """Driver side: gaps and impact from the folds' rows; rows sorted for the report."""
    owners = sorted(got["partition_owners"], key=lambda s: (s["group"], s["topic"], s["partition"], s["from_wall_ms"]))
    for s in owners:            # still owned: until the end of the whole trace, not of the group's records
        if s["to_wall_ms"] is None and trace_end_wall_ms is not None:
            s["duration_ms"] = trace_end_wall_ms - s["from_wall_ms"]
    rounds = sorted(got["rounds"], key=lambda r: (r["group"], r["start_wall_ms"] or 0))
    open_rounds = {(r["group"], None): r for r in rounds if r["generation"] is None}
    gaps = partition_gaps(owners, trace_end_wall_ms, open_rounds)
    causes = sorted(got["causes"], key=lambda c: (c["group"], c["wall_ms"] or 0, c["cause_id"], c["seq"]))
    impact = rebalance_impact(rounds, gaps, causes)
    recon = sorted(got["reconciliation"], key=lambda r: (r["group"], r["member"], r["target_wall_ms"]))
    return {"partition_owners": owners, "partition_gaps": gaps, "rebalance_impact": impact, "causes": causes,
            "reconciliation": recon}


def partition_summary(tables: dict[str, list[dict]]) -> list[dict]:
    """Per group for summary.json: partitions seen, gaps (not initial), partition-ms unavailable, the longest
    gap, partitions whose owner before their first assignment the trace did not show."""
    out = []
    for g in sorted({s["group"] for s in tables["partition_owners"]}):
        gaps = [x for x in tables["partition_gaps"] if x["group"] == g and not x["initial"]]
        durations = [x["duration_ms"] for x in gaps if x["duration_ms"] is not None]
        out.append({"group": g, "partitions": len({(s["topic"], s["partition"]) for s in tables["partition_owners"]
                                                   if s["group"] == g}),
                    "gaps": len(gaps), "open_gaps": sum(bool(x["open"]) for x in gaps),
                    "owner_unknown_partitions": sum(bool(x.get("previous_owner_unknown"))
                                                    for x in tables["partition_gaps"] if x["group"] == g),
                    "unavailable_partition_ms": sum(durations), "max_gap_ms": max(durations, default=None),
                    "rebalances": sum(r["group"] == g for r in tables["rebalance_impact"]),
                    "causes": sorted({c["kind"] for c in tables["causes"] if c["group"] == g})})
    return out
