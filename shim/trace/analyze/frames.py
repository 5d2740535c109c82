"""The frames behind the report's marks, to show them decoded in report.html: the request and the
answer (client->kshim, kshim->client; same group, connection and correlation id, within LOOKBACK_NS of
the mark, so reused connection ids of a restarted kshim do not mix) behind every cause row (`conn`,
`corr`, `ts_ns`) and every membership change (the frame its `ts_ns` names; for a change made from a
coordinator event, e.g. member_joined, the member's latest request up to LOOKBACK_NS before it), at
most MAX_PAIRS."""

from __future__ import annotations

import json

MAX_PAIRS = 5000
LOOKBACK_NS = 30_000_000_000


def frame_key(group, conn, corr) -> str:
    return f"{group}/{conn}:{corr}"


def linked_frames(grp, tables: dict[str, list[dict]], max_pairs: int = MAX_PAIRS) -> dict:
    """{"frames": {frame_key: [frame dicts in time order]}, "by_ts": {(group, ts_ns of a change): frame_key}}.
    `grp`: the group records DataFrame (load.group_records)."""
    from pyspark.sql import functions as F
    spark = grp.sparkSession
    frames_df = grp.where((F.col("type") == "frame") & F.col("conn").isNotNull() & F.col("corr").isNotNull())
    anchors = {(c["group"], int(c["conn"]), int(c["corr"])): int(c["ts_ns"] or 0) for c in tables.get("causes") or ()
               if c.get("conn") is not None and c.get("corr") is not None}
    by_ts: dict[tuple, str] = {}
    changes = [(int(c["ts_ns"]), c["group"], c.get("member"), c.get("instance")) for c in tables.get("changes") or ()
               if c.get("ts_ns") is not None][:max_pairs]
    if changes:
        cdf = spark.createDataFrame(changes, "cts BIGINT, cgroup STRING, cmember STRING, cinstance STRING")
        exact = frames_df.join(F.broadcast(cdf), (frames_df["ts_ns"] == cdf["cts"]) & (frames_df["group"] == cdf["cgroup"]))
        found = {(r.group, r.cts): r for r in exact.select("cts", "group", "conn", "corr").collect()}
        rest = [c for c in changes if (c[1], c[0]) not in found]
        if rest:
            found.update({(r.group, r.cts): r for r in _requests_before(frames_df, spark.createDataFrame(
                rest, "cts BIGINT, cgroup STRING, cmember STRING, cinstance STRING")).collect()})
        for (group, ts), r in found.items():
            by_ts[(group, ts)] = frame_key(r.group, r.conn, r.corr)
            anchors.setdefault((r.group, r.conn, r.corr), ts)
    if not anchors:
        return {"frames": {}, "by_ts": by_ts}
    keys = spark.createDataFrame([(g, c, k, t) for (g, c, k), t in sorted(anchors.items())][:max_pairs],
                                 "kgroup STRING, kconn BIGINT, kcorr INT, kts BIGINT")
    cond = ((frames_df["group"] == keys["kgroup"]) & (frames_df["conn"] == keys["kconn"])
            & (frames_df["corr"] == keys["kcorr"]) & (F.abs(frames_df["ts_ns"] - keys["kts"]) <= F.lit(LOOKBACK_NS)))
    rows = (frames_df.join(F.broadcast(keys), cond)
            .select("group", "conn", "corr", "ts_ns", "wall_ms", "dir", "api", "api_version", "error_codes", "body")
            .dropDuplicates(["group", "conn", "corr", "ts_ns", "dir"]).collect())
    frames: dict[str, list[dict]] = {}
    for r in sorted(rows, key=lambda r: r.ts_ns or 0):
        try:
            body = json.loads(r.body) if r.body else None
        except ValueError:
            body = r.body
        frames.setdefault(frame_key(r.group, r.conn, r.corr), []).append(
            {"dir": r.dir, "api": r.api, "v": r.api_version, "conn": r.conn, "corr": r.corr, "wall_ms": r.wall_ms,
             "errors": list(r.error_codes) if r.error_codes else None, "body": body})
    return {"frames": frames, "by_ts": by_ts}


def _requests_before(frames_df, changes):
    """Per change (cts, cgroup, cmember, cinstance): the latest request of that member (member id or
    group.instance.id) in that group at most LOOKBACK_NS before it: (cts, group, conn, corr)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    req = frames_df.where(F.col("dir") == "client->kshim").select("ts_ns", "group", "member", "instance", "conn", "corr")
    cond = ((req["group"] == changes["cgroup"]) & (req["ts_ns"] <= changes["cts"])
            & (req["ts_ns"] >= changes["cts"] - F.lit(LOOKBACK_NS))
            & ((req["member"] == changes["cmember"]) | (req["instance"] == changes["cinstance"])))
    latest = Window.partitionBy("cgroup", "cts").orderBy(F.col("ts_ns").desc())
    return (req.join(F.broadcast(changes), cond).withColumn("_n", F.row_number().over(latest))
            .where(F.col("_n") == 1).select("cts", "group", "conn", "corr"))
