"""Why each rebalance happened: one group's records folded in time order into `causes` rows
(partition_tables.CAUSE_COLUMNS), a chain per rebalance (pure Python; partitions.py runs it per group).

Classic groups: a chain starts at the coordinator's `rebalance` event (its reason, as kshim's
coordinator words it after Kafka's ClassicGroup: "adding new member M ...; client reason: R",
"updating metadata for member M; client reason: R", "N member(s) left the group", "removing member
M on session timeout expired", "members failed to sync within the rebalance timeout", ...) and runs
until the `generation` event; further reasons and removals inside the round are later rows of the
same chain. Each row names the member and links the frame behind it (conn, corr, ts_ns of the
JoinGroup / LeaveGroup request carrying the KIP-800 reason, or the member's last Heartbeat for a
session timeout). A LeaveGroup whose reason is the Java consumer's "consumer poll timeout has
expired." (AbstractCoordinator.maybeLeaveGroup) is `poll_interval_exceeded`; a rejoin reason
"cached metadata has changed" / "subscription has changed" (ConsumerCoordinator.rejoinNeededOrPending)
is `metadata_change` / `subscription_change`.

KIP-848 consumer groups: a chain per `group_epoch` event (kshim's reasons after
GroupMetadataManager: "member M subscription changed" - `joined` when M's heartbeat had epoch 0 -,
"member M removed: R" - the member left (epoch -1), session timeout, rebalance timeout -, "metadata
changed", "regular expressions resolved: ..."), linked to M's ConsumerGroupHeartbeat request.

A static member replaced without a rebalance (classic `static_member_replaced`) gets its own chain
(`static_cause_id`): it ends its partitions' ownership, so their gaps point at it.
"""

from __future__ import annotations

import re

from .load import CONSUMER_GROUP_HEARTBEAT, JOIN_GROUP, LEAVE_GROUP
from .ownership import POLL_TIMEOUT_REASON, remember_identity
from .partition_tables import CAUSE_COLUMNS, cause_id, row, static_cause_id
from .timeline import C2K, _body

# kshim's wording, and a broker's own (its server.log, read by `kshim trace import --broker-log`: capitals,
# instance ids as null / Some(i), Kafka 3.9's Scala coordinator)
_NEW = re.compile(r"adding new member (\S+) with group instance id (\S+?)(?:; client reason: (.*))?$", re.I)
_UPDATE = re.compile(r"(?:(?:leader )?updating metadata for member (\S+?)(?: during \w+)?|leader (\S+) re-joining "
                     r"group during \w+|member (\S+) is joining group during \w+); client reason: (.*)$", re.I)
_STATIC = re.compile(r"updating metadata for static member (\S+) with instance id (\S+)", re.I)
_REMOVING = re.compile(r"removing member (\S+) on (.*)$", re.I)
LATE_FRAME_NS = 2_000_000     # a broker log's stamps are whole milliseconds
_LEAVE_REQUEST = re.compile(r"explicit `LeaveGroup` request for \((.*?)\)", re.I)
_SUBSCRIPTION = re.compile(r"(?:\w+ )?member (\S+) subscription changed")
_REMOVED = re.compile(r"member (\S+) removed: (.*)$")


def _instance(text: str | None) -> str | None:
    """An instance id as kshim or a broker's log words it: None / null / Some(i) / i."""
    if text is None or text in ("None", "null"):
        return None
    return text[5:-1] if text.startswith("Some(") and text.endswith(")") else text


def rejoin_kind(reason: str | None) -> str:
    r = (reason or "").lower()
    if "metadata has changed" in r:
        return "metadata_change"
    if "subscription has changed" in r or "subscription changed" in r:
        return "subscription_change"
    return "rejoined"


def removal_kind(reason: str | None) -> str:
    r = (reason or "").lower()
    if "session timeout" in r or "heartbeat expiration" in r or "session expired" in r:
        return "session_timeout"
    if "left the group" in r or "left the consumer group" in r or "leavegroup" in r:
        return "left"
    if "rebalance timeout" in r or "failed to transition from epoch" in r:
        return "rebalance_timeout"
    if "sync" in r:
        return "sync_timeout"
    return "removed"


