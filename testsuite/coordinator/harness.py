"""Test driver for the sans-IO coordinator: builds requests, feeds them in at a virtual time, keeps
every response by token and encodes each one at its request version (so a field set at a version
where it does not exist fails the test). Member ids are deterministic: new_uuid yields u1, u2, ...
"""

from __future__ import annotations

import itertools
import struct
import uuid

from kcodec.generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from kcodec.generated.delete_groups import DeleteGroupsRequest
from kcodec.generated.describe_groups import DescribeGroupsRequest
from kcodec.generated.heartbeat import HeartbeatRequest
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.leave_group import LeaveGroupRequest, MemberIdentity
from kcodec.generated.list_groups import ListGroupsRequest
from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)
from kcodec.generated.offset_delete import (OffsetDeleteRequest, OffsetDeleteRequestPartition,
                                            OffsetDeleteRequestTopic)
from kcodec.generated.offset_fetch import (OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic,
                                           OffsetFetchRequestTopics)
from kcodec.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from shim.coordinator import CoordinatorConfig, GroupCoordinator
from shim.coordinator.metadata import TopicCatalog
from shim.coordinator import errors as E

JOIN, SYNC, HEARTBEAT, LEAVE = 11, 14, 12, 13
DESCRIBE, LIST, DELETE, COMMIT, FETCH, OFFSET_DELETE = 15, 16, 42, 8, 9, 47

PROTOS = (("range", b"meta-range"), ("roundrobin", b"meta-rr"))
SESSION, REBALANCE, DELAY = 10_000, 30_000, 3_000


def subscription(*topics: str, version: int = 1) -> bytes:
    """Consumer-protocol subscription metadata: int16 version, then the struct at that version."""
    return struct.pack(">h", version) + ConsumerProtocolSubscription(topics=list(topics)).encode(version)


def java_member_order(member_ids: list[str], table: int = 16) -> list[str]:
    """The iteration order of a java.util.HashMap of these member ids (inserted in this order) with
    `table` buckets: by String.hashCode spread, then insertion. The broker keeps a classic group's
    members in such a map."""
    def bucket(mid: str) -> int:
        h = 0
        b = mid.encode("utf-16-be")
        for i in range(0, len(b), 2):
            h = (31 * h + int.from_bytes(b[i:i + 2], "big")) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (table - 1)
    return sorted(member_ids, key=bucket)


