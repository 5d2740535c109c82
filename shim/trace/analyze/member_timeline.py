"""Member timelines of share groups (KIP-932) and streams groups (KIP-1071), folded from their
heartbeats in time order (pure Python: Spark runs it once per group in heartbeats.py, the tests run
it directly).

These groups have no generations: each member moves through member epochs on its own, as its
heartbeat responses tell it (Kafka's ShareGroupHeartbeatResponse / StreamsGroupHeartbeatResponse).
Input: one group's ShareGroupHeartbeat or StreamsGroupHeartbeat frames as the client sent them and
as they came back to it (`client->kshim`, `kshim->client`; kshim carries them to the broker's
coordinator), request and answer paired by (connection, correlation id). Read from them:

  join      a request with member epoch 0 (KIP-848's JOIN_GROUP_MEMBER_EPOCH, which KIP-932 and
            KIP-1071 keep); `first_seen` when the trace starts after the member joined
  epoch     the epoch in each successful answer
  assignment  a non-null assignment in an answer replaces the member's assignment (null means
            unchanged): share groups' topic-partitions (topic ids named from the trace's Metadata
            answers), streams groups' active, standby and warmup tasks as "subtopology_partition"
            (Kafka Streams' TaskId form)
  leave     a request with epoch -1 (LEAVE_GROUP_MEMBER_EPOCH), or -2 for a streams member with an
            instance id (LEAVE_GROUP_STATIC_MEMBER_EPOCH)
  fenced    an answer FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID (the client rejoins with epoch 0);
            `error` for any other error code; `status` when a streams answer's status list changes
            (e.g. ASSIGNMENT_DELAYED set, then cleared)

Output (`fold_heartbeats`): `timeline`, one row per answer that changed something (and per leave,
fence, error), `members`, one row per member, and `segments`, one row per (member, epoch) span
with its assignment (the report's lanes).
"""

from __future__ import annotations

from kcodec.protocol import Error, error_name

from .timeline import _body as body_of

C2K, K2C = "client->kshim", "kshim->client"
LEAVE_EPOCH, STATIC_LEAVE_EPOCH, JOIN_EPOCH = -1, -2, 0
FENCED = frozenset({int(Error.FENCED_MEMBER_EPOCH), int(Error.UNKNOWN_MEMBER_ID)})
# StreamsGroupHeartbeatResponse.json, the Status struct's codes
STREAMS_STATUS = {0: "STALE_TOPOLOGY", 1: "MISSING_SOURCE_TOPICS", 2: "INCORRECTLY_PARTITIONED_TOPICS",
                  3: "MISSING_INTERNAL_TOPICS", 4: "SHUTDOWN_APPLICATION", 5: "ASSIGNMENT_DELAYED"}
TASK_KINDS = (("activeTasks", "active_tasks"), ("standbyTasks", "standby_tasks"), ("warmupTasks", "warmup_tasks"))


def share_partitions(assignment: dict, names: dict[str, str]) -> list[str]:
    """"topic-partition" of a ShareGroupHeartbeat assignment (topic ids named where known)."""
    return sorted(f"{names.get(t.get('topicId'), t.get('topicId'))}-{p}"
                  for t in assignment.get("topicPartitions") or () for p in t.get("partitions") or ())


def tasks(task_ids) -> list[str]:
    return sorted(f"{t.get('subtopologyId')}_{p}" for t in task_ids or () for p in t.get("partitions") or ())


