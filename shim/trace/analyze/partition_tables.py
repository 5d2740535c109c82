"""The contract of the per-partition analysis: the five tables `kshim trace analyze` writes for "which
partitions stopped being consumed, for how long, and why", their columns and the values of
their kind columns. The folds (ownership.py for classic groups, reconcile.py for KIP-848 consumer
groups, gaps.py, causes.py) build rows with exactly these keys (`row()` fills the missing ones with
None), so the report, the HTML and other readers can rely on them.

Times are the trace's `wall_ms` (Unix milliseconds as kshim saw the frame or event).

partition_owners   one row per (group, topic, partition, owner segment): who consumed it when
partition_gaps     one row per interval with no owner (and one `initial` row per partition for its
                   first assignment, which is not unavailability)
rebalance_impact   one row per rebalance (classic: per generation formed; KIP-848: per group epoch)
causes             why each rebalance happened: a chain of rows per `cause_id`, in `seq` order
reconciliation     KIP-848 groups: one row per (member, assignment the coordinator sent it)
"""

from __future__ import annotations

OWNER_COLUMNS = (
    "group", "group_type",      # "classic" | "consumer" (KIP-848)
    "topic", "partition",
    "member", "instance", "client_id",
    "generation",               # classic: the generation whose SyncGroup answer gave the partition
    "epoch",                    # KIP-848: the member epoch of the answer that gave it
    "protocol",                 # "eager" | "cooperative" | "consumer"
    "from_wall_ms",             # classic: the SyncGroup answer carrying it; KIP-848: the heartbeat answer
    "to_wall_ms",               # null: still owned at the end of the trace
    "end_kind",                 # END_KINDS
    "end_generation",           # the generation/epoch the end belongs to (the rebalance that took it away)
    "last_seen_wall_ms",        # for ends the coordinator decided (session timeout, removal, static
                                # replacement): the member's last request before it (it may have been
                                # dead since); else null
    "revoke_asked_wall_ms",     # KIP-848: the answer whose assignment dropped it (the Java consumer
                                # pauses fetching it there; its onPartitionsRevoked runs between this
                                # and to_wall_ms, the acknowledging heartbeat); else null
    "duration_ms",
    "previous_owner_unknown",   # true on a partition's first segment when the trace never showed who
                                # owned it before (it began after the group formed: ownership before
                                # from_wall_ms is unknown, not "none"); else false
    "end_unseen",               # true when the trace does not show when the owner stopped (the
                                # coordinator's records: an eager member revokes at its JoinGroup, a
                                # member leaves or dies, a static member closes, none of it recorded; a
                                # timeout, removal or static replacement of a member whose last request
                                # is not in the trace): to_wall_ms is the latest it can have been, the
                                # gap after it has no length (unknown, not 0); else null
)

END_KINDS = (
    "revoked",          # eager: the member's JoinGroup for the next round (it revoked all just before);
                        # cooperative: the SyncGroup answer without it; KIP-848: the heartbeat no longer owning it
    "left",             # LeaveGroup (or KIP-848 epoch -1 / -2)
    "poll_timeout",     # LeaveGroup with the Java consumer's reason "consumer poll timeout has expired."
    "session_timeout",  # the coordinator's session_timeout event
    "removed",          # the coordinator removed the member (did not rejoin / sync in time, rebalance timeout)
    "static_replaced",  # a new incarnation of the same group.instance.id took over
    "fenced",           # FENCED_INSTANCE_ID / FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID answer
    "lost",             # another member was given it while this one still held it (no revocation seen)
    "trace_end",        # still owned when the trace ends (to_wall_ms is null)
)

GAP_COLUMNS = (
    "group", "group_type", "topic", "partition",
    "from_wall_ms",             # the previous owner's end (or, `initial`, the first owner's start)
    "to_wall_ms",               # the next owner's start; null: no owner until the trace end
    "duration_ms",              # to - from (to the last record of the trace when open)
    "open",                     # true: no owner at the end of the trace
    "initial",                  # true: the partition's first assignment in the trace (no previous owner)
    "stalled_from_wall_ms",     # the previous owner had stopped earlier than from_wall_ms: its
                                # last_seen_wall_ms (it went silent) or revoke_asked_wall_ms (KIP-848)
    "stalled_ms",               # to (or the trace end) - stalled_from_wall_ms: how long it really was
                                # not consumed (null when stalled_from_wall_ms is)
    "previous_member", "previous_instance", "previous_client_id", "previous_end_kind",
    "next_member", "next_instance", "next_client_id",
    "generation",               # the rebalance that caused it: the previous owner's end_generation (the
                                # first owner's generation for an `initial` row)
    "next_generation",          # the generation / epoch whose assignment ended it
    "cause_id",                 # -> causes.cause_id of that rebalance
    "previous_owner_unknown",   # true on an `initial` row whose partition's owner before it the trace
                                # never showed (it began after the group formed): not a gap, and no
                                # duration (null): ownership before to_wall_ms is unknown
)

