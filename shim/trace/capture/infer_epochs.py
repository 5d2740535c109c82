"""KIP-848 consumer groups' epochs inferred from ConsumerGroupHeartbeat frames (the classic rules and
the shared output are in infer.py).

- The capture's first sight of a group is the state in force, not a change: the first epoch answered
  (and any higher one answered within the first heartbeat interval, while the members report in, with
  no join, leave or subscription change in the capture before it) is where the capture's knowledge
  starts. What formed it happened before the capture.
- A group epoch bump: a heartbeat answer with a member epoch above every epoch seen (members reach the
  group epoch once reconciled; the last member's leave bumps it with nobody left to see it). Its
  cause: the join (epoch 0), leave (-1/-2) or subscription change answered before it, else the member
  silent longest (more than three heartbeat intervals: its session expired; the session timeout is a
  broker setting, not on the wire), else "cause not in the capture".
- A request the broker refused (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...) caused nothing:
  its member retries, and the retry is the cause. A static member's join answered at the epoch in
  force (GroupMetadataManager.consumerGroupHeartbeat's replacement without a bump) caused nothing
  either; a dynamic join's bump may show later (from 4.3 member epochs follow the target assignment).
- A bump's event sits just after the request that caused it (or just before the answer that showed
  it); the answer's time is kept as `answer_ns` (align.py pairs it with the broker's log line, which the
  broker writes before it answers).

GroupMetadataManager.consumerGroupHeartbeat (Kafka 4.x) is the rule followed.
"""

from __future__ import annotations

DEFAULT_INTERVAL_MS = 5000      # group.consumer.heartbeat.interval.ms's default