class CauseFold:
    def __init__(self, group: str):
        self.group = group
        self.chains: list[dict] = []        # {"generation", "start_wall_ms", "rows", "type"}
        self.chain: dict | None = None      # the classic round being formed
        self.joins: dict[str, dict] = {}    # member id / instance -> its last JoinGroup request
        self.leaves: dict[str, dict] = {}   # member id -> its last LeaveGroup request (and reason)
        self.beats: dict[str, dict] = {}    # member id -> its last request (mostly heartbeats)
        self.epoch0: set[str] = set()       # KIP-848 members whose last heartbeat had epoch 0
        self.session_ms: dict[str, int] = {}
        self.instance: dict[str, str] = {}
        self.client: dict[str, str] = {}
        self.generation = None              # the classic generation in force
        self.epoch = None                   # the KIP-848 group epoch in force
        self.awaiting_leave: dict[str, tuple] = {}   # member -> (cause row, ts_ns): a broker log's leave
                                            # reason folded before the LeaveGroup frame it names
        self.source = "coordinator"         # the source of the event being folded (an imported capture's
                                            # events are "inferred" or "broker_log"; the coordinator's
                                            # records' "records")
        self.recorded: list[tuple] = []     # records' events since the last generation / group epoch
        self.logged_leaves: dict[str, dict] = {}   # member id -> a broker log's member_left (its client reason)

    # ------------------------------------------------------------------ rows
    def _row(self, chain: dict, rec, kind: str, member=None, reason=None, detail=None, frame=None, **extra) -> None:
        inst = self.instance.get(member) if member else None
        link = frame or {}
        chain["rows"].append(row(
            CAUSE_COLUMNS, group=self.group, group_type=chain["type"], seq=len(chain["rows"]),
            wall_ms=rec.get("wall_ms"), kind=kind, member=member, instance=inst,
            client_id=self.client.get(member) if member else None, reason=reason, detail=detail, source=self.source,
            conn=link.get("conn"), corr=link.get("corr"), ts_ns=link.get("ts_ns"), **extra))

    def _chain(self, rec, kind: str, generation=None) -> dict:
        chain = {"type": kind, "generation": generation, "start_wall_ms": rec.get("wall_ms"), "rows": [], "id": None}
        self.chains.append(chain)
        return chain

    @staticmethod
    def _frame(rec) -> dict:
        return {"conn": rec.get("conn"), "corr": rec.get("corr"), "ts_ns": rec.get("ts_ns"),
                "wall_ms": rec.get("wall_ms"), "client_id": rec.get("client_id")}

    # ------------------------------------------------------------------ records
    def add(self, rec) -> None:
        if rec.get("type") == "event":
            return self._event(rec, _body(rec))
        if rec.get("dir") != C2K:
            return
        api, body = rec.get("api_key"), _body(rec)
        mid = body.get("memberId") or rec.get("member")
        inst = body.get("groupInstanceId") or body.get("instanceId") or rec.get("instance")
        remember_identity(self.instance, self.client, mid, inst, rec.get("client_id"))
        if api == JOIN_GROUP:
            info = {**self._frame(rec), "reason": body.get("reason")}
            for k in (mid, inst):
                if k:
                    self.joins[k] = info
            if not mid:
                self.joins[f"conn{rec.get('conn')}"] = info
            if (mid or inst) and body.get("sessionTimeoutMs"):
                self.session_ms[mid or inst] = body["sessionTimeoutMs"]
        elif api == LEAVE_GROUP:
            for m in body.get("members") or [{"memberId": body.get("memberId")}]:
                if m.get("memberId"):
                    lv = self.leaves[m["memberId"]] = {**self._frame(rec), "reason": m.get("reason")}
                    self._late_leave(m["memberId"], lv)
        if mid:     # its last request: a heartbeat, or any group request (a member may die before its first)
            self.beats[mid] = self._frame(rec)
        if api == CONSUMER_GROUP_HEARTBEAT and mid:
            (self.epoch0.add if body.get("memberEpoch") == 0 else self.epoch0.discard)(mid)
            if body.get("memberEpoch") in (-1, -2):
                self.leaves[mid] = {**self._frame(rec), "reason": None}

    def _event(self, rec, body: dict) -> None:
        kind, mid = rec.get("event"), body.get("member")
        self.source = body.get("source") or "coordinator"
        remember_identity(self.instance, self.client, mid, body.get("instance"), body.get("client_id"))
        if self.source == "records":
            return self._recorded(rec, kind, mid, body)
        if kind == "member_left" and mid and self.source == "broker_log":
            self.logged_leaves[mid] = {"reason": body.get("reason"), "ts_ns": rec.get("ts_ns")}
        if kind == "rebalance":
            if self.chain is None:
                self.chain = self._chain(rec, "classic")
            self._classic_reason(rec, body.get("reason") or "")
        elif kind == "generation":
            chain = self.chain or self._chain(rec, "classic")
            chain["generation"] = self.generation = body.get("generation")
            self.chain = None
        elif kind == "member_removed" and self.chain is not None and body.get("reason") in (
                "did not rejoin", "did not sync in time"):
            self._row(self.chain, rec, "removed", mid, reason=body.get("reason"), frame=self.beats.get(mid))
        elif kind == "static_member_replaced":     # classic: member / old_member; KIP-848: new / old
            new, old = mid or body.get("new"), body.get("old_member") or body.get("old")
            classic = "old_member" in body
            chain = self._chain(rec, "classic" if classic else "consumer", self.generation if classic else self.epoch)
            chain["id"] = static_cause_id(self.group, rec.get("wall_ms"))
            j = (self.joins.get(body.get("instance")) if classic else self.beats.get(new)) or {}
            remember_identity(self.instance, self.client, new, body.get("instance"), j.get("client_id"))
            self._row(chain, rec, "static_replaced", new, reason=j.get("reason") or body.get("reason"),
                      detail=f"old member {old}; no rebalance", frame=j)
        elif kind == "group_epoch":
            self.recorded = []          # (the records' changes: the log's bump names its own reason)
            chain = self._chain(rec, "consumer", body.get("epoch"))
            self.epoch = body.get("epoch")
            self._consumer_reason(chain, rec, body.get("reason") or "")

    def _recorded(self, rec, kind: str, mid, body: dict) -> None:
        """Events from the coordinator's records (`kshim trace import --consumer-offsets`): the joins,
        removals and changes written since the last generation / group epoch are the next one's causes
        (inferred: the records say what changed, not why the coordinator rebalanced)."""
        if kind in ("member_joined", "member_removed", "subscription_changed", "regex_resolved"):
            self.recorded.append((rec, {"member_joined": "joined", "member_removed": "removed",
                                        "subscription_changed": "subscription_change",
                                        "regex_resolved": "regex_change"}[kind], mid, body))
            return
        if kind == "static_member_replaced" and body.get("in_rebalance"):    # one of a rebalance's causes
            self.recorded.append((rec, "static_replaced", mid, body))
            return
        if kind == "static_member_replaced":     # a chain of its own (no rebalance), as kshim's
            classic = body.get("generation") is not None
            chain = self._chain(rec, "classic" if classic else "consumer",
                                body.get("generation") if classic else body.get("epoch"))
            chain["id"] = static_cause_id(self.group, rec.get("wall_ms"))
            self._row(chain, rec, "static_replaced", mid, reason=body.get("reason"),
                      detail=f"old member {body.get('old_member')}; no rebalance")
            return
        if kind not in ("generation", "group_epoch"):
            return
        number = body.get("generation") if kind == "generation" else body.get("epoch")
        if kind == "generation":
            self.generation = number
        else:
            self.epoch = number
        if body.get("in_force"):
            self.recorded = []
            return
        if kind == "generation" and self.chain is not None:     # opened by the broker's log (its reason)
            chain, self.chain = self.chain, None
            chain["generation"] = number
            if chain["rows"]:
                self.recorded = []
                return
        else:
            chain = self._chain(rec, "classic" if kind == "generation" else "consumer", number)
        for r, k, m, b in self.recorded:
            self._row(chain, r, k, m, reason=b.get("reason"),
                      detail=b.get("regex") or (f"old member {b.get('old_member')}" if b.get("old_member") else None))
        if not self.recorded:
            self._row(chain, rec, "coordinator", reason=body.get("reason") or "cause not in the records")
        self.recorded = []

    def _classic_reason(self, rec, reason: str) -> None:
        chain = self.chain
        m = _NEW.search(reason)
        if m:
            mid, inst, client = m.group(1), _instance(m.group(2)), m.group(3)
            j = self.joins.get(mid) or (self.joins.get(inst) if inst else None) or {}
            return self._row(chain, rec, "joined", mid, reason=client, detail=reason, frame=j)
        m = _STATIC.search(reason)
        if m:
            mid = m.group(1)
            return self._row(chain, rec, "static_replaced", mid, detail=reason, frame=self.joins.get(mid))
        m = _UPDATE.search(reason)
        if m:
            mid, client = m.group(1) or m.group(2) or m.group(3), m.group(4)
            return self._row(chain, rec, rejoin_kind(client), mid, reason=client, detail=reason,
                             frame=self.joins.get(mid))
        m = _REMOVING.search(reason)
        if m:
            mid, why = m.group(1), m.group(2)
            return self._timeout_row(chain, rec, removal_kind(why), mid, why, reason)
        m = _LEAVE_REQUEST.search(reason)      # a broker's "explicit `LeaveGroup` request for (M1, M2)"
        if m:
            for mid in (x.strip() for x in m.group(1).split(",")):
                lv = self.leaves.get(mid)
                if lv is not None:
                    lv["_used"] = True
                # without the frame (no capture): the reason the broker logged for the leave
                said = (lv or self.logged_leaves.get(mid) or {}).get("reason")
                kind = "poll_interval_exceeded" if POLL_TIMEOUT_REASON in (said or "") else "left"
                self._row(chain, rec, kind, mid, reason=said, detail=reason, frame=lv)
                if lv is None:  # a log line stamped to the millisecond may sort before its request's frame
                    self.awaiting_leave[mid] = (chain["rows"][-1], rec.get("ts_ns") or 0)
            return
        if "left the group" in reason:
            t = rec.get("ts_ns") or 0
            recent = [(mid, lv) for mid, lv in self.leaves.items() if lv["ts_ns"] is not None
                      and 0 <= t - lv["ts_ns"] <= 1_000_000_000 and not lv.get("_used")]
            for mid, lv in sorted(recent, key=lambda x: x[1]["ts_ns"]):
                lv["_used"] = True
                kind = "poll_interval_exceeded" if POLL_TIMEOUT_REASON in (lv["reason"] or "") else "left"
                self._row(chain, rec, kind, mid, reason=lv["reason"], detail=reason, frame=lv)
            if recent:
                return
        self._row(chain, rec, "sync_timeout" if "failed to sync" in reason else "coordinator", reason=reason)

    def _late_leave(self, mid: str, lv: dict) -> None:
        """A LeaveGroup frame just after the broker's log line about it (the line's millisecond stamp
        put it first): the row gets the request's reason, kind and link."""
        waiting = self.awaiting_leave.pop(mid, None)
        if waiting is None or not 0 <= (lv["ts_ns"] or 0) - waiting[1] <= LATE_FRAME_NS:
            return
        r = waiting[0]
        lv["_used"] = True
        r["kind"] = "poll_interval_exceeded" if POLL_TIMEOUT_REASON in (lv.get("reason") or "") else "left"
        r.update(reason=lv.get("reason"), conn=lv.get("conn"), corr=lv.get("corr"), ts_ns=lv.get("ts_ns"))

    def _timeout_row(self, chain, rec, kind, mid, why, detail) -> None:
        beat = self.beats.get(mid) or {}
        extra = {}
        if kind == "session_timeout":
            timeout = self.session_ms.get(mid, self.session_ms.get(self.instance.get(mid)))
            extra = {"last_heartbeat_wall_ms": beat.get("wall_ms"), "timeout_ms": timeout}
        frame = self.leaves.get(mid) if kind == "left" else beat
        self._row(chain, rec, kind, mid, reason=why, detail=detail, frame=frame, **extra)

    def _consumer_reason(self, chain: dict, rec, reason: str) -> None:
        m = _SUBSCRIPTION.search(reason)
        if m:
            mid = m.group(1)
            kind = "joined" if mid in self.epoch0 else "subscription_change"
            return self._row(chain, rec, kind, mid, detail=reason, frame=self.beats.get(mid))
        m = _REMOVED.search(reason)
        if m:
            mid, why = m.group(1), m.group(2)
            return self._timeout_row(chain, rec, removal_kind(why), mid, why, reason)
        if reason.startswith("metadata changed"):
            return self._row(chain, rec, "metadata_change", detail=reason)
        if reason.startswith("regular expressions resolved"):
            return self._row(chain, rec, "regex_change", detail=reason)
        self._row(chain, rec, "coordinator", reason=reason)

    def finish(self) -> list[dict]:
        out = []
        for chain in self.chains:
            cid = chain["id"] or cause_id(self.group, chain["generation"], chain["start_wall_ms"])
            for r in chain["rows"]:
                r["cause_id"], r["generation"] = cid, chain["generation"]
                out.append(r)
        return out


def fold_causes(group: str, records) -> list[dict]:
    """`causes` rows of one group (classic and KIP-848) from its records (any order)."""
    f = CauseFold(group)
    for rec in sorted(records, key=lambda r: (r.get("ts_ns") or 0)):
        f.add(rec)
    return f.finish()
