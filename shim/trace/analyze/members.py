"""Per member, in Spark SQL: heartbeat gaps against the session timeout, and commit cadence.

Heartbeat gaps are the times between one member's consecutive Heartbeat requests (client->kshim), or
ConsumerGroupHeartbeat requests for a KIP-848 member;
the session timeout is the one its JoinGroup request asked for (joined to kshim's answer, which
names the member id). Commit cadence: OffsetCommit requests per member, and the times between them.
All of it from one window over each member's group frames (one shuffle of the scanned records).
"""

from __future__ import annotations

from .load import (CONSUMER_GROUP_HEARTBEAT, HEARTBEAT, JOIN_GROUP, OFFSET_COMMIT, SYNC_GROUP,
                   consumer_heartbeat_cond, group_records)


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
    """One row per (group, member) with heartbeats or commits: heartbeats and their gaps, session
    timeout, commits and cadence, silences. One window over each member's group frames (one shuffle):
    a heartbeat's gap is from the member's previous Heartbeat request, a commit's from its previous
    OffsetCommit request, a silence is the time before a request since the member's previous group
    frame either way (a JoinGroup or SyncGroup parked by the coordinator is waiting, not silence:
    its answer ends it)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    timeouts = session_timeouts(df, group)
    frames = (group_records(df, group).unionByName(df.where(consumer_heartbeat_cond(group)))
              .where((F.col("type") == "frame")
                     & F.col("api_key").isin(OFFSET_COMMIT, JOIN_GROUP, HEARTBEAT, SYNC_GROUP, CONSUMER_GROUP_HEARTBEAT)
                     & F.col("member").isNotNull())
              .select("group", "member", "instance", "ts_ns", "wall_ms", "api_key", "dir")
              .join(F.broadcast(timeouts), ["group", "member"], "left"))
    w = Window.partitionBy("group", "member").orderBy("ts_ns")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    req = F.col("dir") == "client->kshim"
    is_hb = req & F.col("api_key").isin(HEARTBEAT, CONSUMER_GROUP_HEARTBEAT)
    is_commit = req & (F.col("api_key") == OFFSET_COMMIT)
    ms = F.lit(1e6)
    gaps = frames.select(
        "*", is_hb.alias("_hb"), is_commit.alias("_commit"),
        ((F.col("ts_ns") - F.lag("ts_ns").over(w)) / ms).alias("_silence"),
        ((F.col("ts_ns") - F.last(F.when(is_hb, F.col("ts_ns")), ignorenulls=True).over(before)) / ms).alias("_hb_gap"),
        ((F.col("ts_ns") - F.last(F.when(is_commit, F.col("ts_ns")), ignorenulls=True).over(before)) / ms)
        .alias("_commit_gap"))
    st = F.col("session_timeout_ms")
    hb_gap = F.when(F.col("_hb"), F.col("_hb_gap"))
    commit_gap = F.when(F.col("_commit"), F.col("_commit_gap"))
    silence = F.when(F.col("dir") == "client->kshim", F.col("_silence"))
    out = (gaps.groupBy("group", "member", "session_timeout_ms", "rebalance_timeout_ms").agg(
        F.first(F.when(F.col("_hb"), F.col("instance")), ignorenulls=True).alias("instance"),
        F.count(F.when(F.col("_hb"), 1)).alias("heartbeats"),
        F.min(F.when(F.col("_hb"), F.col("wall_ms"))).alias("first_wall_ms"),
        F.max(F.when(F.col("_hb"), F.col("wall_ms"))).alias("last_wall_ms"),
        F.round(F.avg(hb_gap), 1).alias("heartbeat_gap_avg_ms"),
        F.round(F.max(hb_gap), 1).alias("heartbeat_gap_max_ms"),
        F.count(F.when(hb_gap > st / 2, 1)).alias("heartbeat_gaps_over_half_session"),
        F.count(F.when(F.col("_commit"), 1)).alias("commits"),
        F.round(F.avg(commit_gap), 1).alias("commit_interval_avg_ms"),
        F.round(F.max(commit_gap), 1).alias("commit_interval_max_ms"),
        F.round(F.max(silence), 1).alias("silence_max_ms"),
        F.count(F.when(silence > st, 1)).alias("silences_over_session_timeout"))
        .where((F.col("heartbeats") > 0) | (F.col("commits") > 0)))
    return out.select("group", "member", "instance", "heartbeats", "first_wall_ms", "last_wall_ms", "heartbeat_gap_avg_ms",
                      "heartbeat_gap_max_ms", "heartbeat_gaps_over_half_session", "commits", "commit_interval_avg_ms",
                      "commit_interval_max_ms", "session_timeout_ms", "rebalance_timeout_ms", "silence_max_ms",
                      "silences_over_session_timeout",
                      F.round(F.col("heartbeat_gap_max_ms") / st, 3).alias("heartbeat_gap_max_over_session"))
