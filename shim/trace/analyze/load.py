"""Trace files (gzip JSON lines and Parquet, as shim/trace/sink.py writes them) into one DataFrame
with an explicit schema: no inference pass, and `body` kept as JSON text in both formats (Spark keeps
a nested JSON value as its text for a STRING column)."""

from __future__ import annotations


from pathlib import Path

from kcodec.protocol import ApiKey

# the columns the analysis reads; every other field of a record is ignored
SCHEMA_DDL = ("type STRING, ts_ns BIGINT, wall_ms BIGINT, conn BIGINT, dir STRING, client_id STRING, "
              "client_sw STRING, api_key INT, api STRING, api_version INT, corr INT, size BIGINT, "
              "`group` STRING, member STRING, instance STRING, generation INT, event STRING, "
              "error_codes ARRAY<INT>, body STRING")

# API keys as plain ints: they go into Spark expressions
OFFSET_COMMIT, OFFSET_FETCH = int(ApiKey.OFFSET_COMMIT), int(ApiKey.OFFSET_FETCH)
JOIN_GROUP, HEARTBEAT = int(ApiKey.JOIN_GROUP), int(ApiKey.HEARTBEAT)
LEAVE_GROUP, SYNC_GROUP = int(ApiKey.LEAVE_GROUP), int(ApiKey.SYNC_GROUP)
# the group APIs the analysis reads
GROUP_APIS = (OFFSET_COMMIT, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP)
# share (KIP-932) and streams (KIP-1071) member timelines: heartbeats.py; Metadata names topic ids
SHARE_GROUP_HEARTBEAT, STREAMS_GROUP_HEARTBEAT = int(ApiKey.SHARE_GROUP_HEARTBEAT), int(ApiKey.STREAMS_GROUP_HEARTBEAT)
METADATA = int(ApiKey.METADATA)
# KIP-848 consumer groups (kshim's coordinator answers them): reconcile.py
CONSUMER_GROUP_HEARTBEAT = int(ApiKey.CONSUMER_GROUP_HEARTBEAT)


# a capture's two hops (`kshim trace import`) are the client side kshim's traces call client->kshim and
# kshim->client: the analysis reads them under those names (client_view, and load's `dir` column)
CAPTURE_DIRS = {"client->broker": "client->kshim", "broker->client": "kshim->client"}


def client_view(rec: dict) -> dict:
    """A record with a capture's direction named as the analysis reads it (pure-Python folds)."""
    d = CAPTURE_DIRS.get(rec.get("dir"))
    return {**rec, "dir": d} if d else rec


def trace_inputs(directory: Path) -> tuple[list[str], list[str]]:
    """(JSON lines files, Parquet files) of a trace directory; `.part` files (still open) are left out."""
    d = Path(directory)
    names = sorted(p for p in d.iterdir() if p.name.startswith("trace-"))
    return ([str(p) for p in names if p.name.endswith(".jsonl.gz")],
            [str(p) for p in names if p.name.endswith(".parquet")])


def load(spark, directory: Path, inputs=None, with_file: bool = False):
    """Every record of the trace (both formats unioned) with SCHEMA_DDL's columns. `inputs`: the
    files to read (inputs.collect_inputs: with snapshots of files being written), by default the
    complete files of `directory`; `with_file`: also `_file`, the path Spark read each record from."""
    from pyspark.sql import functions as F
    jsonl, parquet = (inputs.jsonl, inputs.parquet) if inputs is not None else trace_inputs(directory)
    if not jsonl and not parquet:
        raise FileNotFoundError(f"no trace files (trace-*.jsonl.gz, trace-*.parquet) in {directory}")
    frames = []
    if jsonl:
        frames.append(spark.read.schema(SCHEMA_DDL).option("mode", "PERMISSIVE").json(jsonl))
    if parquet:
        frames.append(spark.read.schema(SCHEMA_DDL).parquet(*parquet))
    if with_file:
        frames = [f.withColumn("_file", F.input_file_name()) for f in frames]
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    d = F.col("dir")
    return df.withColumn("dir", F.when(d == "client->broker", "client->kshim")
                         .when(d == "broker->client", "kshim->client").otherwise(d))


def file_stats(df) -> dict[str, tuple[int, int | None]]:
    """Per `_file` (load's with_file): (records, last wall_ms)."""
    from pyspark.sql import functions as F
    rows = df.groupBy("_file").agg(F.count(F.lit(1)).alias("n"), F.max("wall_ms").alias("last")).collect()
    return {r["_file"]: (r["n"], r["last"]) for r in rows}


def _group_cond(group: str | None):
    from pyspark.sql import functions as F
    cond = ((F.col("type") == "event") | ((F.col("type") == "frame") & F.col("api_key").isin(*GROUP_APIS)
                                          & F.col("dir").isin("client->kshim", "kshim->client")))
    cond = cond & F.col("group").isNotNull()
    if group is not None:
        cond = cond & (F.col("group") == group)
    return cond


def heartbeat_cond(group: str | None):
    """Share/streams heartbeats between the clients and kshim (kshim carries them to the broker)."""
    from pyspark.sql import functions as F
    cond = ((F.col("type") == "frame") & F.col("api_key").isin(SHARE_GROUP_HEARTBEAT, STREAMS_GROUP_HEARTBEAT)
            & F.col("dir").isin("client->kshim", "kshim->client") & F.col("group").isNotNull())
    if group is not None:
        cond = cond & (F.col("group") == group)
    return cond


def consumer_heartbeat_cond(group: str | None):
    """KIP-848 ConsumerGroupHeartbeats between the clients and kshim (kshim's coordinator answers them)."""
    from pyspark.sql import functions as F
    cond = ((F.col("type") == "frame") & (F.col("api_key") == CONSUMER_GROUP_HEARTBEAT)
            & F.col("dir").isin("client->kshim", "kshim->client") & F.col("group").isNotNull())
    if group is not None:
        cond = cond & (F.col("group") == group)
    return cond


def metadata_cond():
    """Metadata answers to the clients (their topic names and ids)."""
    from pyspark.sql import functions as F
    return (F.col("type") == "frame") & (F.col("api_key") == METADATA) & (F.col("dir") == "kshim->client")


def group_records(df, group: str | None = None):
    """The records the group analysis needs: coordinator events and the group APIs' frames between
    the clients and kshim (kshim answers them itself, nothing goes upstream)."""
    return df.where(_group_cond(group))


def scanned_records(df, group: str | None = None):
    """What the whole analysis reads, in one pass over the files (the pipeline caches it): the group
    records, share/streams and KIP-848 consumer group heartbeats, the Metadata answers to clients and
    the connections' closes (when a closed or killed client went away), and each file's trace_start /
    trace_stop (how far the trace goes: the report's time axis runs to its end)."""
    from pyspark.sql import functions as F
    return df.where(_group_cond(group) | heartbeat_cond(group) | consumer_heartbeat_cond(group) | metadata_cond()
                    | F.col("type").isin("conn_close", "trace_start", "trace_stop"))