IMPACT_COLUMNS = (
    "group", "group_type", "generation",   # classic generation, or KIP-848 group epoch
    "protocol",                 # "eager" | "cooperative" | "consumer"
    "start_wall_ms",            # the rebalance event (classic) / group_epoch event (KIP-848)
    "end_wall_ms",              # the last member's assignment answer
    "partitions_unavailable",   # distinct partitions with a non-initial gap attributed to this rebalance
    "max_gap_ms", "unavailable_partition_ms",   # sum of the gaps' duration_ms
    "max_stalled_ms",           # the longest gap counted from stalled_from_wall_ms where known
    "slowest_revoke_member", "slowest_revoke_ms",   # ms from the rebalance start to the member's
                                # JoinGroup (classic) / revocation ack (KIP-848)
    "slowest_rejoin_member", "slowest_rejoin_ms",   # ms from the start to the member's assignment answer
    "cause_id", "cause",        # the chain's first row as text
    "partitions_owner_unknown", # partitions this rebalance assigned whose owner before it the trace never
                                # showed; when > 0 the figures above (partitions_unavailable, max_gap_ms,
                                # unavailable_partition_ms, max_stalled_ms) are null: unknown, not 0
)

CAUSE_COLUMNS = (
    "group", "group_type", "generation",   # the generation / epoch the rebalance led to (null: still open)
    "cause_id", "seq",          # one chain per rebalance; seq 0 is the trigger
    "wall_ms", "kind",          # CAUSE_KINDS
    "member", "instance", "client_id",
    "reason",                   # KIP-800 reason (JoinGroup / LeaveGroup) or the coordinator's text
    "detail",
    "source",                   # whose word it is: "coordinator" (kshim's events), "broker_log" (a broker's
                                # server.log), "inferred" (from a capture's frames: kshim trace import),
                                # "records" (from __consumer_offsets: what changed, not why: inferred)
    "last_heartbeat_wall_ms", "timeout_ms",   # session_timeout: the member's last heartbeat (or other
                                # group request) and its session timeout
    "conn", "corr", "ts_ns",    # the frame behind it (the request), to show it decoded; null for events
)

CAUSE_KINDS = (
    "joined", "rejoined", "left", "session_timeout", "poll_interval_exceeded", "removed", "sync_timeout",
    "rebalance_timeout", "static_replaced", "metadata_change", "subscription_change",
    "regex_change", "coordinator",   # any other coordinator reason, as text in `reason`
)

RECONCILIATION_COLUMNS = (
    "group", "group_type", "member", "instance", "client_id",
    "epoch",                    # the member epoch of the answer carrying the new assignment
    "target_wall_ms",           # that answer
    "assigned",                 # partitions added ("topic-partition")
    "revoked",                  # partitions taken away
    "acked_wall_ms",            # the first heartbeat whose owned partitions equal the target
    "latency_ms",               # acked - target
    "revoked_wall_ms",          # the first heartbeat no longer owning any revoked partition
    "revocation_latency_ms",
    "superseded",               # a newer assignment came before this one was acked
)

TABLES = {"partition_owners": OWNER_COLUMNS, "partition_gaps": GAP_COLUMNS, "rebalance_impact": IMPACT_COLUMNS,
          "causes": CAUSE_COLUMNS, "reconciliation": RECONCILIATION_COLUMNS}


def row(columns: tuple[str, ...], **values) -> dict:
    """A row with exactly `columns` (unknown keys are a bug: they raise)."""
    extra = set(values) - set(columns)
    if extra:
        raise KeyError(f"not columns of this table: {sorted(extra)}")
    return {c: values.get(c) for c in columns}


def topic_label(names: dict[str, str], topic_id) -> str:
    """A topic id's name from the trace's Metadata answers; an id no answer named is said to be one
    (never passed off as a name)."""
    name = names.get(topic_id)
    return name if name else f"topic id {topic_id} (name not in the trace)"


def split_partition(name: str) -> tuple[str, int]:
    """"topic-3" -> ("topic", 3) (topic names may contain '-')."""
    topic, _, part = name.rpartition("-")
    return topic, int(part)


def cause_id(group: str, generation, start_wall_ms) -> str:
    """The id of a rebalance's cause chain: group and the generation it formed (`open@` its start if none)."""
    return f"{group}:{generation}" if generation is not None else f"{group}:open@{start_wall_ms}"


def static_cause_id(group: str, wall_ms) -> str:
    """A static member's replacement without rebalance (its gap has a cause, but no rebalance)."""
    return f"{group}:static@{wall_ms}"
