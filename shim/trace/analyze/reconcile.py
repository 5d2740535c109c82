"""KIP-848 consumer groups: partition owners, reconciliation and rebalance rounds, folded from one
group's ConsumerGroupHeartbeat frames (as the client sent them and kshim's coordinator answered them,
paired by connection and correlation id) and coordinator events (pure Python; partitions.py runs it
per group in Spark).

What the client does (Kafka's ConsumerMembershipManager / AbstractMembershipManager): an answer with
a non-null `assignment` is its new target (null: unchanged); it revokes the partitions no longer in
it (onPartitionsRevoked), takes the new ones (onPartitionsAssigned) and acknowledges with a
heartbeat listing its owned `topicPartitions` (a null list means unchanged since it last sent one).

  owner start   the answer whose assignment includes the partition
  owner end     the heartbeat whose owned partitions no longer list it (`revoked`; the answer that
                dropped it is `revoke_asked_wall_ms`: the Java consumer pauses fetching it there,
                AsyncKafkaConsumer's reconciliation, before its onPartitionsRevoked); a leave
                (epoch -1 / -2, `left`: the client revoked before sending it); a FENCED_MEMBER_EPOCH
                / UNKNOWN_MEMBER_ID answer (`fenced`: onPartitionsLost); the coordinator's
                session_timeout / member_removed / static_member_replaced events
  reconciliation per member, per answer carrying a new target: when the owned list first equals it
                (latency), and when it first no longer holds any partition taken away (revocation)
  rounds        one per `group_epoch` event (the group epoch bump a target assignment follows), with
                the members' revocation acks (`joins`) and assignment answers (`syncs`) until the next
Topic ids are named from the trace's Metadata answers (heartbeats.topic_names); an id none named is
"topic id ID (name not in the trace)". A trace that begins after the group formed does not show who
owned a partition before its first assignment answer: that segment is `previous_owner_unknown`.
"""

from __future__ import annotations

from kcodec.protocol import Error

from .load import CONSUMER_GROUP_HEARTBEAT
from .ownership import UNSEEN_WITHOUT_LAST, LastSeen
from .partition_tables import OWNER_COLUMNS, RECONCILIATION_COLUMNS, row, split_partition, topic_label
from .timeline import C2K, K2C, _body

FENCED = frozenset({int(Error.FENCED_MEMBER_EPOCH), int(Error.UNKNOWN_MEMBER_ID)})
LEAVE_EPOCHS = (-1, -2)
EVENT_ENDS = {"session_timeout": "session_timeout", "member_removed": "removed", "rebalance_timeout": "removed"}


def partitions(tps, names: dict[str, str]) -> set[tuple[str, int]]:
    return {(topic_label(names, t.get("topicId")), p) for t in tps or () for p in t.get("partitions") or ()}


def _names(parts) -> list[str]:
    return sorted(f"{t}-{p}" for t, p in parts)


