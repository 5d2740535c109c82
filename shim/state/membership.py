"""kshim instances as members of one classic group on the real broker, deciding who owns which
partition of the state topic (sans-IO: no sockets, no clock; the asyncio driver is member_client.py).

Each kshim is a classic-protocol client of the broker's own group coordinator: FindCoordinator,
JoinGroup (MEMBER_ID_REQUIRED round first), SyncGroup, then Heartbeat every session/3 until the
broker says REBALANCE_IN_PROGRESS (rejoin) or the member is gone (UNKNOWN_MEMBER_ID /
ILLEGAL_GENERATION: drop every partition at once - another instance may hold them now). The group is
`<state topic>.owners`, protocol type "kshim", protocol "state-partitions-v1".

Member metadata (JSON): how clients reach this instance (advertised host, bootstrap port, the port
of each broker node) and the partitions it owned with the generation it owned them in. The leader
assigns the partitions evenly and stickily (`assign`) and sends every member the whole table
(partition -> owner, owner -> addresses), so any instance can answer FindCoordinator for any group.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

from kcodec.generated.find_coordinator import FindCoordinatorRequest
from kcodec.generated.heartbeat import HeartbeatRequest
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.leave_group import LeaveGroupRequest, MemberIdentity
from kcodec.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from kcodec.protocol import ApiKey, Error

FIND_COORDINATOR, JOIN_GROUP = ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP
HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP
WANTED = {FIND_COORDINATOR: 4, JOIN_GROUP: 9, HEARTBEAT: 4, LEAVE_GROUP: 5, SYNC_GROUP: 5}
PROTOCOL_TYPE, PROTOCOL = "kshim", "state-partitions-v1"
NONE, COORDINATOR_LOAD_IN_PROGRESS = Error.NONE, Error.COORDINATOR_LOAD_IN_PROGRESS
COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = Error.COORDINATOR_NOT_AVAILABLE, Error.NOT_COORDINATOR
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID = Error.ILLEGAL_GENERATION, Error.UNKNOWN_MEMBER_ID
REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED = Error.REBALANCE_IN_PROGRESS, Error.MEMBER_ID_REQUIRED
COORDINATOR_MOVED = (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR)
RETRY_BACKOFF_MS = 500

FIND, JOIN, SYNC, STABLE, STOPPED = "find", "join", "sync", "stable", "stopped"


def group_name(state_topic: str) -> str:
    return f"{state_topic}.owners"


@dataclass(frozen=True)
class Peer:
    """How clients reach one kshim instance."""
    host: str
    port: int                          # bootstrap listener
    broker_base: int                   # node n on broker_base + n unless `ports` says otherwise
    ports: tuple[tuple[int, int], ...] = ()

    def port_for(self, node: int) -> int:
        return dict(self.ports).get(node, self.broker_base + node)

    def to_json(self) -> dict:
        return {"host": self.host, "port": self.port, "base": self.broker_base,
                "ports": {str(n): p for n, p in self.ports}}

    @classmethod
    def from_json(cls, d: dict) -> "Peer":
        return cls(str(d["host"]), int(d["port"]), int(d["base"]),
                   tuple(sorted((int(n), int(p)) for n, p in (d.get("ports") or {}).items())))


@dataclass
class Assignment:
    """The ownership table as this instance knows it: `mine` the partitions it must serve."""
    generation: int
    member_id: str
    mine: frozenset[int]
    owners: dict[int, Peer] = field(default_factory=dict)


@dataclass
class Request:
    api_key: int
    build: Callable[[int], object]     # the request body at the version the driver negotiated
    timeout_s: float
    to_coordinator: bool               # False: any broker (FindCoordinator)


def assign(partitions: int, claims: dict[str, tuple[int, list[int]]]) -> dict[str, list[int]]:
    """partition lists per member: as even as possible (sizes differ by at most one), keeping each
    member's previous partitions where it can. `claims`: member -> (generation of its claim, the
    partitions it owned then); a partition claimed twice goes to the newest claim, then the lowest
    member id. Deterministic."""
    members = sorted(claims)
    if not members:
        return {}
    best: dict[int, str] = {}
    for m in sorted(members, key=lambda m: (-claims[m][0], m)):
        for p in claims[m][1]:
            if 0 <= p < partitions and p not in best:
                best[p] = m
    kept = {m: sorted(p for p, o in best.items() if o == m) for m in members}
    base, extra = divmod(partitions, len(members))
    order = sorted(members, key=lambda m: (-len(kept[m]), m))
    target = {m: base + (1 if i < extra else 0) for i, m in enumerate(order)}
    out = {m: kept[m][:target[m]] for m in members}
    taken = {p for ps in out.values() for p in ps}
    free = [p for p in range(partitions) if p not in taken]
    for m in members:
        while len(out[m]) < target[m]:
            out[m].append(free.pop(0))
        out[m].sort()
    return out


class Membership:
    """One instance's membership. Drive it with `next_request(now)` (send it, then feed the answer to
    `on_response` or a lost connection to `on_failure`), wake at `deadline()`, read new ownership with
    `take_assignment()`."""

    def __init__(self, group: str, partitions: int, me: Peer, session_timeout_ms: int = 10000, now_ms: int = 0):
        self.group, self.partitions, self.me = group, partitions, me
        self.session_timeout_ms = session_timeout_ms
        self.state = FIND
        self.member_id = ""
        self.generation = -1
        self.coordinator: tuple[int, str, int] | None = None     # node id, host, port
        self.owned: frozenset[int] = frozenset()
        self.owned_generation = -1
        self.owners: dict[int, Peer] = {}
        self._not_before = now_ms
        self._inflight: int | None = None
        self._last_ok = now_ms
        self._heartbeat_at = 0
        self._assignment: Assignment | None = None
        self._pending_sync: list[SyncGroupRequestAssignment] = []

    # ------------------------------------------------------------------ driving
    def next_request(self, now_ms: int) -> Request | None:
        self._check_expiry(now_ms)
        if self._inflight is not None or self.state == STOPPED or now_ms < self._not_before:
            return None
        if self.state == FIND:
            group = self.group
            req = Request(FIND_COORDINATOR, lambda v: FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
                          if v >= 4 else FindCoordinatorRequest(key=group, key_type=0), 10.0, False)
        elif self.state == JOIN:
            body = JoinGroupRequest(
                group_id=self.group, session_timeout_ms=self.session_timeout_ms,
                rebalance_timeout_ms=self.session_timeout_ms, member_id=self.member_id, group_instance_id=None,
                protocol_type=PROTOCOL_TYPE, protocols=[JoinGroupRequestProtocol(name=PROTOCOL,
                                                                                 metadata=self._metadata())])
            req = Request(JOIN_GROUP, lambda v: body, self.session_timeout_ms / 1000 + 10, True)
        elif self.state == SYNC:
            group, gen, member, assignments = self.group, self.generation, self.member_id, self._pending_sync
            req = Request(SYNC_GROUP, lambda v: SyncGroupRequest(
                group_id=group, generation_id=gen, member_id=member, protocol_type=PROTOCOL_TYPE if v >= 5 else None,
                protocol_name=PROTOCOL if v >= 5 else None, assignments=assignments),
                self.session_timeout_ms / 1000 + 10, True)
        else:
            if now_ms < self._heartbeat_at:
                return None
            body = HeartbeatRequest(group_id=self.group, generation_id=self.generation, member_id=self.member_id)
            req = Request(HEARTBEAT, lambda v: body, self.session_timeout_ms / 1000, True)
        self._inflight = req.api_key
        return req

    def deadline(self) -> int | None:
        """When `next_request` may have something new to send (None: only after an answer)."""
        if self.state == STOPPED:
            return None
        times = []
        if self._inflight is None:
            times.append(self._heartbeat_at if self.state == STABLE else self._not_before)
        if self.owned:
            times.append(self._last_ok + self.session_timeout_ms)
        return max(min(times), 0) if times else None

    def on_failure(self, now_ms: int) -> None:
        """The request could not be sent or answered (connection lost, timeout)."""
        self._inflight = None
        self.coordinator = None
        if self.state != STOPPED:
            self.state = FIND
        self._not_before = now_ms + RETRY_BACKOFF_MS
        self._check_expiry(now_ms)

    def on_response(self, resp, now_ms: int) -> None:
        api_key, self._inflight = self._inflight, None
        if self.state == STOPPED:
            return
        if api_key == FIND_COORDINATOR:
            return self._found(resp, now_ms)
        err = resp.error_code
        if err in COORDINATOR_MOVED:
            self.coordinator, self.state = None, FIND
            return
        if api_key == JOIN_GROUP:
            self._joined(resp, err, now_ms)
        elif api_key == SYNC_GROUP:
            self._synced(resp, err, now_ms)
        elif api_key == HEARTBEAT:
            self._heartbeat_answered(err, now_ms)

    def take_assignment(self) -> Assignment | None:
        a, self._assignment = self._assignment, None
        return a

    def leave_request(self) -> Request | None:
        """LeaveGroup for a clean stop (None when not a member); the machine stops either way."""
        member, self.state = self.member_id, STOPPED
        if not member or self.coordinator is None:
            return None
        group = self.group
        return Request(LEAVE_GROUP, lambda v: LeaveGroupRequest(group_id=group, members=[MemberIdentity(
            member_id=member, reason="kshim stopping" if v >= 5 else None)]) if v >= 3
            else LeaveGroupRequest(group_id=group, member_id=member), 5.0, True)

    # ------------------------------------------------------------------ answers
    def _found(self, resp, now_ms: int) -> None:
        c = resp.coordinators[0] if getattr(resp, "coordinators", None) else resp
        if c.error_code != NONE or c.node_id < 0:
            self._not_before = now_ms + RETRY_BACKOFF_MS
            return
        self.coordinator = (c.node_id, c.host, c.port)
        self.state = JOIN

    def _joined(self, resp, err: int, now_ms: int) -> None:
        if err == MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            return
        if err == UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self._lose_all()
            return
        if err != NONE:
            self._not_before = now_ms + RETRY_BACKOFF_MS
            return
        self._last_ok = now_ms
        self.member_id, self.generation = resp.member_id, resp.generation_id
        self._pending_sync = []
        if resp.leader == resp.member_id:
            self._pending_sync = self._leader_assignments(resp.members)
        self.state = SYNC

    def _synced(self, resp, err: int, now_ms: int) -> None:
        if err != NONE:
            if err in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
                if err == UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                self._lose_all()
            self.state = JOIN
            return
        self._last_ok = now_ms
        table = json.loads(bytes(resp.assignment).decode()) if resp.assignment else {"owners": {}, "peers": {}}
        peers = {mid: Peer.from_json(p) for mid, p in table["peers"].items()}
        self.owners = {int(p): peers[mid] for p, mid in table["owners"].items() if mid in peers}
        self.owned = frozenset(int(p) for p, mid in table["owners"].items() if mid == self.member_id)
        self.owned_generation = self.generation
        self._assignment = Assignment(self.generation, self.member_id, self.owned, dict(self.owners))
        self.state = STABLE
        self._heartbeat_at = now_ms + self.session_timeout_ms // 3

    def _heartbeat_answered(self, err: int, now_ms: int) -> None:
        if err in (NONE, REBALANCE_IN_PROGRESS):
            self._last_ok = now_ms
        if err == NONE:
            self._heartbeat_at = now_ms + self.session_timeout_ms // 3
            return
        if err in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            if err == UNKNOWN_MEMBER_ID:
                self.member_id = ""
            self._lose_all()
        elif err != REBALANCE_IN_PROGRESS:
            self._not_before = now_ms + RETRY_BACKOFF_MS
            self._heartbeat_at = now_ms + RETRY_BACKOFF_MS
            return
        self.state = JOIN          # keep serving what we own until the new assignment

    def _check_expiry(self, now_ms: int) -> None:
        """Without a successful answer for a session timeout, the broker has expelled us: others may
        own our partitions by now, so stop serving them (a join in flight keeps us a member)."""
        if self.owned and self._inflight != JOIN_GROUP and now_ms - self._last_ok > self.session_timeout_ms:
            self._lose_all()

    def _lose_all(self) -> None:
        if self.owned:
            self.owned = frozenset()
            self._assignment = Assignment(self.generation, self.member_id, self.owned,
                                          {p: o for p, o in self.owners.items() if o != self.me})

    # ------------------------------------------------------------------ metadata and the leader's table
    def _metadata(self) -> bytes:
        return json.dumps({"v": 1, **self.me.to_json(), "owned": sorted(self.owned),
                           "gen": self.owned_generation}).encode()

    def _leader_assignments(self, members) -> list[SyncGroupRequestAssignment]:
        claims, peers = {}, {}
        for m in members:
            try:
                meta = json.loads(bytes(m.metadata).decode())
                peers[m.member_id] = Peer.from_json(meta).to_json()
                claims[m.member_id] = (int(meta.get("gen", -1)), [int(p) for p in meta.get("owned", [])])
            except (ValueError, KeyError, TypeError):
                continue                  # not a kshim we can read: it gets nothing
        plan = assign(self.partitions, claims)
        table = json.dumps({"owners": {str(p): mid for mid, ps in plan.items() for p in ps},
                            "peers": peers}).encode()
        return [SyncGroupRequestAssignment(member_id=m.member_id, assignment=table) for m in members]
