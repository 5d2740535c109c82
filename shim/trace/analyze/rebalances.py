"""Per-group rebalance timelines in Spark: the group records are grouped by group id and folded in
time order by timeline.fold_group on the executors; the (small) results come back to the driver."""

from __future__ import annotations

from .load import group_records
from .timeline import FENCED_INSTANCE_ID, SKIPPED_APIS, fold_group

FOLD_COLUMNS = ("type", "ts_ns", "wall_ms", "event", "api_key", "dir", "conn", "corr", "member", "instance",
                "generation", "error_codes", "body")


def _fold(item):
    group, rows = item
    rounds, members, changes = fold_group(group, (dict(zip(FOLD_COLUMNS, r)) for r in rows))
    return [("rounds", r) for r in rounds] + [("members", m) for m in members] + [("changes", c) for c in changes]


def timelines(df, group: str | None = None) -> dict[str, list[dict]]:
    """{"rounds": [...], "members": [...], "changes": [...]} for every group of the trace (or one)."""
    from pyspark.sql import functions as F
    recs = group_records(df, group).where(~F.col("api_key").isin(*SKIPPED_APIS) | F.col("api_key").isNull()
                                          | F.array_contains(F.col("error_codes"), FENCED_INSTANCE_ID))
    rdd = recs.select(F.col("group"), *[F.col(c) for c in FOLD_COLUMNS]).rdd
    return sorted_timelines(rdd.map(lambda r: (r[0], tuple(r[1:]))).groupByKey().flatMap(_fold).collect())


def sorted_timelines(pairs) -> dict[str, list[dict]]:
    """(kind, row) pairs from the executors into {"rounds", "members", "changes"}, in time order per group."""
    out: dict[str, list[dict]] = {"rounds": [], "members": [], "changes": []}
    for kind, row in pairs:
        out[kind].append(row)
    for rows in out.values():
        rows.sort(key=lambda r: (r["group"], r.get("start_wall_ms") or r.get("from_wall_ms") or r.get("wall_ms") or 0))
    return out