class ConsumerGroupFold:
    def __init__(self, group: str, names: dict[str, str] | None = None, closes: dict | None = None):
        self.group, self.names = group, names or {}
        self.owners: list[dict] = []
        self.recon: list[dict] = []
        self.rounds: list[dict] = []
        self.open: dict[tuple, dict] = {}        # (topic, partition) -> open segment
        self.target: dict[str, set] = {}         # member -> its current target
        self.owned: dict[str, set] = {}          # member -> owned partitions it last reported
        self.pending: dict[tuple, dict] = {}     # (conn, corr) -> request facts
        self.unacked: dict[str, list[dict]] = {} # member -> reconciliation rows not yet complete
        self.instance: dict[str, str] = {}
        self.client: dict[str, str] = {}
        self.last_seen = LastSeen(closes)
        self.last_wall = None
        # the trace showed the group's first epochs (a join, then group epoch 1, or 2 from Kafka 4.3) before
        # any member already in it: before that, who owned a partition is unknown (previous_owner_unknown)
        self.start_seen = False
        self.member_before_start = False
        self.seen_parts: set[tuple] = set()

    # ------------------------------------------------------------------ segments
    def _end(self, key, rec, kind: str, last_seen: bool = False) -> None:
        seg = self.open.pop(key)
        seg["to_wall_ms"], seg["end_kind"], seg["_end_ts"] = rec.get("wall_ms"), kind, rec.get("ts_ns")
        if last_seen:
            seg["last_seen_wall_ms"] = self.last_seen.at(seg["member"], rec.get("wall_ms"))
            if seg["last_seen_wall_ms"] is None and kind in UNSEEN_WITHOUT_LAST:
                seg["end_unseen"] = True    # the coordinator's decision, and no sign of when it stopped

    def _end_member(self, mid, rec, kind: str, last_seen: bool = False) -> None:
        for key in [k for k, s in self.open.items() if s["member"] == mid]:
            self._end(key, rec, kind, last_seen)
        self.target.pop(mid, None)
        self.owned.pop(mid, None)

    # ------------------------------------------------------------------ records
    def add(self, rec) -> None:
        self.last_wall = rec.get("wall_ms") if rec.get("wall_ms") is not None else self.last_wall
        if rec.get("type") == "event":
            return self._event(rec, _body(rec))
        if rec.get("api_key") != CONSUMER_GROUP_HEARTBEAT:
            return
        key = (rec.get("conn"), rec.get("corr"))
        if rec.get("dir") == C2K:
            self._request(rec, key, _body(rec))
        elif rec.get("dir") == K2C:
            self._answer(rec, _body(rec), self.pending.pop(key, None))

    def _request(self, rec, key, body: dict) -> None:
        mid, epoch = body.get("memberId") or None, body.get("memberEpoch")
        self.pending[key] = {"member": mid, "epoch": epoch, "wall_ms": rec.get("wall_ms")}
        if isinstance(epoch, int) and epoch > 0:
            self.member_before_start = self.member_before_start or not self.start_seen
        if not mid:
            return
        self.last_seen.request(mid, rec)
        if body.get("instanceId"):
            self.instance[mid] = body["instanceId"]
        if rec.get("client_id"):
            self.client.setdefault(mid, rec["client_id"])
        if epoch in LEAVE_EPOCHS:
            return self._end_member(mid, rec, "left")
        if body.get("topicPartitions") is None:
            return
        owned = partitions(body["topicPartitions"], self.names)
        self.owned[mid] = owned
        for key_, seg in list(self.open.items()):
            if seg["member"] == mid and key_ not in owned:
                self._end(key_, rec, "revoked")
        for r in self.unacked.get(mid, []):
            if r["_revoked"] and r["revoked_wall_ms"] is None and not (owned & r["_revoked"]):
                r["revoked_wall_ms"] = rec.get("wall_ms")
                r["revocation_latency_ms"] = rec.get("wall_ms") - r["target_wall_ms"]
                self._round_at(r["target_wall_ms"], "joins", mid, rec.get("wall_ms"))
            if r["acked_wall_ms"] is None and owned == r["_target"]:
                r["acked_wall_ms"] = rec.get("wall_ms")
                r["latency_ms"] = rec.get("wall_ms") - r["target_wall_ms"]
        self.unacked[mid] = [r for r in self.unacked.get(mid, []) if r["acked_wall_ms"] is None]

    def _answer(self, rec, body: dict, req: dict | None) -> None:
        mid = body.get("memberId") or (req or {}).get("member")
        if not mid:
            return
        error = body.get("errorCode") or 0
        if error in FENCED:
            return self._end_member(mid, rec, "fenced", last_seen=True)
        if error or body.get("assignment") is None or (req or {}).get("epoch") in LEAVE_EPOCHS:
            return
        target = partitions(body["assignment"].get("topicPartitions"), self.names)
        old = self.target.get(mid)
        self.target[mid] = target
        epoch = body.get("memberEpoch")
        for key, seg in self.open.items():      # to give up: the client pauses fetching it now
            if seg["member"] == mid and key not in target and seg["revoke_asked_wall_ms"] is None:
                seg["revoke_asked_wall_ms"] = rec.get("wall_ms")
        for key in sorted(target):
            seg = self.open.get(key)
            if seg is not None and seg["member"] == mid:
                continue
            if seg is not None:
                self._end(key, rec, "lost")
            self._start(rec, mid, key, epoch)
        if old == target:
            return
        added, revoked = target - (old or set()), (old or set()) - target
        for r in self.unacked.get(mid, []):
            if r["acked_wall_ms"] is None:
                r["superseded"] = True
        r = row(RECONCILIATION_COLUMNS, group=self.group, group_type="consumer", member=mid,
                instance=self.instance.get(mid), client_id=self.client.get(mid), epoch=epoch,
                target_wall_ms=rec.get("wall_ms"), assigned=_names(added), revoked=_names(revoked), superseded=False)
        r["_target"], r["_revoked"] = target, revoked
        self.recon.append(r)
        self.unacked.setdefault(mid, []).append(r)
        self._round_at(rec.get("wall_ms"), "syncs", mid, rec.get("wall_ms"))

    def _start(self, rec, mid: str, key, epoch) -> None:
        seg = row(OWNER_COLUMNS, group=self.group, group_type="consumer", topic=key[0], partition=key[1],
                  member=mid, instance=self.instance.get(mid), client_id=self.client.get(mid), epoch=epoch,
                  protocol="consumer", from_wall_ms=rec.get("wall_ms"),
                  previous_owner_unknown=key not in self.seen_parts and not self.start_seen)
        self.seen_parts.add(key)
        seg["_end_ts"] = None
        self.owners.append(seg)
        self.open[key] = seg

    def _round_at(self, wall, field: str, mid: str, value) -> None:
        """The round in force at `wall`: a member's first revocation ack, its last assignment answer."""
        r = next((r for r in reversed(self.rounds) if r["start_wall_ms"] <= wall), None)
        if r is not None:
            if field == "syncs":
                r[field][mid] = value
            else:
                r[field].setdefault(mid, value)

    def _event(self, rec, body: dict) -> None:
        kind, mid = rec.get("event"), body.get("member")
        if kind == "member_assignment" and body.get("source") == "records":
            return self._recorded(rec, body)
        if kind == "group_epoch" and body.get("in_force"):
            return              # the records' first sight: the epoch in force, not a rebalance
        if kind == "group_epoch":
            if (body.get("epoch") or 0) <= 2 and not self.member_before_start:
                self.start_seen = True
            self.rounds.append({"group": self.group, "group_type": "consumer", "generation": body.get("epoch"),
                                "protocol": "consumer", "start_wall_ms": rec.get("wall_ms"),
                                "start_ts": rec.get("ts_ns"), "joins": {}, "syncs": {}})
        elif kind in EVENT_ENDS and mid:
            self._end_member(mid, rec, EVENT_ENDS[kind], last_seen=True)
        elif kind == "static_member_replaced" and body.get("old"):
            self._end_member(body["old"], rec, "static_replaced", last_seen=True)

    def _recorded(self, rec, body: dict) -> None:
        """A ConsumerGroupCurrentMemberAssignment record (`kshim trace import --consumer-offsets`): the
        member owns its assigned partitions and those pending revocation; a partition it no longer lists
        was revoked (the coordinator writes the record when the heartbeat acknowledging it arrives); one
        newly pending revocation was asked for then (`revoke_asked_wall_ms`)."""
        mid, wall = body.get("member"), rec.get("wall_ms")
        if not mid:
            return
        if body.get("epoch") in LEAVE_EPOCHS:     # it left (-2: a static member, its assignment kept for it)
            return self._end_member(mid, rec, "left")
        if body.get("instance"):
            self.instance[mid] = body["instance"]
        assigned = {split_partition(p) for p in body.get("assigned") or ()}
        pending = {split_partition(p) for p in body.get("pending_revocation") or ()}
        owned = assigned | pending
        for key, seg in list(self.open.items()):
            if seg["member"] != mid:
                continue
            if key not in owned:
                self._end(key, rec, "revoked")
                self._round_at(wall, "joins", mid, wall)
            elif key in pending and seg["revoke_asked_wall_ms"] is None:
                seg["revoke_asked_wall_ms"] = wall
        new = sorted(k for k in owned if not (self.open.get(k) or {}).get("member") == mid)
        for key in new:
            if key in self.open:
                self._end(key, rec, "lost")
            self._start(rec, mid, key, body.get("epoch"))
        if new:
            self._round_at(wall, "syncs", mid, wall)

    # ------------------------------------------------------------------ result
    def finish(self) -> tuple[list[dict], list[dict], list[dict]]:
        """(partition_owners rows, reconciliation rows, rounds)."""
        starts = [(r["start_ts"], r["generation"]) for r in self.rounds]
        for seg in self.owners:
            if seg["to_wall_ms"] is None:
                seg["end_kind"] = "trace_end"
            elif seg["end_kind"] == "revoked":    # the group epoch whose target took it away
                seg["end_generation"] = next((g for ts, g in reversed(starts) if ts <= seg["_end_ts"]), None)
            else:                                 # the bump that follows the member's removal
                seg["end_generation"] = next((g for ts, g in starts if ts >= seg["_end_ts"]), None)
            end = seg["to_wall_ms"] if seg["to_wall_ms"] is not None else self.last_wall
            seg["duration_ms"] = end - seg["from_wall_ms"] if end is not None else None
        for r in self.rounds:
            r["end_wall_ms"] = max(r["syncs"].values(), default=None)
        owners = [{k: v for k, v in s.items() if not k.startswith("_")} for s in self.owners]
        recon = [{k: v for k, v in r.items() if not k.startswith("_")} for r in self.recon]
        return owners, recon, self.rounds


def fold_consumer_group(group: str, records, names: dict[str, str] | None = None, closes: dict | None = None):
    """(partition_owners, reconciliation, rounds) of one KIP-848 group from its records (any order);
    `closes`: connection id -> wall_ms of its close."""
    f = ConsumerGroupFold(group, names, closes)
    for rec in sorted(records, key=lambda r: (r.get("ts_ns") or 0)):
        f.add(rec)
    return f.finish()
