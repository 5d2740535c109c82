"""One group's rebalance timeline, folded from its trace records in time order (pure Python: Spark
runs it once per group, the tests run it directly).

Input: the group's records (JoinGroup, SyncGroup and LeaveGroup frames as the client sent them and as
kshim answered them, plus the coordinator's events), each a dict with `ts_ns`, `wall_ms`, `type`,
`event`, `api_key`, `dir`, `conn`, `corr`, `member`, `instance`, `generation`, `error_codes`, `body`
(a dict, or its JSON text). Output (`fold_group`): three lists of plain dicts,

  rounds   one per generation the coordinator formed (a "rebalance"): why it started (the
           coordinator's reasons), when (the rebalance event; the first JoinGroup of the round, counted
           from the first attempt of a member that was told MEMBER_ID_REQUIRED; the generation; the
           last successful SyncGroup answer of that generation), who joined and who left since the
           previous generation (KIP-800 reasons from JoinGroup/LeaveGroup bodies and the
           coordinator's removal reasons), who was fenced, SkipAssignment answers, partitions moved
           (owners compared by group.instance.id, else member id), members whose JoinGroup came later
           than their rebalance timeout after the round started (slow revocation);
  members  one per (generation, member incarnation): a static member replaced inside a generation
           (a bounce without rebalance) ends one row and starts the next, keeping the assignment;
  changes  every membership event in order: joined, left, removed, session_timeout, fenced,
           static_replaced, static_rejoin (no rebalance), skip_assignment.
"""

from __future__ import annotations

import json

from kcodec.protocol import Error

from .assignment import decode_b64, decode_hex
from .load import HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, OFFSET_COMMIT, OFFSET_FETCH, SYNC_GROUP

C2K, K2C = "client->kshim", "kshim->client"
# plain ints: FENCED_INSTANCE_ID goes into a Spark expression (rebalances.py)
MEMBER_ID_REQUIRED, FENCED_INSTANCE_ID = int(Error.MEMBER_ID_REQUIRED), int(Error.FENCED_INSTANCE_ID)


def _body(rec) -> dict:
    b = rec.get("body")
    if isinstance(b, str):
        try:
            b = json.loads(b)
        except ValueError:
            return {}
    return b or {}


