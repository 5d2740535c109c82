"""The group coordinator's events inferred from a capture's frames alone (a capture has no `event`
records: kshim's coordinator was not in the path).

What the frames tell, per group, in time order (the rules follow Kafka's ClassicGroup /
GroupMetadataManager as seen from the wire):

Classic groups
- a new generation: the first JoinGroup answer carrying a generation id above the one in force
  (`generation`; members from the leader's answer, which lists them);
- a rebalance's start and cause: the first trigger after the generation in force formed: a JoinGroup
  of a new member ("adding new member M ..."), of a known member ("updating metadata for member M"),
  a LeaveGroup ("N member(s) left the group"), a member silent for longer than its session timeout
  ("removing member M on session timeout expired", at last request + session timeout); without any,
  the first REBALANCE_IN_PROGRESS answer ("cause not in the capture");
- a static member replaced without a rebalance: a JoinGroup answer at the generation in force giving
  the member's instance id a new member id;
- members of the old generation missing from the new one with no leave or timeout seen: removed,
  "did not rejoin".
KIP-848 consumer groups
- a group epoch bump: the first ConsumerGroupHeartbeat answer with a member epoch above every epoch
  seen (members reach the group epoch once reconciled; the last member's leave bumps it with nobody
  left to see it); its cause, the last join (epoch 0), leave (epoch -1/-2) or subscription change
  before it, else the member silent longest (more than three heartbeat intervals: its session expired).

Every inferred event carries `inferred: true` and `source: "inferred"` in its body, and its reason
starts with "inferred: ", so tables and the report say so.
"""

from __future__ import annotations

import json

from kcodec.protocol import ApiKey, Error

JOIN, SYNC, LEAVE = int(ApiKey.JOIN_GROUP), int(ApiKey.SYNC_GROUP), int(ApiKey.LEAVE_GROUP)
HEARTBEAT, COMMIT = int(ApiKey.HEARTBEAT), int(ApiKey.OFFSET_COMMIT)
CGH = int(ApiKey.CONSUMER_GROUP_HEARTBEAT)
WANTED = frozenset({JOIN, SYNC, LEAVE, HEARTBEAT, COMMIT, CGH})
REBALANCING = int(Error.REBALANCE_IN_PROGRESS)
MEMBER_ID_REQUIRED = int(Error.MEMBER_ID_REQUIRED)
C2B, B2C = "client->broker", "broker->client"
EVENT_OFFSET_NS = 1000


def wanted(rec: dict) -> bool:
    return rec.get("type") == "frame" and rec.get("api_key") in WANTED and rec.get("group") is not None


def _body(rec) -> dict:
    b = rec.get("body")
    if isinstance(b, str):
        try:
            return json.loads(b)
        except ValueError:
            return {}
    return b or {}


