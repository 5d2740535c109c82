"""A KIP-848 consumer group's coordinator events from its records (Kafka's ConsumerGroup*Value records,
written by GroupMetadataManager as the group changes):

  ConsumerGroupMemberMetadata            a member joined (its first record), changed its subscription,
                                         or was removed (a tombstone: it left, timed out or was fenced;
                                         the records do not say which)
  ConsumerGroupMetadata                  the group epoch bumped: a rebalance; its cause is what the
                                         records since the last bump show (a member joined, was removed,
                                         changed its subscription, a regex resolved), marked inferred
  ConsumerGroupTargetAssignmentMetadata  the target assignment computed for an epoch
  ConsumerGroupCurrentMemberAssignment   a member's reconciliation step: its epoch, state, the partitions
                                         it owns and those it must revoke (`member_assignment` events:
                                         partition owners from them, reconcile.py)
  ConsumerGroupRegularExpression         a subscription regex resolved to topics

A static member replaced: an instance id whose new member's first record comes after its old member's
tombstone, or while it is still there. Where knowledge starts: records before the history read is
complete (`in_force`) and each key's first record when the read did not start at the partition's first
offset are the state in force: one `group_epoch` event marked `in_force`, no join, no rebalance.
"""

from __future__ import annotations

from .events import EventOut

STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 3: "UNKNOWN"}   # MemberState


def parts(tps, names: dict) -> list[str]:
    out = []
    for t in tps or ():
        tid = t.get("topicId")
        topic = names.get(tid) or f"topic id {tid} (name not known)"
        out += [f"{topic}-{p}" for p in t.get("partitions") or ()]
    return sorted(out)


class ConsumerRecords:
    def __init__(self, out: EventOut, names: dict | None = None):
        self.out, self.names = out, names if names is not None else {}
        self.epoch: int | None = None
        self.members: dict[str, dict] = {}      # member id -> metadata (JSON form)
        self.removing: tuple | None = None      # (record, member id, metadata) of a removal held back
        self.causes: list[str] = []             # since the last epoch bump

    def _first_sight(self, rec) -> bool:
        return rec.get("in_force") or not rec.get("from_start")

    def add(self, rec: dict) -> None:
        name, key, value = rec["record"], rec["key"], rec["value"]
        if self.removing is not None and not self._part_of_removal(name, key, value):
            self.flush()
        if name == "ConsumerGroupMetadata":
            return self._epoch(rec, value)
        if name == "ConsumerGroupMemberMetadata":
            return self._member(rec, key.get("memberId"), value)
        if name == "ConsumerGroupCurrentMemberAssignment" and value is not None:
            mid = key.get("memberId")
            m = self.members.get(mid) or {}
            self.out.emit(rec, "member_assignment", member=mid, instance=m.get("instanceId"),
                          epoch=value.get("memberEpoch"), previous_epoch=value.get("previousMemberEpoch"),
                          state=STATES.get(value.get("state"), value.get("state")),
                          assigned=parts(value.get("assignedPartitions"), self.names),
                          pending_revocation=parts(value.get("partitionsPendingRevocation"), self.names),
                          in_force=True if rec.get("in_force") else None)
        elif name == "ConsumerGroupTargetAssignmentMetadata" and value is not None and not rec.get("in_force"):
            self.out.emit(rec, "target_assignment", epoch=value.get("assignmentEpoch"))
        elif name == "ConsumerGroupRegularExpression" and value is not None and not rec.get("in_force"):
            regex = key.get("regularExpression")
            self.causes.append(f"regex {regex} resolved to {len(value.get('topics') or ())} topic(s)")
            self.out.emit(rec, "regex_resolved", regex=regex, topics=sorted(value.get("topics") or ()))

    def _part_of_removal(self, name: str, key: dict, value) -> bool:
        """The records that go with a member's removal (its other tombstones), or maybe with a static
        member's replacement (records of a member not known yet: its metadata tells, by instance id)."""
        rec, mid, old = self.removing
        if key.get("memberId") == mid and value is None:
            return True
        return key.get("memberId") is not None and key.get("memberId") not in self.members and value is not None

    def flush(self) -> None:
        """A member's removal held back to see whether a static replacement follows (the new member's
        records come right after the old one's tombstones) is an event of its own."""
        if self.removing is None:
            return
        rec, mid, old = self.removing
        self.removing = None
        self.causes.append(f"member {mid} removed")
        self.out.emit(rec, "member_removed", inferred=True, member=mid, instance=old.get("instanceId"),
                      client_id=old.get("clientId"),
                      reason="inferred: its records were deleted (it left, timed out or was fenced: the records "
                             "do not say which)")

    def _epoch(self, rec, value) -> None:
        if value is None:
            if self.epoch is not None:
                self.out.emit(rec, "group_deleted", reason="the group's record was deleted (a tombstone)")
            self.epoch, self.members, self.causes = None, {}, []
            return
        epoch = value.get("epoch")
        jumped = self.epoch is not None and epoch not in (self.epoch, self.epoch + 1)   # records between lost
        if (self.epoch is None and self._first_sight(rec)) or rec.get("in_force") or jumped:
            self.out.emit(rec, "group_epoch", epoch=epoch, in_force=True, members=len(self.members),
                          reason="the epoch in force when the records read begin")
        else:
            reason = "; ".join(self.causes) if self.causes else "not in the records"
            self.out.emit(rec, "group_epoch", inferred=bool(self.causes), epoch=epoch, members=len(self.members),
                          reason=f"inferred: {reason}" if self.causes else "cause not in the records")
        self.epoch, self.causes = epoch, []

    def _member(self, rec, mid: str, value) -> None:
        old = self.members.get(mid)
        if value is None:
            if old is None:
                return
            del self.members[mid]
            self.flush()
            if old.get("instanceId"):
                self.removing = (rec, mid, old)     # a static member: its replacement may follow
                return
            self.removing = (rec, mid, old)
            self.flush()
            return
        self.members[mid] = value
        inst = value.get("instanceId")
        if old is None and (rec.get("in_force") or (self.epoch is None and not rec.get("from_start"))):
            return          # a member in the state in force
        if old is None:
            prev = None
            if inst and self.removing is not None and self.removing[2].get("instanceId") == inst:
                prev, self.removing = self.removing[1], None
            elif inst:
                prev = next((m for m, v in self.members.items() if m != mid and v.get("instanceId") == inst), None)
            if prev is None:
                self.flush()                        # (a removal held back comes first)
            if prev is not None:
                self.out.emit(rec, "static_member_replaced", inferred=True, member=mid, old=prev, old_member=prev,
                              instance=inst, epoch=self.epoch,
                              reason=f"inferred: instance {inst} under member id {mid}, {prev} before")
                return
            self.causes.append(f"member {mid} joined")
            self.out.emit(rec, "member_joined", inferred=True, member=mid, instance=inst, client_id=value.get("clientId"),
                          new=True, reason="inferred: its first record",
                          subscription=value.get("subscribedTopicNames"), regex=value.get("subscribedTopicRegex"))
        elif (old.get("subscribedTopicNames"), old.get("subscribedTopicRegex")) != \
                (value.get("subscribedTopicNames"), value.get("subscribedTopicRegex")):
            self.causes.append(f"member {mid} changed its subscription")
            self.out.emit(rec, "subscription_changed", member=mid, instance=inst,
                          subscription=value.get("subscribedTopicNames"), regex=value.get("subscribedTopicRegex"))
