"""Who consumed each partition of a classic group when: one group's records folded in time order into
owner segments (`partition_owners`, partition_tables.OWNER_COLUMNS) and its rebalance rounds (pure
Python, as timeline.py; partitions.py runs it per group in Spark).

When a classic consumer owns a partition (Kafka's ConsumerCoordinator):
  start   the SyncGroup answer carrying the partition to the member: the client calls
          onPartitionsAssigned right after it (ConsumerCoordinator.onJoinComplete)
  eager   the member revokes everything before it rejoins (onJoinPrepare): ownership ends at the
          member's next JoinGroup request
  cooperative (KIP-429: every assignor the member offers in its JoinGroup supports COOPERATIVE;
          for a member never seen joining, the generation's protocol name) a kept partition stays
          owned across the rebalance; a partition the SyncGroup answer no longer carries ends at that
          answer (onJoinComplete revokes it, then requestRejoin "need to revoke partitions and re-join")
  leave   a LeaveGroup request (end `left`, or `poll_timeout` with the Java consumer's reason
          AbstractCoordinator.maybeLeaveGroup "consumer poll timeout has expired.")
  removal the coordinator's session_timeout / member_removed / static_member_replaced events, a
          FENCED_INSTANCE_ID answer; `last_seen_wall_ms` then says when the member last spoke (its last
          request, or its connection's close when that came later: a client closed or killed)
  lost    another member was given the partition while this one still held it
Unknown: a trace that begins after the group formed (a capture taken mid-life) does not show who
owned a partition before its first SyncGroup answer: that segment is `previous_owner_unknown` (gaps.py
counts no gap from there) unless the trace showed the group new (generation 1) or empty first.
Rounds: one per generation formed, from the `rebalance` event (else the generation event) to the
last member's SyncGroup answer; each member's JoinGroup (revocation, eager) and SyncGroup answer
(rejoin) times in it.
"""

from __future__ import annotations

from kcodec.protocol import Error

from .assignment import decode_b64, decode_hex
from .partition_tables import OWNER_COLUMNS, row, split_partition
from .timeline import C2K, K2C, _body
from .load import JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP

# assignors whose rebalance protocol is COOPERATIVE: Java CooperativeStickyAssignor and librdkafka's
# "cooperative-sticky"; Kafka Streams' StreamsPartitionAssignor ("stream")
COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky", "stream"})
POLL_TIMEOUT_REASON = "consumer poll timeout has expired"   # AbstractCoordinator.maybeLeaveGroup
FENCED_INSTANCE_ID, MEMBER_ID_REQUIRED = int(Error.FENCED_INSTANCE_ID), int(Error.MEMBER_ID_REQUIRED)
# ends the coordinator decides (a timeout, a removal, a static member's new id) after the member stopped:
# without its last request in the trace (always so for the coordinator's records), when it stopped is
# unknown (end_unseen)
UNSEEN_WITHOUT_LAST = frozenset({"session_timeout", "removed", "static_replaced"})
# ends that do not wait for a rebalance to be decided: the rebalance they belong to is the next one formed
NEXT_ROUND_ENDS = frozenset({"revoked", "left", "poll_timeout", "session_timeout", "removed", "fenced"})


class LastSeen:
    """A member's last sign of life: its last request, or the close of that request's connection (a
    closed or killed client: the trace's `conn_close` records, `closes`: conn -> wall_ms) if later."""

    def __init__(self, closes: dict | None = None):
        self.closes = closes or {}
        self.last: dict[str, tuple] = {}        # member id -> (wall_ms, conn) of its last request

    def request(self, mid: str, rec) -> None:
        self.last[mid] = (rec.get("wall_ms"), rec.get("conn"))

    def at(self, mid: str, end_wall_ms):
        wall, conn = self.last.get(mid, (None, None))
        closed = self.closes.get(conn)
        if wall is not None and closed is not None and wall <= closed <= (end_wall_ms or closed):
            return closed
        return wall


def remember_identity(instances: dict, clients: dict, mid, instance, client_id) -> None:
    """Note a member's group.instance.id and (first) client id where a record names them."""
    if mid and instance:
        instances[mid] = instance
    if mid and client_id:
        clients.setdefault(mid, client_id)


