"""Per member, in Spark SQL: heartbeat gaps against the session timeout, and commit cadence.

Heartbeat gaps are the times between one member's consecutive Heartbeat requests (client->kshim);
the session timeout is the one its JoinGroup request asked for (joined to kshim's answer, which
names the member id). Commit cadence: OffsetCommit requests per member, and the times between them.
"""

from __future__ import annotations

from .load import HEARTBEAT, JOIN_GROUP, OFFSET_COMMIT, SYNC_GROUP, group_records


def _gaps(df, api_key: int, group: str | None):
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    reqs = (group_records(df, group)
            .where((F.col("api_key") == api_key) & (F.col("dir") == "client->kshim") & F.col("member").isNotNull())
            .select("group", "member", "instance", "ts_ns", "wall_ms"))
    w = Window.partitionBy("group", "member").orderBy("ts_ns")
    return reqs.withColumn("gap_ms", (F.col("ts_ns") - F.lag("ts_ns").over(w)) / F.lit(1e6))


def _silences(df, group: str | None):
    """Gaps before each group request of one member since its previous group frame, either direction
    (a JoinGroup or SyncGroup parked by the coordinator is waiting, not silence: its answer ends it)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    frames = (group_records(df, group)
              .where((F.col("type") == "frame") & F.col("api_key").isin(OFFSET_COMMIT, JOIN_GROUP, HEARTBEAT, SYNC_GROUP)
                     & F.col("member").isNotNull())
              .select("group", "member", "ts_ns", "dir"))
    w = Window.partitionBy("group", "member").orderBy("ts_ns")
    return (frames.withColumn("gap_ms", (F.col("ts_ns") - F.lag("ts_ns").over(w)) / F.lit(1e6))
            .where(F.col("dir") == "client->kshim")
            .groupBy("group", "member").agg(F.max("gap_ms").alias("silence_max_ms"),
                                            F.collect_list("gap_ms").alias("_gaps")))


def session_timeouts(df, group: str | None = None):
    """(group, member, session_timeout_ms, rebalance_timeout_ms): from JoinGroup request bodies joined
    to their answers on (group, connection, correlation id)."""
    from pyspark.sql import functions as F
    joins = group_records(df, group).where(F.col("api_key") == JOIN_GROUP)
    req = joins.where(F.col("dir") == "client->kshim").select(
        "group", "conn", "corr", F.col("ts_ns").alias("req_ts"),
        F.get_json_object("body", "$.sessionTimeoutMs").cast("long").alias("session_timeout_ms"),
        F.get_json_object("body", "$.rebalanceTimeoutMs").cast("long").alias("rebalance_timeout_ms"))
    resp = joins.where(F.col("dir") == "kshim->client").select(
        "group", "conn", "corr", F.col("ts_ns").alias("resp_ts"),
        F.get_json_object("body", "$.memberId").alias("member"))
    both = req.join(resp, ["group", "conn", "corr"]).where(
        (F.col("resp_ts") >= F.col("req_ts")) & (F.col("member") != ""))
    return both.groupBy("group", "member").agg(F.max("session_timeout_ms").alias("session_timeout_ms"),
                                               F.max("rebalance_timeout_ms").alias("rebalance_timeout_ms"))


def member_stats(df, group: str | None = None):
    """One row per (group, member): heartbeats and their gaps, session timeout, commits and cadence."""
    from pyspark.sql import functions as F
    timeouts = session_timeouts(df, group)
    st = F.col("session_timeout_ms")
    hb = (_gaps(df, HEARTBEAT, group).join(F.broadcast(timeouts), ["group", "member"], "left")
          .groupBy("group", "member", "session_timeout_ms").agg(
              F.first("instance", ignorenulls=True).alias("instance"),
              F.count("*").alias("heartbeats"),
              F.min("wall_ms").alias("first_wall_ms"), F.max("wall_ms").alias("last_wall_ms"),
              F.round(F.avg("gap_ms"), 1).alias("heartbeat_gap_avg_ms"),
              F.round(F.max("gap_ms"), 1).alias("heartbeat_gap_max_ms"),
              F.count(F.when(F.col("gap_ms") > st / 2, 1)).alias("heartbeat_gaps_over_half_session")))
    commits = _gaps(df, OFFSET_COMMIT, group).groupBy("group", "member").agg(
        F.count("*").alias("commits"),
        F.round(F.avg("gap_ms"), 1).alias("commit_interval_avg_ms"),
        F.round(F.max("gap_ms"), 1).alias("commit_interval_max_ms"))
    silences = _silences(df, group).join(F.broadcast(timeouts), ["group", "member"], "left").select(
        "group", "member", F.round("silence_max_ms", 1).alias("silence_max_ms"),
        F.size(F.filter("_gaps", lambda g: g > F.col("session_timeout_ms"))).alias("silences_over_session_timeout"))
    out = (hb.drop("session_timeout_ms").join(commits, ["group", "member"], "full_outer")
           .join(timeouts, ["group", "member"], "left").join(silences, ["group", "member"], "left"))
    return (out.withColumn("heartbeat_gap_max_over_session", F.round(F.col("heartbeat_gap_max_ms") / st, 3))
            .fillna(0, ["heartbeats", "commits", "heartbeat_gaps_over_half_session", "silences_over_session_timeout"]))