class MemberFold:
    def __init__(self, group: str, group_type: str, names: dict[str, str] | None = None):
        self.group, self.type, self.names = group, group_type, names or {}
        self.timeline: list[dict] = []
        self.segments: list[dict] = []
        self.members: dict[str, dict] = {}
        self.open: dict[str, dict] = {}        # member -> its open segment
        self.pending: dict[tuple, dict] = {}    # (conn, corr) -> request facts

    def _member(self, mid: str, rec) -> dict:
        m = self.members.get(mid)
        if m is None:
            m = self.members[mid] = {
                "group": self.group, "group_type": self.type, "member": mid, "instance": None,
                "client_id": rec.get("client_id"), "first_wall_ms": rec.get("wall_ms"), "joined_wall_ms": None,
                "left_wall_ms": None, "heartbeats": 0, "joins": 0, "epochs": [], "last_epoch": None,
                "fenced": 0, "errors": [], "end": None, "heartbeat_interval_ms": None,
                "heartbeat_gap_max_ms": None, "_last_ts": None, "_assign": {}, "_status": None}
        return m

    def _row(self, rec, m: dict, kind: str, epoch, detail=None) -> None:
        row = {"group": self.group, "group_type": self.type, "member": m["member"], "instance": m["instance"],
               "wall_ms": rec.get("wall_ms"), "ts_ns": rec.get("ts_ns"), "kind": kind, "epoch": epoch,
               "detail": detail}
        row.update(self._assignment_columns(m["_assign"]))
        self.timeline.append(row)

    def _assignment_columns(self, assign: dict) -> dict:
        if self.type == "share":
            return {"assignment": assign.get("assignment")}
        return {col: assign.get(col) for _, col in TASK_KINDS}

    def _no_assignment(self) -> dict:
        return {"assignment": []} if self.type == "share" else {col: [] for _, col in TASK_KINDS}

    def _close(self, mid: str, rec) -> None:
        seg = self.open.pop(mid, None)
        if seg is not None:
            seg["to_wall_ms"] = rec.get("wall_ms")

    def _segment(self, rec, m: dict, epoch) -> None:
        self._close(m["member"], rec)
        a = m["_assign"]
        parts = a.get("assignment") if self.type == "share" else \
            [f"{col.split('_')[0]} {t}" for _, col in TASK_KINDS for t in a.get(col) or ()]
        seg = {"group": self.group, "group_type": self.type, "member": m["member"], "instance": m["instance"],
               "epoch": epoch, "from_wall_ms": rec.get("wall_ms"), "to_wall_ms": None,
               "assignment": parts, "leader": False}
        self.segments.append(seg)
        self.open[m["member"]] = seg

    # ------------------------------------------------------------------ records
    def add(self, rec) -> None:
        if rec.get("type") != "frame":
            return
        key = (rec.get("conn"), rec.get("corr"))
        if rec.get("dir") == C2K:
            self._request(rec, key)
        elif rec.get("dir") == K2C:
            self._response(rec, self.pending.pop(key, None))

    def _request(self, rec, key) -> None:
        body = body_of(rec)
        mid = body.get("memberId") or rec.get("member")
        epoch = body.get("memberEpoch")
        self.pending[key] = {"member": mid, "epoch": epoch, "instance": body.get("instanceId"), "rec": rec}
        if not mid:
            return
        m = self._member(mid, rec)
        m["heartbeats"] += 1
        if body.get("instanceId"):
            m["instance"] = body["instanceId"]
        ts = rec.get("ts_ns")
        if m["_last_ts"] is not None and ts is not None:
            gap = round((ts - m["_last_ts"]) / 1e6, 1)
            m["heartbeat_gap_max_ms"] = max(m["heartbeat_gap_max_ms"] or 0, gap)
        m["_last_ts"] = ts

    def _response(self, rec, req: dict | None) -> None:
        body = body_of(rec)
        mid = body.get("memberId") or (req or {}).get("member") or rec.get("member")
        if not mid:
            return
        m = self._member(mid, rec)
        sent = (req or {}).get("epoch")
        error = body.get("errorCode") or 0
        epoch = body.get("memberEpoch")
        if error:
            name = error_name(error)
            if error in FENCED:      # the client gives up its assignment and rejoins with epoch 0
                m["_assign"] = self._no_assignment()
                m["fenced"] += 1
                m["end"] = "fenced"
                self._row(rec, m, "fenced", sent, f"{name}; sent epoch {sent}")
            else:
                m["errors"].append(name)
                m["end"] = f"error {name}"
                self._row(rec, m, "error", sent, f"{name}: {body.get('errorMessage') or ''}".rstrip(": "))
            self._close(mid, rec)
            return
        if sent in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            m["left_wall_ms"], m["end"], m["last_epoch"] = rec.get("wall_ms"), "left", epoch
            m["_assign"] = self._no_assignment()
            self._row(rec, m, "left", epoch, "static leave (epoch -2)" if sent == STATIC_LEAVE_EPOCH else None)
            self._close(mid, rec)
            return
        changed = self._assign(body)
        assign_changed = any(m["_assign"].get(k) != v for k, v in changed.items())
        m["_assign"].update(changed)
        if sent == JOIN_EPOCH or m["joined_wall_ms"] is None and m["last_epoch"] is None:
            kind = "joined" if sent == JOIN_EPOCH else "first_seen"
            if sent == JOIN_EPOCH:
                m["joins"] += 1
                m["joined_wall_ms"] = m["joined_wall_ms"] or rec.get("wall_ms")
            m["end"] = None
        elif epoch != m["last_epoch"]:
            kind = "epoch"
        elif assign_changed:
            kind = "assignment"
        else:
            kind = None
        if body.get("heartbeatIntervalMs") is not None:
            m["heartbeat_interval_ms"] = body["heartbeatIntervalMs"]
        statuses = [f"{STREAMS_STATUS.get(s.get('statusCode'), s.get('statusCode'))}: {s.get('statusDetail')}"
                    for s in body.get("status") or ()]
        status = "; ".join(statuses) or None
        status_changed, m["_status"] = status != m["_status"], status
        if kind is not None:
            if epoch not in m["epochs"]:
                m["epochs"].append(epoch)
            m["last_epoch"] = epoch
            self._row(rec, m, kind, epoch, status)
            self._segment(rec, m, epoch)
        elif status_changed:        # a streams status set or cleared (repeated ones are not rows)
            self._row(rec, m, "status", epoch, status or "status cleared")

    def _assign(self, body: dict) -> dict:
        """The assignment columns this answer sets (a null assignment leaves them unchanged)."""
        if self.type == "share":
            a = body.get("assignment")
            return {} if a is None else {"assignment": share_partitions(a, self.names)}
        return {col: tasks(body[key]) for key, col in TASK_KINDS if body.get(key) is not None}

    def finish(self) -> tuple[list[dict], list[dict], list[dict]]:
        members = []
        for m in self.members.values():
            row = {k: v for k, v in m.items() if not k.startswith("_")}
            row.update(self._assignment_columns(m["_assign"]))
            members.append(row)
        return self.timeline, members, self.segments


def fold_heartbeats(group: str, group_type: str, records, names: dict[str, str] | None = None):
    """(timeline, members, segments) of one share ("share") or streams ("streams") group."""
    f = MemberFold(group, group_type, names)
    for rec in sorted(records, key=lambda r: (r.get("ts_ns") or 0)):
        f.add(rec)
    return f.finish()