class RecordingCoordinator(GroupCoordinator):
    """The coordinator keeping a copy of every result's records in `written`, in order: what the
    state topic holds after those calls (the runtime appends each result's records)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.written: list = []

    def result(self):
        out = super().result()
        self.written += out.records
        return out


class Harness:
    def __init__(self, topics: dict[str, int] | None = None, **config):
        self._uuids = itertools.count(1)
        self._tokens = itertools.count(1)
        self.topics = TopicCatalog(topics)
        self.c = RecordingCoordinator(CoordinatorConfig(**config), now_ms=0, new_uuid=lambda: f"u{next(self._uuids)}",
                                  topics=self.topics)
        self.now = 0
        self.pending: dict[int, tuple[int, int]] = {}
        self.answers: dict[int, object] = {}
        self._asked: list[str] = []

    # ------------------------------------------------------------------ plumbing
    def send(self, api: int, version: int, req, client_id: str = "client", client_host: str = "/10.1.1.1",
             topic_filter=None) -> int:
        token = next(self._tokens)
        self.pending[token] = (api, version)
        self._collect(self.c.handle(api, version, req, token, client_id=client_id, client_host=client_host,
                                    now_ms=self.now, topic_filter=topic_filter))
        return token

    def _collect(self, out) -> None:
        for r in out.responses:
            assert r.token in self.pending, f"token {r.token} answered twice"
            api, version = self.pending.pop(r.token)
            r.body.encode(version)
            self.answers[r.token] = r.body

    def answer(self, token: int):
        """The response for token, or None while the request is parked."""
        return self.answers.get(token)

    def answered(self, token: int):
        body = self.answers.get(token)
        assert body is not None, f"request {token} still parked at t={self.now}"
        return body

    def advance_to(self, t: int) -> None:
        assert t >= self.now
        self.now = t
        self._collect(self.c.tick(t))

    def advance(self, ms: int) -> None:
        self.advance_to(self.now + ms)

    def group(self, gid: str = "g"):
        return self.c.groups.get(gid)

    def immediate(self, api: int, version: int, req, **kw):
        return self.answered(self.send(api, version, req, **kw))

    # ------------------------------------------------------------------ group membership APIs
    def join(self, gid: str = "g", member_id: str = "", *, instance: str | None = None, v: int = 9,
             protocols=PROTOS, session: int = SESSION, rebalance: int = REBALANCE, ptype: str = "consumer",
             client_id: str = "client") -> int:
        req = JoinGroupRequest(group_id=gid, session_timeout_ms=session,
                               rebalance_timeout_ms=rebalance if v >= 1 else -1, member_id=member_id,
                               group_instance_id=instance if v >= 5 else None, protocol_type=ptype,
                               protocols=[JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
                               reason="test" if v >= 8 else None)
        return self.send(JOIN, v, req, client_id=client_id)

    def join_dynamic(self, gid: str = "g", v: int = 9, **kw) -> tuple[str, int]:
        """KIP-394 two-step join: returns (member id, token of the parked second JoinGroup)."""
        first = self.answered(self.join(gid, v=v, **kw))
        assert first.error_code == E.MEMBER_ID_REQUIRED
        return first.member_id, self.join(gid, first.member_id, v=v, **kw)

    def sync(self, gid: str, member_id: str, generation: int, *, instance: str | None = None, v: int = 5,
             assignments: dict[str, bytes] | None = None, ptype: str | None = "consumer",
             pname: str | None = "range") -> int:
        req = SyncGroupRequest(group_id=gid, generation_id=generation, member_id=member_id,
                               group_instance_id=instance if v >= 3 else None,
                               protocol_type=ptype if v >= 5 else None, protocol_name=pname if v >= 5 else None,
                               assignments=[SyncGroupRequestAssignment(member_id=k, assignment=a)
                                            for k, a in (assignments or {}).items()])
        return self.send(SYNC, v, req)

    def heartbeat(self, gid: str, member_id: str, generation: int, *, instance: str | None = None, v: int = 4):
        req = HeartbeatRequest(group_id=gid, generation_id=generation, member_id=member_id,
                               group_instance_id=instance if v >= 3 else None)
        return self.immediate(HEARTBEAT, v, req)

    def leave(self, gid: str, *members: tuple[str, str | None], v: int = 5):
        if v <= 2:
            (member_id, _), = members
            return self.immediate(LEAVE, v, LeaveGroupRequest(group_id=gid, member_id=member_id))
        return self.immediate(LEAVE, v, LeaveGroupRequest(group_id=gid, members=[
            MemberIdentity(member_id=mid, group_instance_id=iid, reason="bye" if v >= 5 else None)
            for mid, iid in members]))

    # ------------------------------------------------------------------ admin and offsets
    def describe(self, *gids: str, v: int = 6):
        return self.immediate(DESCRIBE, v, DescribeGroupsRequest(groups=list(gids)))

    def list_groups(self, v: int = 5, states=None, types=None):
        return self.immediate(LIST, v, ListGroupsRequest(states_filter=list(states or []) if v >= 4 else [],
                                                         types_filter=list(types or []) if v >= 5 else []))

    def delete(self, *gids: str, v: int = 2):
        return self.immediate(DELETE, v, DeleteGroupsRequest(groups_names=list(gids)))

    def commit(self, gid: str, offsets: dict[tuple[str, int], int], *, generation: int = -1, member_id: str = "",
               instance: str | None = None, v: int = 9, metadata: str | dict = "", retention: int = -1):
        topics: dict[str, list] = {}
        self._asked = [t for t, _ in offsets]
        for (topic, part), off in offsets.items():
            md = metadata.get((topic, part), "") if isinstance(metadata, dict) else metadata
            topics.setdefault(topic, []).append(OffsetCommitRequestPartition(
                partition_index=part, committed_offset=off, committed_leader_epoch=7 if v >= 6 else -1,
                committed_metadata=md))
        req = OffsetCommitRequest(group_id=gid, generation_id_or_member_epoch=generation, member_id=member_id,
                                  group_instance_id=instance if v >= 7 else None,
                                  retention_time_ms=retention if v <= 4 else -1,
                                  topics=[OffsetCommitRequestTopic(name=t, topic_id=self.topic_id(t), partitions=ps)
                                          for t, ps in topics.items()])
        body = self.immediate(COMMIT, v, req)
        return {(self.topic_name(t, v), p.partition_index): p.error_code for t in body.topics for p in t.partitions}

    def topic_id(self, name: str):
        """The topic's id in the catalog; a made-up id for a topic the catalog does not know."""
        info = self.topics.get(name)
        return info.topic_id if info is not None else uuid.uuid5(uuid.NAMESPACE_OID, "unknown:" + name)

    def topic_name(self, t, v: int) -> str:
        """Name of a response topic: v10 answers carry ids only."""
        if v < 10:
            return t.name
        info = self.topics.topic(t.topic_id)
        if info is not None:
            return info.name
        return next((n for n in self._asked if self.topic_id(n) == t.topic_id), "?")

    def fetch(self, gid: str, topics: dict[str, list[int]] | None, v: int = 8):
        """Returns (group error, {(topic, partition): (offset, leader epoch, metadata, error)})."""
        if v >= 8:
            self._asked = list(topics or ())
            req = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=gid, topics=None if topics is None else [
                OffsetFetchRequestTopics(name=t, topic_id=self.topic_id(t), partition_indexes=ps)
                for t, ps in topics.items()])])
            body = self.immediate(FETCH, v, req)
            (grp,) = body.groups
            return grp.error_code, {(self.topic_name(t, v), p.partition_index): (p.committed_offset, p.committed_leader_epoch,
                                                                  p.metadata, p.error_code)
                                    for t in grp.topics for p in t.partitions}
        req = OffsetFetchRequest(group_id=gid, topics=None if topics is None else [
            OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in topics.items()])
        body = self.immediate(FETCH, v, req)
        return body.error_code, {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch,
                                                               p.metadata, p.error_code)
                                 for t in body.topics for p in t.partitions}

    def offset_delete(self, gid: str, topics: dict[str, list[int]]):
        body = self.immediate(OFFSET_DELETE, 0, OffsetDeleteRequest(group_id=gid, topics=[
            OffsetDeleteRequestTopic(name=t, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in ps])
            for t, ps in topics.items()]))
        return body.error_code, {(t.name, p.partition_index): p.error_code for t in body.topics for p in t.partitions}

    # ------------------------------------------------------------------ composite setups
    def stable_group(self, gid: str = "g", n: int = 2, *, instances: list[str | None] | None = None,
                     v: int = 9, protocols=PROTOS, session: int = SESSION, rebalance: int = REBALANCE,
                     assign=lambda mid: b"A:" + mid.encode()) -> tuple[list[str], int]:
        """n members join at the current time (dynamic ones via MEMBER_ID_REQUIRED), the initial rebalance
        runs its course, everybody syncs, the leader (the first) assigning `assign(member_id)` to each.
        Returns (member ids in join order, generation)."""
        instances = instances or [None] * n
        tokens = []
        for inst in instances:
            if inst is None:
                tokens.append(self.join_dynamic(gid, v=v, protocols=protocols, session=session,
                                                rebalance=rebalance)[1])
            else:
                tokens.append(self.join(gid, instance=inst, v=v, protocols=protocols, session=session,
                                        rebalance=rebalance))
        start = self.now
        self.advance_to(start + DELAY)
        if self.answer(tokens[0]) is None:
            self.advance_to(start + 2 * DELAY)
        joins = [self.answered(t) for t in tokens]
        assert all(j.error_code == E.NONE for j in joins), [j.error_code for j in joins]
        ids = [j.member_id for j in joins]
        gen = joins[0].generation_id
        leader = joins[0].leader
        pname = joins[0].protocol_name if v >= 7 else self.group(gid).protocol_name
        syncs = [self.sync(gid, mid, gen, instance=inst, pname=pname,
                           assignments={m: assign(m) for m in ids} if mid == leader else None)
                 for mid, inst in zip(ids, instances)]
        for t in syncs:
            assert self.answered(t).error_code == E.NONE
        assert self.group(gid).state == "Stable"
        return ids, gen
