"""The group coordinator's events inferred from a capture's frames alone (a capture has no `event`
records: kshim's coordinator was not in the path).

Where knowledge starts. A capture is usually started after the trouble began: its first sight of a
group is the state in force, not a change. A Heartbeat or SyncGroup request names the generation in
force and its members (and, v3+, their instance ids); a generation is "formed" only when the capture
shows it forming: a JoinGroup answer above the generation in force, or, with none known yet, a round
the capture shows (REBALANCE_IN_PROGRESS answers, two or more members answered at that generation, the
leader's answer listing the members without KIP-814's skipAssignment). A lone static member answered
at a generation nobody formed in the capture is a static rejoin without a rebalance (its old member id
unknown). What happened before the capture is not an event.

What the frames tell, per group, in time order (the rules follow Kafka's ClassicGroup /
GroupMetadataManager as seen from the wire):

Classic groups
- a new generation: the first JoinGroup answer carrying a generation id above the one in force
  (`generation`; members from the leader's answer, which lists them);
- a rebalance's start and cause: the first trigger after the generation in force formed: a JoinGroup
  of a new member ("adding new member M ..."; a static member's only once its answer shows a new
  generation: its rejoin may replace the old member without one), of a known member ("updating
  metadata for member M"), a LeaveGroup ("N member(s) left the group"), a member silent for longer than
  its session timeout ("removing member M on session timeout expired", at last request + session
  timeout; with no session timeout in the capture, the member silent longest, past three heartbeat
  intervals, is the suspect, named with its last request and its connection's end); without any, the
  first REBALANCE_IN_PROGRESS answer ("cause not in the capture");
- a request the broker refused (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, ...) caused nothing: its
  events are withdrawn (the retry is the cause);
- a static member replaced without a rebalance: a JoinGroup answer at the generation in force giving
  the member's instance id a new member id;
- members of the old generation missing from the new one with no leave or timeout seen: removed,
  "did not rejoin".
KIP-848 consumer groups: infer_epochs.py.

Every inferred event carries `inferred: true` and `source: "inferred"` in its body, and its reason
starts with "inferred: ", so tables and the report say so. A generation event keeps the time of the
answer that showed it (`answer_ns`) for align.py.
"""

from __future__ import annotations

import json

from kcodec.protocol import ApiKey, Error

from . import silence
from .infer_epochs import ConsumerEpochs

JOIN, SYNC, LEAVE = int(ApiKey.JOIN_GROUP), int(ApiKey.SYNC_GROUP), int(ApiKey.LEAVE_GROUP)
HEARTBEAT, COMMIT = int(ApiKey.HEARTBEAT), int(ApiKey.OFFSET_COMMIT)
CGH = int(ApiKey.CONSUMER_GROUP_HEARTBEAT)
WANTED = frozenset({JOIN, SYNC, LEAVE, HEARTBEAT, COMMIT, CGH})
REBALANCING = int(Error.REBALANCE_IN_PROGRESS)
MEMBER_ID_REQUIRED = int(Error.MEMBER_ID_REQUIRED)
# answers that mean the coordinator did not act on the request (the client retries elsewhere or later)
REFUSED = frozenset(int(e) for e in (Error.NOT_COORDINATOR, Error.COORDINATOR_NOT_AVAILABLE,
                                     Error.COORDINATOR_LOAD_IN_PROGRESS, Error.GROUP_AUTHORIZATION_FAILED,
                                     Error.INVALID_REQUEST, Error.UNKNOWN_SERVER_ERROR))
C2B, B2C = "client->broker", "broker->client"
EVENT_OFFSET_NS = 1000
HOLD_NS = 500_000_000           # a first JoinGroup answer waits this long for the rest of its round


def wanted(rec: dict) -> bool:
    return (rec.get("type") == "frame" and rec.get("api_key") in WANTED and rec.get("group") is not None) \
        or rec.get("type") == "conn_close"


def _body(rec) -> dict:
    b = rec.get("body")
    if isinstance(b, str):
        try:
            return json.loads(b)
        except ValueError:
            return {}
    return b or {}


