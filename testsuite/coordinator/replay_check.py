"""Replay check for the coordinator fuzzers and simulations: the two routes that change
a GroupCoordinator's state must agree. Route 1: the handlers change the live state and append records
to `c.written`. Route 2: a fresh GroupCoordinator fed those records through `replay()` (what a kshim
restart does with the state topic). `check_replay(c, log)` compares a normalized snapshot of the
durable state of both and returns the differences.

Uses only the coordinator's public surface: c.groups, c.consumer_groups, c.offsets, c.txns, c.topics,
c.cfg, c.now, replay(), and c.uncommitted.hidden() to leave out groups reads do not see yet.

What is compared (what the records carry):
- classic groups: existence and, for a group that is Stable or Empty (a settled generation: the
  GroupMetadata record of it has been written), state, protocol type and name, generation, leader,
  static member mapping and the subscribed topics derived from the members; every member's id,
  instance id, client id and host, session and rebalance timeouts, the metadata of the chosen
  protocol and the assignment. A group in PreparingRebalance after Stable or Empty: its generation
  only (a rebalance under way writes nothing until the join completes, as in Kafka's
  completeClassicGroupJoin for a group with members, so the generation is the last written one).
  CompletingRebalance, and PreparingRebalance after CompletingRebalance (the sync did not complete:
  the new generation was never written, and a restart brings back the last written one, as in
  Kafka): existence only.
- KIP-848 consumer groups (every change is written at once): group epoch, assignment epoch and its
  timestamp, static members, the per-group subscription counts derived from the members, partition
  owners; every member's identity, subscription, assignor, classic-protocol metadata, epochs, state,
  assigned and pending partitions (with their epochs) and target assignment.
- committed offsets (every field of the OffsetRecord), pending transactional offsets by producer,
  their producer epochs and the per-group index.

Excluded by design (not in any record):
- timers and deadlines: heartbeats, session/rebalance timers (session_deadline, session_armed), join
  and sync timers, transaction timeouts (replay restarts them from the load);
- parked requests (awaiting_join / awaiting_sync), pending members (KIP-394 MEMBER_ID_REQUIRED ids),
  pending_sync, is_new, join_reason, new_member_added and awaiting_join_count;
- a classic member's other protocols (the record keeps the chosen protocol's metadata only, so
  protocol_counts too), the members' HashMap capacity (member_table) and the members' dict order;
- state_timestamp_ms of classic groups: the record carries the timestamp of the state before the
  write (Kafka writes the GroupMetadata record of a sync before the Stable transition too), and a
  group created by offsets alone gets the load time on replay;
- regex resolutions and the topic metadata a consumer group last resolved against (regex_topics,
  regex_filters, regex_refreshed_ms, metadata_snapshot, resolved_cache, topics_version): recomputed
  from the live topic metadata;
- transaction timeouts observed from InitProducerId (c.txns.timeouts);
- groups not yet visible to reads (created by a write that wrote no record, uncommitted.py).
"""

from __future__ import annotations

from shim.coordinator import GroupCoordinator
from shim.coordinator.classic_group import COMPLETING, EMPTY, PREPARING, STABLE


class ReplayMismatch(AssertionError):
    """The state rebuilt from the records differs from the live state."""


def _nonempty(d: dict) -> dict:
    return {k: v for k, v in d.items() if v}


def _classic_group(g, live) -> dict:
    """The durable fields of g, as far as they are comparable while the live group is in its state
    (the replayed group is always Stable or Empty)."""
    if live.state == PREPARING and live.previous_state != COMPLETING:
        return {"compared": "generation only (live group PreparingRebalance)", "generation": g.generation_id}
    if live.state not in (STABLE, EMPTY):
        return {"compared": f"existence only (live group {live.state} after {live.previous_state})"}
    return {
        "state": g.state, "protocol_type": g.protocol_type, "protocol_name": g.protocol_name,
        "generation": g.generation_id, "leader": g.leader_id,
        "static_members": dict(sorted(g.static_members.items())),
        "subscribed": None if g.subscribed is None else sorted(g.subscribed),
        "members": {
            mid: {"instance_id": m.instance_id, "client_id": m.client_id, "client_host": m.client_host,
                  "session_timeout_ms": m.session_timeout_ms, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                  "metadata": m.metadata(g.protocol_name), "assignment": bytes(m.assignment)}
            for mid, m in sorted(g.members.items())},
    }


