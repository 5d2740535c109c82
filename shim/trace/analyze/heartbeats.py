"""Share and streams groups' member timelines in Spark: their heartbeat frames grouped by (group
type, group) and folded in time order by member_timeline.fold_heartbeats on the executors, as
rebalances.py does for classic groups; topic ids are named from the trace's Metadata answers."""

from __future__ import annotations

from .load import SHARE_GROUP_HEARTBEAT, STREAMS_GROUP_HEARTBEAT, heartbeat_cond, metadata_cond
from .member_timeline import fold_heartbeats

HEARTBEAT_COLUMNS = ("type", "ts_ns", "wall_ms", "dir", "conn", "corr", "client_id", "member", "body")
GROUP_TYPES = {SHARE_GROUP_HEARTBEAT: "share", STREAMS_GROUP_HEARTBEAT: "streams"}
TABLES = ("timeline", "members", "segments")


def heartbeat_records(df, group: str | None = None):
    return df.where(heartbeat_cond(group))


def topic_names(df) -> dict[str, str]:
    """Topic id (Kafka's string form) -> name, from every Metadata answer in the trace."""
    from pyspark.sql import functions as F
    topics = F.from_json("body", "struct<topics:array<struct<name:string,topicId:string>>>")
    pairs = (df.where(metadata_cond()).select(F.explode(topics["topics"]).alias("t"))
             .select(F.col("t.topicId").alias("id"), F.col("t.name").alias("name"))
             .where(F.col("name").isNotNull() & F.col("id").isNotNull()).distinct().collect())
    return {r["id"]: r["name"] for r in pairs}


def member_timelines(df, names: dict[str, str], group: str | None = None) -> dict[str, dict[str, list[dict]]]:
    """{"share": {"timeline", "members", "segments"}, "streams": {...}} for every such group."""
    recs = heartbeat_records(df, group).select("api_key", "group", *HEARTBEAT_COLUMNS)
    bc = recs.sparkSession.sparkContext.broadcast(names)
    types = GROUP_TYPES

    def fold(item):
        (api_key, grp), rows = item
        kind = types[api_key]
        out = fold_heartbeats(grp, kind, (dict(zip(HEARTBEAT_COLUMNS, r)) for r in rows), bc.value)
        return [(kind, table, row) for table, rows_ in zip(TABLES, out) for row in rows_]

    out = {kind: {t: [] for t in TABLES} for kind in types.values()}
    pairs = recs.rdd.map(lambda r: ((r[0], r[1]), tuple(r[2:]))).groupByKey()
    for kind, table, row in pairs.flatMap(fold).collect():
        out[kind][table].append(row)
    for tables in out.values():
        for rows in tables.values():
            rows.sort(key=lambda r: (r["group"], r["member"], r.get("ts_ns") or r.get("from_wall_ms")
                                     or r.get("first_wall_ms") or 0))
    bc.unpersist()
    return out