def _key(rec) -> tuple:
    return rec.get("conn"), rec.get("corr")


class GroupInference:
    def __init__(self, group: str, closes: dict | None = None):
        self.group = group
        self.closes = closes if closes is not None else {}   # conn -> ts_ns of its end (RST / last FIN)
        self.out: list[dict] = []
        self.generation: int | None = None
        self.members: dict[str, str | None] = {}     # member id -> instance, of the generation in force
        self.inst_member: dict[str, str] = {}         # instance -> member id in force
        self.trigger: dict | None = None              # the first cause seen since the generation formed
        self.round_open = False
        self.gen_event: dict | None = None
        self.last_seen: dict[str, tuple] = {}         # member id -> (ts_ns, wall_ms, conn) of its last request
        self.join_asked: dict[tuple, int] = {}       # (conn, corr) -> ts_ns of a JoinGroup request
        self.last_beat: dict[str, int] = {}           # member id -> ts_ns of its last heartbeat
        self.beat_gap: dict[str, int] = {}            # member id -> ns between its last two heartbeats
        self.session_ms: dict[str, int] = {}
        self.join_reason: dict[str, str | None] = {}
        self.left: set[str] = set()
        self.timed_out: set[str] = set()
        self.joined: set[str] = set()                 # members answered for the generation in force
        self.pending_ids: set[str] = set()            # new dynamic members' ids (MEMBER_ID_REQUIRED answers)
        self._before: dict = {}
        self.unnamed: dict[tuple, str | None] = {}    # (conn, corr) of a JoinGroup whose member id is in its answer
        self.by_request: dict[tuple, list] = {}       # (conn, corr) -> events its request made (withdrawn if refused)
        self.held: list[dict] = []                    # first JoinGroup answers, generation in force unknown
        self.cg = ConsumerEpochs(self)

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
        if self.held and rec["ts_ns"] > self.held[0]["rec"]["ts_ns"] + HOLD_NS:
            self._release_held(formed=False)
        api, d, body = rec["api_key"], rec.get("dir"), _body(rec)
        # what the coordinator does on a request comes just after it, what it answers just before the
        # answer (as kshim's own coordinator events sit between the frames of its traces)
        rec = {**rec, "ts_ns": rec["ts_ns"] + (EVENT_OFFSET_NS if d == C2B else -EVENT_OFFSET_NS),
               "frame_ns": rec["ts_ns"]}
        errors = rec.get("error_codes") or []
        if d == C2B:
            mid = body.get("memberId") or rec.get("member")
            if mid:
                self.last_seen[mid] = (rec["ts_ns"], rec.get("wall_ms"), rec.get("conn"))
            if api == JOIN:
                return self._join_request(rec, body, mid)
            if api == LEAVE:
                return self._leave(rec, body)
            if api == CGH:
                return self.cg.request(rec, body, mid)
            if api in (HEARTBEAT, SYNC):
                return self._in_force(rec, body, mid)
            return
        if errors and REFUSED.intersection(errors):
            return self._refused(rec)
        if api == JOIN:
            return self._join_response(rec, body, errors)
        if api == CGH:
            return self.cg.response(rec, body, errors)
        if api == LEAVE and not errors and self.members and set(self.members) <= self.left | self.timed_out:
            # the generation's last member left: the group goes empty with a generation of its own
            # (ClassicGroup: the join completes at once with no member)
            if not self.round_open:
                self._start_round(rec["ts_ns"])
            return self._generation(rec["ts_ns"], (self.generation or 0) + 1, [], None, None)
        if REBALANCING in errors and not self.round_open:
            if self.held:
                self._release_held(formed=True)
            if not self.round_open:
                self._start_round(rec["ts_ns"])

    def _refused(self, rec) -> None:
        """The coordinator did not act on the request: what it seemed to cause is withdrawn."""
        key = _key(rec)
        for ev in self.by_request.pop(key, ()):
            if ev in self.out:
                self.out.remove(ev)
                if ev["event"] == "member_left":
                    self.left.discard(ev.get("member"))
        if self.trigger is not None and self.trigger.get("key") == key:
            self.trigger = None
        self.unnamed.pop(key, None)
        self.cg.pending.pop(key, None)

    def _in_force(self, rec, body, mid) -> None:
        """A Heartbeat / SyncGroup request: the generation its member is in, and the member in it."""
        gen, inst = body.get("generationId"), body.get("groupInstanceId")
        if gen is None or gen < 0 or not mid:
            return
        if rec["api_key"] == HEARTBEAT:
            prev = self.last_beat.get(mid)
            if prev is not None:
                self.beat_gap[mid] = rec["ts_ns"] - prev
            self.last_beat[mid] = rec["ts_ns"]
        if self.generation is None:
            if self.held and rec["api_key"] == HEARTBEAT and gen == self.held[0]["gen"]:
                self._release_held(formed=False)
            if self.generation is None and not self.held:
                self.generation = gen             # the first sight: the generation in force
        if gen == self.generation and mid not in self.left and mid not in self.timed_out:
            if mid not in self.members or (inst and self.members.get(mid) is None):
                self.members[mid] = inst
            if inst and self.inst_member.get(inst) in (None, mid):
                self.inst_member[inst] = mid

    def _set_trigger(self, rec, reason: str, **fields) -> None:
        if self.trigger is None and not self.round_open:
            self.trigger = {"ts_ns": rec["ts_ns"], "reason": reason, "key": _key(rec), **fields}

    def _join_request(self, rec, body, mid) -> None:
        self.join_asked[_key(rec)] = rec["ts_ns"]
        if len(self.join_asked) > 256:
            del self.join_asked[next(iter(self.join_asked))]
        inst = body.get("groupInstanceId")
        reason = body.get("reason")
        if body.get("sessionTimeoutMs"):
            for k in (mid, inst):
                if k:
                    self.session_ms[k] = body["sessionTimeoutMs"]
        if not mid:
            if rec.get("api_version", 0) >= 4 and not inst:
                return      # the first try of a new member: the broker answers MEMBER_ID_REQUIRED (v4+)
            # a new static member (or a JoinGroup before v4): added at once; its id comes in the answer.
            # A static member's join starts a round only if its answer shows one: a known instance
            # rejoining is replaced without a rebalance (ClassicGroup, KIP-345)
            self.unnamed[_key(rec)] = (inst, rec["ts_ns"])
            if inst in self.inst_member:
                self._set_trigger(rec, f"inferred: updating metadata for static member {{member}} with "
                                       f"instance id {inst}", instance=inst, unnamed=True)
                return
            self._set_trigger(rec, f"inferred: adding new member {{member}} with group instance id {inst}"
                                   f"; client reason: {reason or 'not provided'}", instance=inst, unnamed=True)
            if not inst and self.members and not self.round_open:
                self._start_round(rec["ts_ns"])
            return
        self.join_reason[mid] = reason
        client = f"; client reason: {reason or 'not provided'}"
        if mid in self.members:
            self._set_trigger(rec, f"inferred: updating metadata for member {mid}{client}", member=mid)
        elif inst and inst in self.inst_member:
            self._set_trigger(rec, f"inferred: updating metadata for static member {mid} with instance id {inst}",
                              member=mid, instance=inst, static=True)
        else:
            self._set_trigger(rec, f"inferred: adding new member {mid} with group instance id {inst}{client}",
                              member=mid, instance=inst)
            # a new dynamic member (its id from a MEMBER_ID_REQUIRED answer, or a JoinGroup before v4)
            # rebalances a formed group at once; a member id the capture never saw given out may be an
            # old member's rejoin, which the broker may answer without one
            new = mid in self.pending_ids or rec.get("api_version", 0) < 4
            if new and self.members and not self.round_open:
                self._start_round(rec["ts_ns"])

    def _leave(self, rec, body) -> None:
        leaving = body.get("members") or [{"memberId": body.get("memberId")}]
        made = self.by_request.setdefault(_key(rec), [])
        for m in leaving:
            mid, inst = m.get("memberId"), m.get("groupInstanceId")
            if not mid and inst:
                mid = self.inst_member.get(inst)
            if not mid:
                continue
            self.left.add(mid)
            made.append(self._event(rec["ts_ns"], "member_left", member=mid, instance=inst or self.members.get(mid),
                                    client_id=rec.get("client_id"), reason=f"inferred: {m.get('reason') or 'not provided'}"))
            made[-1]["cause_ns"] = rec["ts_ns"]
        self._set_trigger(rec, f"inferred: {len(leaving)} member(s) left the group")
        if self.members and not self.round_open and any(m in self.members for m in self.left):
            made.extend(self._start_round(rec["ts_ns"]))   # a member of the generation left: rebalanced at once
        if len(self.by_request) > 256:
            del self.by_request[next(iter(self.by_request))]

    def _start_round(self, now_ns: int) -> list[dict]:
        t = self.trigger
        made = []
        expired = silence.expired(self, now_ns)
        if expired is not None and (t is None or expired[0] < t["ts_ns"]):
            at, mid = expired
            inst = self.members.get(mid)
            self.timed_out.add(mid)
            made.append(self._event(at, "session_timeout", member=mid, instance=inst))
            made.append(self._event(at, "member_removed", member=mid, instance=inst,
                                    reason="inferred: session timeout expired"))
            t = {"ts_ns": at, "reason": f"inferred: removing member {mid} on session timeout expired", "member": mid}
        suspect = silence.suspect(self, now_ns) if t is None else None
        if suspect is not None:
            # the timeout's moment is unknown: the round is placed where the capture shows it
            inst, (seen_ns, seen_wall, conn) = self.members.get(suspect), self.last_seen[suspect]
            closed = self.closes.get(conn)
            end = f"; its connection closed at {closed // 1_000_000}" if closed and closed <= now_ns else ""
            self.timed_out.add(suspect)
            why = (f"session timeout expired (suspected: silent since {seen_wall}, its last request{end}; "
                   f"its session timeout is not in the capture)")
            made.append(self._event(now_ns, "session_timeout", member=suspect, instance=inst, suspected=True))
            made.append(self._event(now_ns, "member_removed", member=suspect, instance=inst,
                                    reason=f"inferred: {why}"))
            t = {"ts_ns": now_ns, "reason": f"inferred: removing member {suspect} on {why}", "member": suspect}
        if t is None:
            t = {"ts_ns": now_ns, "reason": "inferred: rebalance in progress (cause not in the capture)"}
        made.append(self._event(t["ts_ns"], "rebalance", reason=t["reason"], generation=self.generation,
                                member=t.get("member"), instance=t.get("instance")))
        if t.get("key") is not None:
            made[-1]["cause_ns"] = t["ts_ns"]        # after the request that caused it
        self.round_open = True
        self.trigger = None
        return made

    def _name_unnamed(self, rec, mid) -> int | None:
        """A JoinGroup answer naming the member its request had no id for: the cause that waited for
        it (only the one of the same instance: two static members may join together) gets it.
        Returns the time of that request (None: the request had a member id)."""
        key = _key(rec)
        if key not in self.unnamed or not mid:
            return None
        inst, asked = self.unnamed.pop(key)
        for holder in [self.trigger] + [ev["body"] for ev in reversed(self.out) if ev["event"] == "rebalance"]:
            if holder is not None and "{member}" in (holder.get("reason") or "") and holder.get("instance") == inst:
                holder["reason"] = holder["reason"].replace("{member}", mid)
                holder["member"] = mid
                for ev in self.out:
                    if ev["body"] is holder:
                        ev["member"] = mid
                break
        return asked

    def _join_response(self, rec, body, errors) -> None:
        gen, mid = body.get("generationId"), body.get("memberId")
        was_unnamed = self._name_unnamed(rec, mid)
        if MEMBER_ID_REQUIRED in errors and mid:
            self.pending_ids.add(mid)
        if errors or gen is None or gen < 0:
            if REBALANCING in errors and not self.round_open:
                self._start_round(rec["ts_ns"])
            return
        if self.generation is None and not self.round_open:
            # nothing yet shows the generation in force: a lone answer may be a static rejoin
            self.held.append({"rec": rec, "body": body, "gen": gen, "unnamed": was_unnamed})
            listed = body.get("members") and body.get("leader") == mid and not body.get("skipAssignment")
            if listed or len({h["body"].get("memberId") for h in self.held if h["gen"] == gen}) >= 2:
                self._release_held(formed=True)
            return
        self._answered(rec, body, gen, mid, was_unnamed)

    def _release_held(self, formed: bool) -> None:
        held, self.held = self.held, []
        held.sort(key=lambda h: not h["body"].get("members"))    # the leader's listing first
        if not formed:
            # no round in the capture: the generation was in force already; a static member's answer
            # with a new member id replaced its old one (unknown to the capture) without a rebalance
            self.generation = held[0]["gen"]
            self.trigger = None
        for h in held:
            self._answered(h["rec"], h["body"], h["gen"], h["body"].get("memberId"), h["unnamed"])

    def _answered(self, rec, body, gen, mid, was_unnamed) -> None:
        inst = rec.get("instance")
        if self.generation is not None and gen < self.generation:
            return                                # an answer behind the generation in force
        if self.generation is not None and gen == self.generation:
            old = self.inst_member.get(inst) if inst else None
            # a request sent before the generation formed was one of its round, not a rejoin after it
            in_round = self.gen_event is not None and was_unnamed is not None and was_unnamed < self.gen_event["ts_ns"]
            if inst and old != mid and (old is not None or was_unnamed is not None) and mid not in self.joined \
                    and not in_round:
                # a static member's new id, no rebalance (ClassicGroup.replaceStaticMember)
                self._event(rec["ts_ns"], "static_member_replaced", instance=inst, old_member=old, member=mid,
                            client_id=rec.get("client_id"))
                self._event(rec["ts_ns"], "static_rejoin_without_rebalance", instance=inst, member=mid,
                            generation=gen, client_id=rec.get("client_id"))
                if old is not None:
                    self.members.pop(old, None)
                self.members[mid] = inst
                self.inst_member[inst] = mid
                self.joined.add(mid)
                if self.trigger is not None and self.trigger.get("instance") == inst:
                    self.trigger = None
            elif mid not in self.joined and self.gen_event is not None:
                self._member_joined(rec, mid, inst)
            return
        if not self.round_open:
            self._start_round(self.trigger["ts_ns"] if self.trigger else rec["ts_ns"])
        listed = [(m.get("memberId"), m.get("groupInstanceId")) for m in body.get("members") or ()]
        self._generation(rec["ts_ns"], gen, listed, body.get("leader"), body.get("protocolName"))
        self.gen_event["answer_ns"] = rec["frame_ns"]
        self._member_joined(rec, mid, inst)

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
        asked = self.join_asked.get(_key(rec))
        if self.gen_event is not None and asked is not None and asked < self.gen_event["ts_ns"]:
            # the round formed after the last JoinGroup it answers (a join answered by another round,
            # or MEMBER_ID_REQUIRED, may come between the broker's decision and its answers)
            self.gen_event["cause_ns"] = max(self.gen_event.get("cause_ns") or 0, asked)
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

    def finish(self) -> list[dict]:
        if self.held:
            self._release_held(formed=False)
        return self.out


def infer_events(records) -> list[dict]:
    """Event records for every group in `records` (the group frames and connection ends of an
    import, any order)."""
    by_group: dict[str, list[dict]] = {}
    closes: dict = {}
    for r in records:
        if r.get("type") == "conn_close":
            closes[r.get("conn")] = r["ts_ns"]
        else:
            by_group.setdefault(r["group"], []).append(r)
    out = []
    for group, recs in by_group.items():
        g = GroupInference(group, closes)
        for r in sorted(recs, key=lambda r: r["ts_ns"]):
            g.add(r)
        out += g.finish()
    return out
