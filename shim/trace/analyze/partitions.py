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


def fold_partitions(group: str, records, names: dict[str, str] | None = None) -> dict[str, list[dict]]:
    """One group's owner segments, causes, reconciliation rows and rounds (both group types: a group
    converted between classic and consumer has rows of each)."""
    recs = sorted(records, key=lambda r: (r.get("ts_ns") or 0))
    out = {k: [] for k in KEYS}
    if any(r.get("api_key") != CONSUMER_GROUP_HEARTBEAT for r in recs if r.get("type") == "frame") or \
            any(r.get("event") in ("rebalance", "generation") for r in recs):
        owners, rounds = fold_ownership(group, recs)
        out["partition_owners"] += owners
        out["rounds"] += rounds
    if any(r.get("api_key") == CONSUMER_GROUP_HEARTBEAT or r.get("event") == "group_epoch" for r in recs):
        owners, recon, rounds = fold_consumer_group(group, recs, names)
        out["partition_owners"] += owners
        out["reconciliation"] += recon
        out["rounds"] += rounds
    out["causes"] = fold_causes(group, recs)
    return out


def partition_records(df, group: str | None = None):
    """What the folds read: the group records without offsets, Heartbeats as requests only (their
    times; a fenced answer too) and without bodies, and the KIP-848 heartbeats."""
    from pyspark.sql import functions as F
    from .timeline import FENCED_INSTANCE_ID
    classic = group_records(df, group).where(
        F.col("api_key").isNull() | ~F.col("api_key").isin(OFFSET_COMMIT, OFFSET_FETCH, HEARTBEAT)
        | ((F.col("api_key") == HEARTBEAT) & ((F.col("dir") == "client->kshim")
                                              | F.array_contains(F.col("error_codes"), FENCED_INSTANCE_ID))))
    recs = classic.unionByName(df.where(consumer_heartbeat_cond(group)))
    body = F.when(F.col("api_key") == HEARTBEAT, F.lit(None).cast("string")).otherwise(F.col("body")).alias("body")
    return recs.select(F.col("group"), *[body if c == "body" else F.col(c) for c in PART_COLUMNS])


def partition_analysis(df, names: dict[str, str], group: str | None = None) -> dict[str, list[dict]]:
    """The five tables of partition_tables.TABLES for every group of the trace (or one)."""
    from pyspark.sql import functions as F
    recs = partition_records(df, group)
    bc = recs.sparkSession.sparkContext.broadcast(names)

    def fold(item):
        grp, rows = item
        out = fold_partitions(grp, (dict(zip(PART_COLUMNS, r)) for r in rows), bc.value)
        return [(k, row) for k, rows_ in out.items() for row in rows_]

    got: dict[str, list[dict]] = {k: [] for k in KEYS}
    for kind, row in recs.rdd.map(lambda r: (r[0], tuple(r[1:]))).groupByKey().flatMap(fold).collect():
        got[kind].append(row)
    bc.unpersist()
    end = df.agg(F.max("wall_ms")).first()[0]
    return tables_from(got, end)


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
    """Per group for summary.json: partitions seen, gaps (not initial), partition-ms unavailable, the longest gap."""
    out = []
    for g in sorted({s["group"] for s in tables["partition_owners"]}):
        gaps = [x for x in tables["partition_gaps"] if x["group"] == g and not x["initial"]]
        durations = [x["duration_ms"] for x in gaps if x["duration_ms"] is not None]
        out.append({"group": g, "partitions": len({(s["topic"], s["partition"]) for s in tables["partition_owners"]
                                                   if s["group"] == g}),
                    "gaps": len(gaps), "open_gaps": sum(bool(x["open"]) for x in gaps),
                    "unavailable_partition_ms": sum(durations), "max_gap_ms": max(durations, default=None),
                    "rebalances": sum(r["group"] == g for r in tables["rebalance_impact"]),
                    "causes": sorted({c["kind"] for c in tables["causes"] if c["group"] == g})})
    return out