class GroupInference:
    def __init__(self, group: str):
        self.group = group
        self.out: list[dict] = []
        self.generation: int | None = None
        self.members: dict[str, str | None] = {}     # member id -> instance, of the generation in force
        self.inst_member: dict[str, str] = {}         # instance -> member id in force
        self.trigger: dict | None = None              # the first cause seen since the generation formed
        self.round_open = False
        self.gen_event: dict | None = None
        self.last_seen: dict[str, tuple] = {}         # member id -> (ts_ns, wall_ms) of its last request
        self.session_ms: dict[str, int] = {}
        self.join_reason: dict[str, str | None] = {}
        self.left: set[str] = set()
        self.timed_out: set[str] = set()
        self.joined: set[str] = set()                 # members answered for the generation in force
        self._before: dict = {}
        self.unnamed: dict[tuple, str | None] = {}    # (conn, corr) of a JoinGroup whose member id is in its answer
        # KIP-848
        self.epoch = 0
        self.cg_trigger: dict | None = None
        self.cg_members: dict[str, str | None] = {}

    # -------------------------------------------------------------- output
    def _event(self, ts_ns: int, kind: str, **fields) -> dict:
        body = {"event": kind, "group": self.group, "source": "inferred", "inferred": True,
                **{k: v for k, v in fields.items() if v is not None}}
        rec = {"type": "event", "event": kind, "group": self.group, "ts_ns": ts_ns, "wall_ms": ts_ns // 1_000_000,
               "inferred": True, "body": body}
        for k in ("member", "instance", "generation"):
            if fields.get(k) is not None:
                rec[k] = fields[k]
        self.out.append(rec)
        return rec

    # -------------------------------------------------------------- records
    def add(self, rec: dict) -> None:
        api, d, body = rec["api_key"], rec.get("dir"), _body(rec)
        # what the coordinator does on a request comes just after it, what it answers just before the
        # answer (as kshim's own coordinator events sit between the frames of its traces)
        rec = {**rec, "ts_ns": rec["ts_ns"] + (EVENT_OFFSET_NS if d == C2B else -EVENT_OFFSET_NS)}
        errors = rec.get("error_codes") or []
        if d == C2B:
            mid = body.get("memberId") or rec.get("member")
            if mid:
                self.last_seen[mid] = (rec["ts_ns"], rec.get("wall_ms"))
            if api == JOIN:
                return self._join_request(rec, body, mid)
            if api == LEAVE:
                return self._leave(rec, body)
            if api == CGH:
                return self._cg_request(rec, body, mid)
            return
        if api == JOIN:
            return self._join_response(rec, body, errors)
        if api == CGH:
            return self._cg_response(rec, body, errors)
        if api == LEAVE and not errors and self.members and set(self.members) <= self.left | self.timed_out:
            # the generation's last member left: the group goes empty with a generation of its own
            # (ClassicGroup: the join completes at once with no member)
            if not self.round_open:
                self._start_round(rec["ts_ns"])
            return self._generation(rec["ts_ns"], (self.generation or 0) + 1, [], None, None)
        if REBALANCING in errors and not self.round_open:
            self._start_round(rec["ts_ns"])

    def _set_trigger(self, ts_ns: int, reason: str, **fields) -> None:
        if self.trigger is None and not self.round_open:
            self.trigger = {"ts_ns": ts_ns, "reason": reason, **fields}

    def _join_request(self, rec, body, mid) -> None:
        inst = body.get("groupInstanceId")
        reason = body.get("reason")
        if body.get("sessionTimeoutMs"):
            for k in (mid, inst):
                if k:
                    self.session_ms[k] = body["sessionTimeoutMs"]
        if not mid:
            if rec.get("api_version", 0) >= 4 and not inst:
                return      # the first try of a new member: the broker answers MEMBER_ID_REQUIRED (v4+)
            # a new static member (or a JoinGroup before v4): added at once; its id comes in the answer
            self.unnamed[(rec.get("conn"), rec.get("corr"))] = inst
            if inst in self.inst_member:     # a known static member: replaced without a rebalance if unchanged
                self._set_trigger(rec["ts_ns"], f"inferred: updating metadata for static member {{member}} with "
                                                f"instance id {inst}", instance=inst)
                return
            self._set_trigger(rec["ts_ns"], f"inferred: adding new member {{member}} with group instance id {inst}"
                                            f"; client reason: {reason or 'not provided'}", instance=inst, unnamed=True)
            if self.trigger is not None and self.trigger.get("unnamed") and self.members:
                self._start_round(rec["ts_ns"])
            return
        self.join_reason[mid] = reason
        client = f"; client reason: {reason or 'not provided'}"
        if mid in self.members:
            self._set_trigger(rec["ts_ns"], f"inferred: updating metadata for member {mid}{client}", member=mid)
        elif inst and inst in self.inst_member:
            self._set_trigger(rec["ts_ns"], f"inferred: updating metadata for static member {mid} with instance id {inst}",
                              member=mid, instance=inst, static=True)
        else:
            self._set_trigger(rec["ts_ns"], f"inferred: adding new member {mid} with group instance id {inst}{client}",
                              member=mid, instance=inst)
            if self.members and not self.round_open:   # a new member rebalances a formed group at once
                self._start_round(rec["ts_ns"])

    def _leave(self, rec, body) -> None:
        leaving = body.get("members") or [{"memberId": body.get("memberId")}]
        for m in leaving:
            mid, inst = m.get("memberId"), m.get("groupInstanceId")
            if not mid and inst:
                mid = self.inst_member.get(inst)
            if not mid:
                continue
            self.left.add(mid)
            self._event(rec["ts_ns"], "member_left", member=mid, instance=inst or self.members.get(mid),
                        reason=f"inferred: {m.get('reason') or 'not provided'}")
        self._set_trigger(rec["ts_ns"], f"inferred: {len(leaving)} member(s) left the group")
        if self.members and not self.round_open and any(m in self.members for m in self.left):
            self._start_round(rec["ts_ns"])          # a member of the generation left: rebalanced at once

    def _expired(self, now_ns: int) -> tuple[int, str] | None:
        """The member of the generation in force whose session expired last before `now_ns`."""
        best = None
        for mid in self.members:
            seen = self.last_seen.get(mid)
            timeout = self.session_ms.get(mid) or self.session_ms.get(self.members.get(mid) or "")
            if seen is None or not timeout or mid in self.left:
                continue
            at = seen[0] + timeout * 1_000_000
            if at <= now_ns and (best is None or at > best[0]):
                best = (at, mid)
        return best

    def _start_round(self, now_ns: int) -> None:
        t = self.trigger
        expired = self._expired(now_ns)
        if expired is not None and (t is None or expired[0] < t["ts_ns"]):
            at, mid = expired
            inst = self.members.get(mid)
            self.timed_out.add(mid)
            self._event(at, "session_timeout", member=mid, instance=inst)
            self._event(at, "member_removed", member=mid, instance=inst,
                        reason="inferred: session timeout expired")
            t = {"ts_ns": at, "reason": f"inferred: removing member {mid} on session timeout expired", "member": mid}
        if t is None:
            t = {"ts_ns": now_ns, "reason": "inferred: rebalance in progress (cause not in the capture)"}
        self._event(t["ts_ns"], "rebalance", reason=t["reason"], generation=self.generation,
                    member=t.get("member"), instance=t.get("instance"))
        self.round_open = True
        self.trigger = None

    def _join_response(self, rec, body, errors) -> None:
        gen, mid = body.get("generationId"), body.get("memberId")
        if (rec.get("conn"), rec.get("corr")) in self.unnamed and mid:
            self.unnamed.pop((rec.get("conn"), rec.get("corr")))
            for ev in reversed(self.out):
                if ev["event"] == "rebalance" and "{member}" in (ev["body"].get("reason") or ""):
                    ev["body"]["reason"] = ev["body"]["reason"].replace("{member}", mid)
                    ev["body"]["member"] = ev["member"] = mid
                    break
            if self.trigger is not None and "{member}" in self.trigger["reason"]:
                self.trigger["reason"] = self.trigger["reason"].replace("{member}", mid)
                self.trigger["member"] = mid
        if errors or gen is None or gen < 0:
            if REBALANCING in errors and not self.round_open:
                self._start_round(rec["ts_ns"])
            return
        if self.generation is not None and gen == self.generation:
            inst = rec.get("instance")
            old = self.inst_member.get(inst) if inst else None
            if inst and old and old != mid:      # a static member's new id, no rebalance
                self._event(rec["ts_ns"], "static_member_replaced", instance=inst, old_member=old, member=mid)
                self._event(rec["ts_ns"], "static_rejoin_without_rebalance", instance=inst, member=mid,
                            generation=gen)
                self.members.pop(old, None)
                self.members[mid] = inst
                self.inst_member[inst] = mid
                self.joined.add(mid)
                self.trigger = None
            elif mid not in self.joined:
                self._member_joined(rec, mid, inst)
            return
        if not self.round_open:
            self._start_round(self.trigger["ts_ns"] if self.trigger else rec["ts_ns"])
        listed = [(m.get("memberId"), m.get("groupInstanceId")) for m in body.get("members") or ()]
        self._generation(rec["ts_ns"], gen, listed, body.get("leader"), body.get("protocolName"))
        self._member_joined(rec, mid, rec.get("instance"))

    def _generation(self, ts_ns: int, gen: int, listed, leader, protocol) -> None:
        before = dict(self.members)
        self.gen_event = self._event(ts_ns, "generation", generation=gen, members=len(listed) if listed else 0,
                                     leader=leader, protocol=protocol)
        self.generation = gen
        self.round_open = False
        self.trigger = None
        self.members = {m: i for m, i in listed}
        self.inst_member = {i: m for m, i in listed if i}
        self._before = before
        for m, i in before.items():
            if m not in self.members and m not in self.left and m not in self.timed_out and listed:
                if not (i and i in self.inst_member):
                    self._event(ts_ns, "member_removed", member=m, instance=i, reason="did not rejoin")
        self.left.clear()
        self.timed_out.clear()
        self.joined = set()

    def _member_joined(self, rec, mid, inst) -> None:
        if not mid:
            return
        if self.gen_event is not None and rec.get("api_key") == JOIN:
            body = _body(rec)
            if body.get("leader") == mid and body.get("members"):
                self.gen_event["body"]["members"] = len(body["members"])
                for m in body["members"]:
                    self.members[m.get("memberId")] = m.get("groupInstanceId")
                    if m.get("groupInstanceId"):
                        self.inst_member[m["groupInstanceId"]] = m.get("memberId")
            self.members.setdefault(mid, inst)
            if inst:
                self.inst_member.setdefault(inst, mid)
        self.joined.add(mid)
        new = mid not in self._before
        self._event(rec["ts_ns"], "member_joined", member=mid, instance=inst, client_id=rec.get("client_id"),
                    reason=self.join_reason.get(mid), new=new)

    # -------------------------------------------------------------- KIP-848
    def _cg_request(self, rec, body, mid) -> None:
        epoch = body.get("memberEpoch")
        if epoch == 0:
            self._cg_cause(rec, f"inferred: member {mid or 'new'} subscription changed", mid)
        elif epoch in (-1, -2):
            self._cg_cause(rec, f"inferred: member {mid} removed: left the group", mid)
            self._event(rec["ts_ns"], "member_left", member=mid, instance=body.get("instanceId"),
                        reason="inferred: left the group")
        elif body.get("subscribedTopicNames") is not None or body.get("subscribedTopicRegex") is not None:
            self._cg_cause(rec, f"inferred: member {mid} subscription changed", mid, weak=True)

    def _cg_cause(self, rec, reason: str, mid, weak: bool = False) -> None:
        if self.cg_trigger is None or (self.cg_trigger.get("weak") and not weak):
            self.cg_trigger = {"ts_ns": rec["ts_ns"], "reason": reason, "member": mid, "weak": weak}

    def _cg_response(self, rec, body, errors) -> None:
        epoch, mid = body.get("memberEpoch"), body.get("memberId")
        if not errors and epoch is not None and epoch < 0 and mid in self.cg_members:
            del self.cg_members[mid]
            if not self.cg_members:       # the last member left: its removal bumps the epoch all the same
                t = self.cg_trigger or {"ts_ns": rec["ts_ns"], "reason": f"inferred: member {mid} removed: left the group",
                                        "member": mid}
                self.epoch += 1
                self._event(t["ts_ns"], "group_epoch", epoch=self.epoch, reason=t["reason"], member=t.get("member"))
                self.cg_trigger = None
            return
        if not errors and epoch and epoch > 0 and mid:
            self.cg_members[mid] = body.get("heartbeatIntervalMs") or self.cg_members.get(mid)
        if errors or epoch is None or epoch <= self.epoch:
            return
        t = self.cg_trigger
        if t is not None and "new" in t["reason"] and mid:
            t["reason"] = t["reason"].replace("member new", f"member {mid}")
            t["member"] = mid
        if t is None:
            t = self._silent_member(rec["ts_ns"]) or \
                {"ts_ns": rec["ts_ns"], "reason": "inferred: group epoch bumped (cause not in the capture)"}
        self.epoch = epoch
        self._event(t["ts_ns"], "group_epoch", epoch=epoch, reason=t["reason"], member=t.get("member"))
        self.cg_trigger = None

    def _silent_member(self, now_ns: int) -> dict | None:
        """A bump with no join, leave or subscription change before it: the member silent longest, if
        silent for more than three of its heartbeat intervals, was removed when its session expired
        (the session timeout is a broker setting, not on the wire: seen at this answer)."""
        silent = []
        for mid, interval in self.cg_members.items():
            seen = self.last_seen.get(mid)
            if seen is not None and interval and now_ns - seen[0] > 3 * interval * 1_000_000:
                silent.append((seen[0], mid, seen[1]))
        if not silent:
            return None
        _, mid, wall = min(silent)
        del self.cg_members[mid]
        self._event(now_ns, "session_timeout", member=mid)
        return {"ts_ns": now_ns, "member": mid,
                "reason": f"inferred: member {mid} removed: the member session expired (silent since {wall})"}

    def finish(self) -> list[dict]:
        return self.out


def infer_events(records) -> list[dict]:
    """Event records for every group in `records` (the group frames of an import, any order)."""
    by_group: dict[str, list[dict]] = {}
    for r in records:
        by_group.setdefault(r["group"], []).append(r)
    out = []
    for group, recs in by_group.items():
        g = GroupInference(group)
        for r in sorted(recs, key=lambda r: r["ts_ns"]):
            g.add(r)
        out += g.finish()
    return out