class ConsumerEpochs:
    def __init__(self, group):
        self.g = group                  # the GroupInference: output and last requests seen
        self.epoch: int | None = None   # the highest epoch seen (None: none yet)
        self.warm_until: int | None = None
        self.trigger: dict | None = None
        self.members: dict[str, int | None] = {}    # member id -> heartbeat interval ms
        self.pending: dict[tuple, dict] = {}        # (conn, corr) -> the cause its request would be
        self.client: dict[str, str] = {}            # member id -> client id
        self.instance: dict[str, str] = {}          # member id -> instance id

    # ------------------------------------------------------------------ requests
    def request(self, rec: dict, body: dict, mid) -> None:
        epoch = body.get("memberEpoch")
        if mid and rec.get("client_id"):
            self.client[mid] = rec["client_id"]
        if mid and body.get("instanceId"):
            self.instance[mid] = body["instanceId"]
        key = (rec.get("conn"), rec.get("corr"))
        if epoch == 0:
            self._cause(rec, key, f"inferred: member {mid or 'new'} subscription changed", mid, join=True,
                        instance=body.get("instanceId"))
        elif epoch in (-1, -2):
            self._cause(rec, key, f"inferred: member {mid} removed: left the group", mid, leave=True)
            self.g.by_request.setdefault(key, []).append(self.g._event(rec["ts_ns"], "member_left", member=mid, instance=body.get("instanceId") or self.instance.get(mid),
                          client_id=rec.get("client_id"), reason="inferred: left the group"))
        elif body.get("subscribedTopicNames") is not None or body.get("subscribedTopicRegex") is not None:
            self._cause(rec, key, f"inferred: member {mid} subscription changed", mid, weak=True)

    def _cause(self, rec, key, reason: str, mid, weak: bool = False, **more) -> None:
        cause = {"ts_ns": rec["ts_ns"], "reason": reason, "member": mid, "weak": weak, "key": key,
                 "client_id": rec.get("client_id"), **more}
        self.pending[key] = cause
        if len(self.pending) > 256:
            del self.pending[next(iter(self.pending))]

    # ------------------------------------------------------------------ answers
    def response(self, rec: dict, body: dict, errors) -> None:
        epoch, mid = body.get("memberEpoch"), body.get("memberId")
        cause = self.pending.pop((rec.get("conn"), rec.get("corr")), None)
        if errors:
            return                      # refused: its retry is the cause, not this request
        if cause is not None and mid and cause.get("member") in (None, "new"):
            cause["member"] = mid
            cause["reason"] = cause["reason"].replace("member new", f"member {mid}")
        if mid and rec.get("client_id"):
            self.client[mid] = rec["client_id"]
        if epoch is not None and epoch < 0:
            self._left(rec, mid, cause)
            return
        if cause is not None and (self.trigger is None or (self.trigger.get("weak") and not cause["weak"])):
            self.trigger = cause
        if epoch and epoch > 0 and mid:
            self.members[mid] = body.get("heartbeatIntervalMs") or self.members.get(mid)
        if epoch is None:
            return
        if self.epoch is None:
            interval = body.get("heartbeatIntervalMs") or DEFAULT_INTERVAL_MS
            self.warm_until = rec["ts_ns"] + interval * 1_000_000
            if cause is None or not cause.get("join") or cause.get("instance"):
                # (a static member's rejoin replaces its old member without a bump)
                self.epoch = epoch      # the first sight: the epoch in force
                self.trigger = None
                return
        if self.epoch is not None and epoch <= self.epoch:
            if cause is not None and self.trigger is cause and cause.get("instance") and cause.get("join"):
                # a static member's rejoin answered at the epoch in force: it replaced its old member
                # without a bump (a dynamic join's bump may show later: from 4.3 the member epochs
                # follow the target assignment, computed once per group.consumer.assignment.interval.ms)
                self.trigger = None
            return
        t = self.trigger
        if t is None and self.warm_until is not None and rec["ts_ns"] <= self.warm_until:
            self.epoch = epoch          # still learning the state in force: members report in
            return
        if t is None:
            t = self._silent_member(rec["ts_ns"]) or \
                {"ts_ns": rec["ts_ns"], "reason": "inferred: group epoch bumped (cause not in the capture)"}
        self.epoch = epoch
        self._bump(t, epoch, rec)

    def _bump(self, t: dict, epoch: int, answer: dict) -> None:
        mid = t.get("member")
        ev = self.g._event(t["ts_ns"], "group_epoch", epoch=epoch, reason=t["reason"], member=mid,
                           client_id=t.get("client_id") or self.client.get(mid or ""),
                           instance=t.get("instance") or self.instance.get(mid or ""))
        ev["answer_ns"] = answer["frame_ns"]
        if t.get("key") is not None and not t.get("weak"):
            # a join's or a leave's request: the broker bumps (and logs it) while it handles that
            # request, whoever's answer shows the bump (not a timer's bump, nor a mere subscription field)
            ev["cause_ns"] = t["ts_ns"]
        self.trigger = None

    def _left(self, rec, mid, cause) -> None:
        if mid not in self.members:
            return
        del self.members[mid]
        if self.members and cause is not None and (self.trigger is None or self.trigger.get("weak")):
            self.trigger = cause        # the bump comes in another member's answer
        if not self.members and self.epoch is not None:
            # the last member left: its removal bumps the epoch all the same, with nobody to see it
            t = cause or {"ts_ns": rec["ts_ns"], "reason": f"inferred: member {mid} removed: left the group",
                          "member": mid}
            self.epoch += 1
            self._bump(t, self.epoch, rec)

    def _silent_member(self, now_ns: int) -> dict | None:
        """A bump with no join, leave or subscription change before it: the member silent longest, if
        silent for more than three of its heartbeat intervals, was removed when its session expired
        (seen at this answer: the session timeout is not on the wire)."""
        silent = []
        for mid, interval in self.members.items():
            seen = self.g.last_seen.get(mid)
            if seen is not None and interval and now_ns - seen[0] > 3 * interval * 1_000_000:
                silent.append((seen[0], mid, seen[1]))
        if not silent:
            return None
        _, mid, wall = min(silent)
        del self.members[mid]
        self.g._event(now_ns, "session_timeout", member=mid, client_id=self.client.get(mid),
                      instance=self.instance.get(mid))
        return {"ts_ns": now_ns, "member": mid,
                "reason": f"inferred: member {mid} removed: the member session expired (silent since {wall})"}
