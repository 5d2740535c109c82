"""A classic group's coordinator events from its GroupMetadata records (Kafka's GroupMetadataValue).

When a classic group's coordinator writes that record (GroupMetadataManager, classic groups): when the
leader's SyncGroup completes a generation (members with their assignments), when a join completes
with no member left (the group goes Empty with a generation of its own), and when a static member's
new member id replaces its old one (the same generation). A tombstone deletes the group.

What the records show, per record after the first: a generation above the one before is a rebalance
completed (members missing from it were removed: left, timed out or not rejoined, which the records
do not say, so the reason is inferred); a static member's instance under a new member id is a
replacement; the assignments are the owners from that record on. What they do not show: when a
rebalance started, its cause, when an eager member revoked (before its JoinGroup, not recorded).

Where knowledge starts: the first record of a group in what was read is the state in force, not a
change (`in_force`), unless the partition was read from its very first offset with nothing
compacted away (then it is the group's first record: the group formed there). So is a record before
the read's complete history, and a group's first record in it when records were compacted (history.py).
A generation that formed and was replaced before its leader's SyncGroup (a member joined meanwhile)
has no record: the next record's generation skips it (`unrecorded`), and its changes count in the next.
"""

from __future__ import annotations

import base64

from .events import EventOut

REMOVED_REASON = ("inferred: not in generation {gen}'s record (it left, timed out or did not rejoin: "
                  "the records do not say which)")


def _hex(b64: str | None) -> str:
    return base64.b64decode(b64).hex() if b64 else ""


class ClassicRecords:
    def __init__(self, out: EventOut):
        self.out = out
        self.generation: int | None = None
        self.members: dict[str, dict] = {}       # member id -> its MemberMetadata (JSON form)
        self.assignments: dict[str, str] = {}

    def add(self, rec: dict) -> None:
        value = rec["value"]
        if value is None:
            if self.generation is not None:
                self.out.emit(rec, "group_deleted", reason="the group's record was deleted (a tombstone): "
                                                           "the group was deleted or expired")
            self.generation, self.members, self.assignments = None, {}, {}
            return
        gen = value.get("generation")
        members = {m["memberId"]: m for m in value.get("members") or ()}
        assignments = {mid: _hex(m.get("assignment")) for mid, m in members.items()}
        first = self.generation is None
        if gen == 0 and not members:    # the group created, empty, no generation formed yet (Kafka 4.4
            self.out.emit(rec, "state", frm=None, to="Empty", generation=0)   # writes one: seen on the wire)
            self.generation, self.members, self.assignments = gen, members, assignments
            return
        if (first and not rec.get("from_start")) or rec.get("in_force"):
            self._generation(rec, value, members, assignments, in_force=True)
        elif first or gen != self.generation:
            self._new_generation(rec, value, members, assignments)
        else:
            self._same_generation(rec, members, assignments)
        self.generation, self.members, self.assignments = gen, members, assignments

    def _generation(self, rec, value, members, assignments, in_force: bool = False, unrecorded=None) -> None:
        gen = value.get("generation")
        self.out.emit(rec, "generation", generation=gen, members=len(members), leader=value.get("leader"),
                      unrecorded=unrecorded or None,
                      protocol=value.get("protocol"), protocol_type=value.get("protocolType"),
                      in_force=True if in_force else None,
                      member_list=[{"member": mid, "instance": m.get("groupInstanceId"), "client_id": m.get("clientId"),
                                    "client_host": m.get("clientHost"), "session_timeout_ms": m.get("sessionTimeout"),
                                    "rebalance_timeout_ms": m.get("rebalanceTimeout")}
                                   for mid, m in members.items()])
        if members:
            self.out.emit(rec, "assignment", generation=gen, leader=value.get("leader"), assignments=assignments,
                          in_force=True if in_force else None)

    def _new_generation(self, rec, value, members, assignments) -> None:
        gen = value.get("generation")
        skipped = list(range(self.generation + 1, gen)) if self.generation is not None else []
        old_by_inst = {m.get("groupInstanceId"): mid for mid, m in self.members.items() if m.get("groupInstanceId")}
        replaced = {}
        for mid, m in members.items():
            old = old_by_inst.get(m.get("groupInstanceId"))
            if old is not None and old != mid and old not in members:
                replaced[old] = mid
        for mid, m in self.members.items():
            if mid not in members and mid not in replaced:
                self.out.emit(rec, "member_removed", inferred=True, member=mid, instance=m.get("groupInstanceId"),
                              client_id=m.get("clientId"), reason=REMOVED_REASON.format(gen=gen))
        for old, mid in replaced.items():
            inst = members[mid].get("groupInstanceId")
            self.out.emit(rec, "static_member_replaced", inferred=True, member=mid, old_member=old, instance=inst,
                          in_rebalance=True, reason=f"inferred: instance {inst} has member id {mid} in generation {gen}'s record, "
                                 f"{old} before")
        for mid, m in members.items():
            if mid not in self.members and mid not in replaced.values():
                self.out.emit(rec, "member_joined", inferred=True, member=mid, instance=m.get("groupInstanceId"),
                              client_id=m.get("clientId"), new=True,
                              reason=f"inferred: first in generation {gen}'s record")
        self._generation(rec, value, members, assignments, unrecorded=skipped)

    def _same_generation(self, rec, members, assignments) -> None:
        """The same generation rewritten: a static member replaced without a rebalance (its new member id
        keeps the old one's assignment; GroupMetadataManager's static member rejoin)."""
        old_by_inst = {m.get("groupInstanceId"): mid for mid, m in self.members.items() if m.get("groupInstanceId")}
        for mid, m in members.items():
            old = old_by_inst.get(m.get("groupInstanceId"))
            if mid not in self.members and old is not None and old not in members:
                self.out.emit(rec, "static_member_replaced", member=mid, old_member=old, instance=m.get("groupInstanceId"),
                              generation=self.generation,
                              reason=f"instance {m.get('groupInstanceId')} rejoined as {mid} in generation "
                                     f"{self.generation} (no rebalance)")
        if assignments != self.assignments and members:
            self.out.emit(rec, "assignment", generation=self.generation, assignments=assignments)
