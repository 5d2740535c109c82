"""The frames behind the report's marks, to show them decoded in report.html: the request and the
answer (client->kshim, kshim->client; same connection and correlation id) behind every cause row
(`conn`, `corr`) and every membership change (the record its `ts_ns` names), at most MAX_PAIRS."""

from __future__ import annotations

import json

MAX_PAIRS = 5000


def linked_frames(grp, tables: dict[str, list[dict]], max_pairs: int = MAX_PAIRS) -> dict:
    """{"frames": {"conn:corr": [frame dicts in time order]}, "by_ts": {ts_ns of a change: "conn:corr"}}.
    `grp`: the group records DataFrame (load.group_records)."""
    from pyspark.sql import functions as F
    spark = grp.sparkSession
    frames_df = grp.where(F.col("type") == "frame")
    pairs = {(int(c["conn"]), int(c["corr"])) for c in tables.get("causes") or ()
             if c.get("conn") is not None and c.get("corr") is not None}
    by_ts: dict[int, str] = {}
    ts = sorted({int(c["ts_ns"]) for c in tables.get("changes") or () if c.get("ts_ns") is not None})[:max_pairs]
    if ts:
        keys = spark.createDataFrame([(t,) for t in ts], "ts_ns BIGINT")
        for r in frames_df.join(F.broadcast(keys), "ts_ns").select("ts_ns", "conn", "corr").collect():
            if r.conn is not None and r.corr is not None:
                by_ts[r.ts_ns] = f"{r.conn}:{r.corr}"
                pairs.add((r.conn, r.corr))
    if not pairs:
        return {"frames": {}, "by_ts": by_ts}
    keys = spark.createDataFrame(sorted(pairs)[:max_pairs], "conn BIGINT, corr INT")
    rows = (frames_df.join(F.broadcast(keys), ["conn", "corr"])
            .select("conn", "corr", "ts_ns", "wall_ms", "dir", "api", "api_version", "error_codes", "body").collect())
    frames: dict[str, list[dict]] = {}
    for r in sorted(rows, key=lambda r: r.ts_ns or 0):
        try:
            body = json.loads(r.body) if r.body else None
        except ValueError:
            body = r.body
        frames.setdefault(f"{r.conn}:{r.corr}", []).append(
            {"dir": r.dir, "api": r.api, "v": r.api_version, "conn": r.conn, "corr": r.corr, "wall_ms": r.wall_ms,
             "errors": list(r.error_codes) if r.error_codes else None, "body": body})
    return {"frames": frames, "by_ts": by_ts}