class ClassicOwnership:
    def __init__(self, group: str, closes: dict | None = None):
        self.group = group
        self.owners: list[dict] = []
        self.open: dict[str, dict] = {}          # "topic-partition" -> open segment
        self.held: dict[str, set] = {}           # member id -> its open partitions (the same, indexed)
        self.cooperative: dict[str, bool] = {}   # member id -> its JoinGroup offered only cooperative assignors
        self.instance: dict[str, str] = {}
        self.client: dict[str, str] = {}
        self.last_seen = LastSeen(closes)
        self.pending: dict[tuple, int] = {}      # JoinGroup (conn, corr) -> wall_ms of the (first) attempt
        self.first_try: dict[str, int] = {}      # member id from MEMBER_ID_REQUIRED -> first attempt wall_ms
        self.rounds: list[dict] = []
        self.round: dict | None = None           # the round being formed
        self.gen: dict | None = None             # the newest generation formed
        self.last_wall: int | None = None
        # the trace showed the group form (generation 1) or empty: before that, who owned a partition is
        # unknown; a partition's first segment says which (previous_owner_unknown)
        self.start_seen = False
        self.seen_parts: set[str] = set()

    # ------------------------------------------------------------------ segments
    def _start(self, rec, mid: str, part: str, gen: dict) -> None:
        topic, partition = split_partition(part)
        seg = row(OWNER_COLUMNS, group=self.group, group_type="classic", topic=topic, partition=partition,
                  member=mid, instance=self.instance.get(mid), client_id=self.client.get(mid),
                  generation=gen["generation"], protocol=gen["protocol"], from_wall_ms=rec.get("wall_ms"),
                  previous_owner_unknown=part not in self.seen_parts and not self.start_seen)
        self.seen_parts.add(part)
        seg["_end_ts"] = None
        self.owners.append(seg)
        self.open[part] = seg
        self.held.setdefault(mid, set()).add(part)

    def _end(self, part: str, rec, kind: str, last_seen: bool = False, now: bool = False, unseen: bool = False) -> None:
        """`now`: the end belongs to the generation in force (else, for NEXT_ROUND_ENDS, the next formed);
        `unseen`: `rec` is only the latest the owner can have stopped (end_unseen)."""
        seg = self.open.pop(part)
        if unseen:
            seg["end_unseen"] = True
        self.held[seg["member"]].discard(part)
        seg["to_wall_ms"], seg["end_kind"], seg["_end_ts"] = rec.get("wall_ms"), kind, rec.get("ts_ns")
        if now or kind not in NEXT_ROUND_ENDS:
            seg["end_generation"] = self.gen["generation"] if self.gen else None
        if last_seen:
            seg["last_seen_wall_ms"] = self.last_seen.at(seg["member"], rec.get("wall_ms"))
            if seg["last_seen_wall_ms"] is None and kind in UNSEEN_WITHOUT_LAST:
                seg["end_unseen"] = True    # the coordinator's decision, and no sign of when it stopped

    def _end_member(self, mid: str | None, rec, kind: str, last_seen: bool = False) -> None:
        for part in sorted(self.held.get(mid, ())):
            self._end(part, rec, kind, last_seen)

    # ------------------------------------------------------------------ records
    def add(self, rec) -> None:
        self.last_wall = rec.get("wall_ms") if rec.get("wall_ms") is not None else self.last_wall
        if rec.get("type") == "event":
            return self._event(rec, _body(rec))
        api, d, mid = rec.get("api_key"), rec.get("dir"), rec.get("member")
        if d == C2K and mid:
            self.last_seen.request(mid, rec)
            if rec.get("client_id"):
                self.client.setdefault(mid, rec["client_id"])
            if rec.get("instance"):
                self.instance[mid] = rec["instance"]
        if d == K2C and FENCED_INSTANCE_ID in (rec.get("error_codes") or ()):
            self._end_member(mid, rec, "fenced", last_seen=True)
        if api == JOIN_GROUP:
            self._join(rec, d)
        elif api == SYNC_GROUP and d == K2C and not rec.get("error_codes"):
            self._sync(rec, mid)
        elif api == LEAVE_GROUP and d == C2K:
            body = _body(rec)
            for m in body.get("members") or [{"memberId": body.get("memberId")}]:
                reason = m.get("reason") or ""
                self._end_member(m.get("memberId"), rec, "poll_timeout" if POLL_TIMEOUT_REASON in reason else "left")

    def _join(self, rec, d: str) -> None:
        key, body = (rec.get("conn"), rec.get("corr")), _body(rec)
        if d == C2K:
            mid = body.get("memberId") or None
            names = [p.get("name") for p in body.get("protocols") or ()]
            coop = bool(names) and all(n in COOPERATIVE_ASSIGNORS for n in names)
            self.pending[key] = self.first_try.pop(mid, None) or rec.get("wall_ms")
            if mid:
                self.cooperative[mid] = coop
                if not coop:
                    self._end_member(mid, rec, "revoked")
            else:
                self._new_coop = coop
            return
        sent = self.pending.pop(key, None)
        mid = body.get("memberId")      # the member id kshim gave (the request may have had none)
        if not mid:
            return
        if rec.get("client_id"):
            self.client.setdefault(mid, rec["client_id"])
        if rec.get("instance"):
            self.instance[mid] = rec["instance"]
        self.cooperative.setdefault(mid, getattr(self, "_new_coop", False))
        if MEMBER_ID_REQUIRED in (rec.get("error_codes") or ()) and sent is not None:
            self.first_try[mid] = sent
        gen = self.gen
        if (not rec.get("error_codes") and gen is not None and body.get("generationId") == gen["generation"]
                and sent is not None and sent <= gen["generation_wall_ms"]):
            gen["joins"].setdefault(mid, sent)      # a member of the round (not a later static rejoin)

    def _sync(self, rec, mid: str | None) -> None:
        gen = self.gen
        parts = decode_b64(_body(rec).get("assignment"))
        if not mid or parts is None or gen is None or rec.get("generation") != gen["generation"]:
            return
        if mid in gen["joins"] or not gen["joins"]:
            gen["syncs"].setdefault(mid, rec.get("wall_ms"))
        keep = set(parts)
        for part in sorted(self.held.get(mid, set()) - keep):
            self._end(part, rec, "revoked", now=True)     # cooperative: this generation moved it
        for part in parts:
            seg = self.open.get(part)
            if seg is not None and seg["member"] == mid:
                continue            # cooperative: kept across the rebalance
            if seg is not None:
                self._end(part, rec, "lost")
            self._start(rec, mid, part, gen)

    def _event(self, rec, body: dict) -> None:
        kind, mid = rec.get("event"), body.get("member")
        remember_identity(self.instance, self.client, mid, body.get("instance"), body.get("client_id"))
        if kind == "rebalance" and self.round is None:
            self.round = {"group": self.group, "group_type": "classic", "generation": None,
                          "start_wall_ms": rec.get("wall_ms"), "start_ts": rec.get("ts_ns"),
                          "joins": {}, "syncs": {}, "protocol": None}
        elif kind == "state" and body.get("to") == "Empty":
            self.start_seen = True
        elif kind == "generation":
            if body.get("in_force"):         # the records' first sight: the generation in force, no round
                name = body.get("protocol")
                self.gen = {"group": self.group, "group_type": "classic", "generation": body.get("generation"),
                            "protocol_name": name, "joins": {}, "syncs": {}, "in_force": True,
                            "protocol": "cooperative" if name in COOPERATIVE_ASSIGNORS else "eager"}
                return
            if body.get("generation") == 1 or body.get("members") == 0:     # a new group, or an emptied one
                self.start_seen = True
            r = self.round or {"group": self.group, "group_type": "classic", "start_wall_ms": rec.get("wall_ms"),
                               "start_ts": rec.get("ts_ns"), "joins": {}, "syncs": {}}
            self.round = None
            r.update(generation=body.get("generation"), generation_wall_ms=rec.get("wall_ms"),
                     gen_ts=rec.get("ts_ns"), protocol_name=body.get("protocol"), protocol=None)
            self.gen = r
            self.rounds.append(r)
        elif kind == "assignment" and body.get("source") == "records":
            self._recorded(rec, body)
        elif kind == "session_timeout":
            self._end_member(mid, rec, "session_timeout", last_seen=True)
        elif kind == "member_removed":
            self._end_member(mid, rec, "removed", last_seen=True)
        elif kind == "member_left":
            self._end_member(mid, rec, "left")
        elif kind == "static_member_replaced":
            self._end_member(body.get("old_member"), rec, "static_replaced", last_seen=True)

    def _recorded(self, rec, body: dict) -> None:
        """A GroupMetadata record's assignments (`kshim trace import --consumer-offsets`): owners from
        the record on. A new generation of an eager group: every member revoked all at its JoinGroup,
        before the record, at a time the records do not show (`end_unseen`: to_wall_ms is the latest
        it can have been; the gap's length is unknown)."""
        gen = self.gen
        if gen is None or body.get("generation") != gen["generation"]:
            return
        if not gen.get("in_force") and gen.get("_recorded") is None and \
                gen.get("protocol_name") not in COOPERATIVE_ASSIGNORS:
            for part in sorted(self.open):
                self._end(part, rec, "revoked", now=True, unseen=True)
        gen["_recorded"] = True
        for mid, text in (body.get("assignments") or {}).items():
            parts = decode_hex(text)
            if parts is None:
                continue
            gen["syncs"].setdefault(mid, rec.get("wall_ms"))
            for part in sorted(self.held.get(mid, set()) - set(parts)):
                self._end(part, rec, "revoked", now=True)
            for part in parts:
                seg = self.open.get(part)
                if seg is not None and seg["member"] == mid:
                    continue
                if seg is not None:
                    self._end(part, rec, "lost")
                self._start(rec, mid, part, gen)

    def protocol_of(self, gen: dict, members) -> str:
        """"cooperative" when every member of the generation joined offering only cooperative assignors."""
        flags = [self.cooperative[m] for m in members if m in self.cooperative]
        if flags:
            return "cooperative" if all(flags) else "eager"
        return "cooperative" if gen.get("protocol_name") in COOPERATIVE_ASSIGNORS else "eager"

    # ------------------------------------------------------------------ result
    def finish(self) -> tuple[list[dict], list[dict]]:
        """(owner segments, rounds): rounds carry generation, start/end wall_ms, protocol, joins, syncs."""
        if self.round is not None:   # still open: the protocol of the generation before it
            self.rounds.append({**self.round, "generation": None, "generation_wall_ms": None, "gen_ts": None,
                                "protocol_name": self.gen.get("protocol_name") if self.gen else None})
        prev_members: set = set()
        for r in self.rounds:
            members = set(r["joins"]) | set(r["syncs"])
            r["protocol"] = self.protocol_of(r, members or prev_members)
            prev_members = members or prev_members
            r["end_wall_ms"] = max(r["syncs"].values(), default=None)
        for seg in self.owners:
            if seg["to_wall_ms"] is None:
                seg["end_kind"] = "trace_end"
            elif seg["end_generation"] is None and seg["end_kind"] in NEXT_ROUND_ENDS:
                nxt = next((r for r in self.rounds if r["gen_ts"] is not None and r["gen_ts"] >= seg["_end_ts"]),
                           None)
                if nxt is None and self.rounds and self.rounds[-1]["generation"] is None:
                    nxt = self.rounds[-1]
                seg["end_generation"] = nxt["generation"] if nxt else None
                seg["_end_round"] = nxt
            end = seg["to_wall_ms"] if seg["to_wall_ms"] is not None else self.last_wall
            seg["duration_ms"] = end - seg["from_wall_ms"] if end is not None else None
        by_gen = {r["generation"]: r for r in self.rounds if r["generation"] is not None}
        for seg in self.owners:
            r = by_gen.get(seg["generation"])
            seg["protocol"] = r["protocol"] if r else seg["protocol"]
        owners = [{k: v for k, v in s.items() if not k.startswith("_")} for s in self.owners]
        return owners, self.rounds


def fold_ownership(group: str, records, closes: dict | None = None) -> tuple[list[dict], list[dict]]:
    """(partition_owners rows, rounds) of one classic group from its records (any order); `closes`:
    connection id -> wall_ms of its close."""
    f = ClassicOwnership(group, closes)
    for rec in sorted(records, key=lambda r: (r.get("ts_ns") or 0)):
        f.add(rec)
    return f.finish()