class GroupFold:
    def __init__(self, group: str):
        self.group = group
        self.rounds: list[dict] = []
        self.members: list[dict] = []
        self.changes: list[dict] = []
        self.round: dict | None = None          # open: rebalance started, generation not formed yet
        self.gen: dict | None = None            # the newest generation formed
        self.current: dict[str, dict] = {}      # member id -> open `members` row of self.gen
        self.pending_joins: dict[tuple, tuple] = {}   # (conn, corr) -> (effective ts_ns, wall_ms, member)
        self.first_try: dict[str, tuple] = {}   # member id from MEMBER_ID_REQUIRED -> (ts_ns, wall_ms)
        self.join_info: dict[str, dict] = {}    # member id / instance -> last JoinGroup request facts
        self.leave_reason: dict[str, str] = {}
        self.removed_reason: dict[str, str] = {}
        self.prev_owners: dict[str, str] | None = None
        self.client_of: dict[str, str] = {}     # member id -> client id (member_joined events)
        self.inst_of: dict[str, str] = {}       # member id -> group.instance.id (requests, events)
        self.in_force_idents: set | None = None  # the members of a generation first seen in force

    # ------------------------------------------------------------------ helpers
    def _change(self, rec, kind: str, member=None, instance=None, reason=None, detail=None) -> None:
        self.changes.append({"group": self.group, "wall_ms": rec.get("wall_ms"), "ts_ns": rec.get("ts_ns"),
                             "generation": self.gen["generation"] if self.gen else None, "kind": kind,
                             "member": member, "instance": instance, "client_id": self.client_of.get(member),
                             "reason": reason, "detail": detail})

    def _open_round(self, rec, reason: str | None) -> dict:
        first = min(self.pending_joins.values(), default=None)
        self.round = {"group": self.group, "generation": None, "start_wall_ms": rec.get("wall_ms"),
                      "start_ts_ns": rec.get("ts_ns"), "reasons": [reason] if reason else [],
                      "first_join_wall_ms": first[1] if first else None,
                      "first_join_ts_ns": first[0] if first else None,
                      "join_times": {}, "fenced": [], "removed": []}
        return self.round

    # ------------------------------------------------------------------ records
    def add(self, rec) -> None:
        if rec.get("type") == "event":
            return self._event(rec, _body(rec))
        api, d = rec.get("api_key"), rec.get("dir")
        errors = rec.get("error_codes") or []
        if d == K2C and FENCED_INSTANCE_ID in errors:
            self._change(rec, "fenced", rec.get("member"), rec.get("instance"), reason=f"api {api}")
            current = self.round or self.gen     # the rebalance in progress, else the generation in force
            if current is not None:
                current["fenced"].append(rec.get("instance") or rec.get("member"))
        if api == JOIN_GROUP:
            self._join(rec, d, errors)
        elif api == SYNC_GROUP:
            self._sync(rec, d, errors)
        elif api == LEAVE_GROUP and d == C2K:
            body = _body(rec)
            for m in body.get("members") or [{"memberId": body.get("memberId")}]:
                mid, inst = m.get("memberId"), m.get("groupInstanceId")
                reason = m.get("reason")
                self.leave_reason[inst or mid or ""] = reason or "not provided"
                self._change(rec, "left", mid, inst, reason=reason)

    def _join(self, rec, d: str, errors) -> None:
        key = (rec.get("conn"), rec.get("corr"))
        if d == C2K:
            body = _body(rec)
            mid = body.get("memberId") or None
            ts, wall = self.first_try.pop(mid, None) or (rec.get("ts_ns"), rec.get("wall_ms"))
            self.pending_joins[key] = (ts, wall, mid)
            rebalance_timeout = body.get("rebalanceTimeoutMs", -1)
            if rebalance_timeout is None or rebalance_timeout < 0:
                rebalance_timeout = body.get("sessionTimeoutMs")
            info = {"reason": body.get("reason"), "rebalance_timeout_ms": rebalance_timeout,
                    "session_timeout_ms": body.get("sessionTimeoutMs")}
            inst = body.get("groupInstanceId")
            if mid and inst:
                self.inst_of[mid] = inst
            for k in (mid, inst):
                if k:
                    self.join_info[k] = info
            r = self.round
            if r is not None and r["generation"] is None:
                if r["first_join_ts_ns"] is None or ts < r["first_join_ts_ns"]:
                    r["first_join_ts_ns"], r["first_join_wall_ms"] = ts, wall
                r["join_times"].setdefault(inst or mid or f"conn{key[0]}", rec.get("ts_ns"))
            return
        if d != K2C:
            return
        started = self.pending_joins.pop(key, None)
        body = _body(rec)
        if MEMBER_ID_REQUIRED in errors and body.get("memberId") and started:
            self.first_try[body["memberId"]] = (started[0], started[1])
        if body.get("skipAssignment"):
            self._change(rec, "skip_assignment", body.get("memberId"), rec.get("instance"),
                         detail=f"generation {body.get('generationId')}")
            if self.gen is not None:
                self.gen["skip_assignment"] += 1
        if self.round is not None and self.round["generation"] is None:
            return
        gen = self.gen
        if gen is not None and body.get("generationId") == gen["generation"] and body.get("members") \
                and body.get("leader") == body.get("memberId") and not errors:
            if gen["_listed"] is None:   # the generation's members (a later SkipAssignment answer repeats them)
                gen["_listed"] = [(m.get("memberId"), m.get("groupInstanceId") or self.inst_of.get(m.get("memberId")))
                                  for m in body["members"]]
                self._start_members(rec, gen)

    def _sync(self, rec, d: str, errors) -> None:
        gen = self.gen
        if gen is None or rec.get("generation") != gen["generation"]:
            return
        body = _body(rec)
        if d == C2K and body.get("assignments"):
            for a in body["assignments"]:
                parts = decode_b64(a.get("assignment"))
                if parts is not None:
                    gen["_assign"][a.get("memberId")] = parts
            self._apply_assignments(gen)
        elif d == K2C and not errors:
            mid = rec.get("member")
            listed = gen["_listed"]
            if mid not in gen["_synced"] and (listed is None or any(mid == x[0] for x in listed)):
                gen["_synced"].add(mid)    # the round ends with the last listed member's first answer
                gen["last_sync_wall_ms"], gen["_last_sync_ts"] = rec.get("wall_ms"), rec.get("ts_ns")
            parts = decode_b64(body.get("assignment"))
            if mid and parts is not None and mid not in gen["_assign"]:
                gen["_assign"][mid] = parts
                self._apply_assignments(gen)

    def _event(self, rec, body: dict) -> None:
        kind = rec.get("event")
        mid, inst = body.get("member"), body.get("instance")
        if mid and inst:
            self.inst_of[mid] = inst
        if kind == "rebalance":
            if self.round is None:
                self._close_generation()
                self._open_round(rec, body.get("reason"))
            elif body.get("reason"):
                self.round["reasons"].append(body["reason"])
        elif kind == "generation":
            self._generation(rec, body)
        elif kind == "assignment":
            gen = self.gen
            if gen is not None and body.get("generation") == gen["generation"]:
                for m, text in (body.get("assignments") or {}).items():
                    if m not in gen["_assign"]:
                        parts = decode_hex(text)
                        if parts is not None:
                            gen["_assign"][m] = parts
                self._apply_assignments(gen)
        elif kind == "member_joined":
            if mid and body.get("client_id"):
                self.client_of[mid] = body["client_id"]
            self._change(rec, "joined", mid, inst, reason=body.get("reason"),
                         detail="new" if body.get("new") else "rejoin")
        elif kind in ("member_removed", "session_timeout", "pending_member_expired"):
            reason = body.get("reason") or kind.replace("_", " ")
            if kind != "session_timeout":
                self.removed_reason[inst or mid or ""] = reason
            self._change(rec, "removed" if kind != "session_timeout" else "session_timeout", mid, inst, reason)
            if self.round is not None and kind == "member_removed":
                self.round["removed"].append((inst or mid, reason))
            if kind == "member_removed" and mid in self.current:
                self._end_member(mid, rec)
        elif kind == "member_left":
            self.leave_reason.setdefault(inst or mid or "", body.get("reason") or "not provided")
            if mid in self.current:
                self._end_member(mid, rec)
        elif kind == "static_member_replaced":
            old = body.get("old_member")
            self._change(rec, "static_replaced", mid, inst, reason=body.get("reason"), detail=f"old member {old}")
            if self.gen is not None:
                self.gen["_inst"][mid] = self.gen["_inst"][old] = inst
            row = self.current.get(old)
            if row is not None:
                self._end_member(old, rec)
                self._member_row(rec, self.gen, mid, inst, row["assignment"], row["leader"])
        elif kind == "static_rejoin_without_rebalance":
            self._change(rec, "static_rejoin", mid, inst,
                         detail=f"generation {body.get('generation')}; skip_assignment={bool(body.get('skip_assignment'))}")

    # ------------------------------------------------------------------ generations
    def _generation(self, rec, body: dict) -> None:
        in_force = bool(body.get("in_force"))     # a source's first sight of the group: no rebalance
        if self.round is None:
            self._close_generation()              # (no rebalance event before it: the records)
        r = self.round or self._open_round(rec, None)
        self.round = None
        gen = {**r, "generation": body.get("generation"), "members": body.get("members"),
               "leader": body.get("leader"), "protocol": body.get("protocol"),
               "generation_wall_ms": rec.get("wall_ms"), "_gen_ts": rec.get("ts_ns"),
               "last_sync_wall_ms": None, "_last_sync_ts": None, "skip_assignment": 0,
               "_assign": {}, "_listed": None, "_inst": {}, "_synced": set(),
               "_reasons": {k: v.get("reason") for k, v in self.join_info.items()}}
        self.gen = gen
        if not in_force:
            self.rounds.append(gen)
        for row in list(self.current):
            self._end_member(row, rec)
        if body.get("member_list") is not None:     # the records list the generation's members
            gen["_listed"] = [(m.get("member"), m.get("instance")) for m in body["member_list"]]
            self._start_members(rec, gen)
        if in_force and gen["_listed"] is not None:
            self.in_force_idents = {inst or mid for mid, inst in gen["_listed"]}

    def _start_members(self, rec, gen: dict) -> None:
        for mid, inst in gen["_listed"]:
            gen["_inst"][mid] = inst
            if mid not in self.current:
                self._member_row(rec, gen, mid, inst, gen["_assign"].get(mid), mid == gen["leader"])

    def _member_row(self, rec, gen, mid, inst, assignment, leader) -> None:
        row = {"group": self.group, "generation": gen["generation"] if gen else None, "member": mid,
               "instance": inst, "from_wall_ms": rec.get("wall_ms"), "to_wall_ms": None,
               "assignment": assignment, "leader": bool(leader)}
        self.members.append(row)
        self.current[mid] = row

    def _end_member(self, mid: str, rec) -> None:
        row = self.current.pop(mid)
        row["to_wall_ms"] = rec.get("wall_ms")

    def _apply_assignments(self, gen: dict) -> None:
        for mid, row in self.current.items():
            if row["generation"] == gen["generation"] and mid in gen["_assign"]:
                row["assignment"] = gen["_assign"][mid]

    def _close_generation(self) -> None:
        """The generation ends (a new rebalance starts, or the trace ends): finish its figures."""
        gen = self.gen
        if gen is None or gen.get("_closed"):
            return
        gen["_closed"] = True
        owners: dict[str, str] = {}
        listed = gen["_listed"] or [(m, None) for m in gen["_assign"]]
        inst_of = {**dict(listed), **gen["_inst"]}
        for mid, parts in gen["_assign"].items():
            for p in parts or ():
                owners[p] = inst_of.get(mid) or mid
        idents = {inst or mid for mid, inst in listed}
        prev = self.prev_owners
        if gen["_assign"]:
            gen["assigned_partitions"] = len(owners)
            if prev is not None:
                gen["partitions_moved"] = sum(1 for p in set(owners) | set(prev) if owners.get(p) != prev.get(p))
            self.prev_owners = owners
        gen["member_ids"] = sorted(idents)
        gen["_idents"] = idents

    # ------------------------------------------------------------------ result
    def finish(self) -> tuple[list[dict], list[dict], list[dict]]:
        self._close_generation()
        if self.round is not None:   # a rebalance still open at the end of the trace
            self.rounds.append({**self.round, "generation": None, "members": None, "leader": None,
                                "protocol": None, "generation_wall_ms": None, "_gen_ts": None,
                                "last_sync_wall_ms": None, "_last_sync_ts": None, "skip_assignment": 0,
                                "_assign": {}, "_listed": None, "_inst": {}, "member_ids": [], "_idents": set()})
        out, prev = [], self.in_force_idents
        for g in self.rounds:
            idents = g.get("_idents") or set()
            joined, left = [], []
            if g["generation"] is not None and g.get("_listed") is not None:
                before = prev if prev is not None else set()
                for ident in sorted(idents - before):
                    joined.append(f"{ident}: {g['_reasons'].get(ident) or 'not provided'}")
                for ident in sorted(before - idents):
                    why = self.leave_reason.get(ident) or self.removed_reason.get(ident) or "not in the new generation"
                    left.append(f"{ident}: {why}")
                prev = idents
            slow = []
            start = g.get("start_ts_ns")
            for ident, ts in g.get("join_times", {}).items():
                timeout = (self.join_info.get(ident) or {}).get("rebalance_timeout_ms")
                if start is not None and timeout and (ts - start) / 1e6 > timeout:
                    slow.append(f"{ident}: {int((ts - start) / 1e6)} ms > {timeout} ms")
            for ident, reason in g.get("removed", []):
                if reason in ("did not rejoin", "did not sync in time"):
                    slow.append(f"{ident}: {reason}")
            first, last = g.get("first_join_ts_ns"), g.get("_last_sync_ts")
            out.append({
                "group": self.group, "generation": g["generation"], "members": g.get("members"),
                "leader": g.get("leader"), "protocol": g.get("protocol"),
                "reason": g["reasons"][0] if g["reasons"] else None, "reasons": g["reasons"],
                "start_wall_ms": g.get("start_wall_ms"), "first_join_wall_ms": g.get("first_join_wall_ms"),
                "generation_wall_ms": g.get("generation_wall_ms"), "last_sync_wall_ms": g.get("last_sync_wall_ms"),
                "join_to_sync_ms": round((last - first) / 1e6, 3) if first is not None and last is not None else None,
                "joined": joined, "left": left, "fenced": g.get("fenced", []),
                "skip_assignment": g.get("skip_assignment", 0),
                "assigned_partitions": g.get("assigned_partitions"), "partitions_moved": g.get("partitions_moved"),
                "slow_rejoins": slow, "member_ids": g.get("member_ids", [])})
        return out, self.members, self.changes


# heartbeats and offsets: members.py, in Spark (but their FENCED_INSTANCE_ID answers are kept: they say
# who was fenced)
SKIPPED_APIS = frozenset({HEARTBEAT, OFFSET_COMMIT, OFFSET_FETCH})


def wanted(rec) -> bool:
    return not (rec.get("type") == "frame" and rec.get("api_key") in SKIPPED_APIS
                and FENCED_INSTANCE_ID not in (rec.get("error_codes") or ()))


def fold_group(group: str, records) -> tuple[list[dict], list[dict], list[dict]]:
    """(rounds, members, changes) of one group from its records (any order; sorted here by ts_ns)."""
    f = GroupFold(group)
    for rec in sorted(records, key=lambda r: (r.get("ts_ns") or 0)):
        if wanted(rec):
            f.add(rec)
    return f.finish()