def _partitions(d: dict) -> dict:
    """topic id -> sorted partitions (or (partition, epoch) pairs); empty topics dropped."""
    out = {}
    for t, ps in d.items():
        if ps:
            out[str(t)] = sorted(ps.items()) if isinstance(ps, dict) else sorted(ps)
    return dict(sorted(out.items()))


def _consumer_group(g) -> dict:
    members = {}
    for mid, m in sorted(g.members.items()):
        members[mid] = {
            "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "server_assignor": m.server_assignor, "subscribed_topic_names": tuple(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex, "classic": m.classic,
            "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
            "state": m.state, "assigned": _partitions(m.assigned),
            "pending_revocation": _partitions(m.pending_revocation), "target": _partitions(m.target)}
    return {
        "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
        "assignment_timestamp_ms": g.assignment_timestamp_ms, "state": g.state,
        "static_members": dict(sorted(g.static_members.items())),
        "name_counts": dict(sorted(_nonempty(dict(g.name_counts)).items())),
        "regex_counts": dict(sorted(_nonempty(dict(g.regex_counts)).items())),
        "assignor_counts": dict(sorted(_nonempty(dict(g.assignor_counts)).items())),
        "owners": {str(t): dict(sorted(ps.items())) for t, ps in sorted(g.owners.items(), key=lambda kv: str(kv[0]))
                   if ps},
        "members": members,
    }


def _hidden(c, gid: str) -> bool:
    uncommitted = getattr(c, "uncommitted", None)
    return uncommitted is not None and uncommitted.hidden(c, gid)


def durable_snapshot(c: GroupCoordinator, live: GroupCoordinator | None = None) -> dict:
    """The normalized durable state of a coordinator (see the module docstring for what is left out).
    `live`: the coordinator whose classic group states decide how much of each group is compared
    (c itself when None)."""
    live = live or c

    return {
        "classic": {gid: _classic_group(g, live.groups.get(gid, g)) for gid, g in sorted(c.groups.items())
                    if not _hidden(c, gid)},
        "consumer": {gid: _consumer_group(g) for gid, g in sorted(c.consumer_groups.items())},
        "offsets": {gid: dict(sorted(offs.items())) for gid, offs in sorted(c.offsets.by_group.items())
                    if offs},
        "txn_offsets": {pid: dict(sorted(offs.items())) for pid, offs in sorted(c.txns.by_producer.items())
                        if offs},
        "txn_epochs": dict(sorted(c.txns.epochs.items())),
        "txn_groups": {gid: sorted(pids) for gid, pids in sorted(c.txns.by_group.items()) if pids},
    }


def replayed(c: GroupCoordinator, log) -> GroupCoordinator:
    """A fresh coordinator (same config, clock and topic metadata) fed every record of `log`."""
    fresh = GroupCoordinator(c.cfg, now_ms=c.now, topics=c.topics)
    for record in log:
        fresh.replay(record)
    return fresh


def _diff(path: str, a, b, out: list[str], limit: int) -> None:
    if len(out) >= limit or a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=repr):
            if k not in b:
                out.append(f"{path}/{k}: only live: {a[k]!r}")
            elif k not in a:
                out.append(f"{path}/{k}: only replayed: {b[k]!r}")
            else:
                _diff(f"{path}/{k}", a[k], b[k], out, limit)
            if len(out) >= limit:
                return
    else:
        out.append(f"{path}: live {a!r} != replayed {b!r}")


def check_replay(c: GroupCoordinator, log, limit: int = 12) -> list[str]:
    """Differences between the live durable state and the one rebuilt from `log` (every record the
    coordinator wrote since it started, in order): [] when they agree."""
    out: list[str] = []
    _diff("", durable_snapshot(c), durable_snapshot(replayed(c, log), live=c), out, limit)
    return out


def assert_replay_agrees(c: GroupCoordinator, log, where: str = "") -> None:
    diffs = check_replay(c, log)
    if diffs:
        raise ReplayMismatch(f"{where}: replaying {len(log)} records differs from the live state:\n  "
                             + "\n  ".join(diffs))
