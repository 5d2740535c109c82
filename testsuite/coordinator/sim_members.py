"""The simulated classic members of the coordinator simulation (sim.py): the scenario (Mix), each
client incarnation (Member), the client-side view of a group (GroupSim), and MemberBehaviour, what a
member does: JoinGroup / SyncGroup / Heartbeat as the Java consumer's classic loop does, the
leader's range-style assignment, and the churn events (join, leave, crash, slow, static restart).

MemberBehaviour is a mixin of sim.Sim, which provides the event queue and clock (`at`, `now`,
`send`), the random source (`rng`), the scenario (`mix`), `stats` and `fail`."""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field

from kcodec.generated.heartbeat import HeartbeatRequest
from kcodec.generated.join_group import JoinGroupRequest
from kcodec.generated.leave_group import LeaveGroupRequest, MemberIdentity
from kcodec.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from shim.coordinator import errors as E

JOIN, SYNC, HEARTBEAT, LEAVE = 11, 14, 12, 13
# the request versions a client speaking JoinGroup vN uses for the other group APIs
SYNC_V = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 5, 8: 5, 9: 5}
HB_V = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4, 8: 4, 9: 4}
LEAVE_V = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4, 8: 5, 9: 5}
KINDS = ("join", "leave", "crash", "slow", "restart")


class InvariantViolation(AssertionError):
    pass


@dataclass
class Mix:
    """One scenario: population, timeouts, churn."""
    members: int = 200
    groups: int = 1
    static_fraction: float = 0.0
    old_versions: float = 0.1          # dynamic members on JoinGroup v0-3 (added at once, no KIP-394)
    partitions: int = 256
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = 30_000
    start_window_ms: int = 2_000
    latency_ms: tuple[int, int] = (1, 5)
    churn: int = 0                     # churn events after the first convergence
    churn_window_ms: int = 60_000
    weights: dict = field(default_factory=lambda: {k: 1 for k in KINDS})
    check_encode: bool = True          # every response must encode at its request version


class Member:
    """One client incarnation."""
    __slots__ = ("gs", "name", "instance", "member_id", "generation", "state", "alive", "jv", "protocols",
                 "hb_epoch", "slow", "assignment", "protocol_name", "healthy", "prev_id")

    def __init__(self, gs: "GroupSim", name: str, instance: str | None, jv: int, protocols: list):
        self.gs, self.name, self.instance, self.jv, self.protocols = gs, name, instance, jv, protocols
        self.member_id = ""
        self.generation = -1
        self.state = "idle"            # idle | joining | syncing | stable | waiting (slow) | gone
        self.alive = True
        self.hb_epoch = 0
        self.slow = False
        self.assignment: bytes | None = None
        self.protocol_name: str | None = None
        self.healthy = False           # stable and a heartbeat of this generation answered NONE
        self.prev_id = ""              # member id of the previous incarnation (static restarts)

    def identity(self, member_id: str | None = None) -> str:
        return self.instance if self.instance is not None else (member_id or self.member_id)


class GroupSim:
    """What the simulation knows about one group (all client-side, plus invariant bookkeeping)."""

    def __init__(self, gid: str):
        self.gid = gid
        self.live: dict[str, Member] = {}             # name -> live member
        self.stable_count: Counter = Counter()          # generation -> live members stable in it
        self.healthy_count: Counter = Counter()         # generation -> of those, heartbeating fine
        self.leaders: dict[int, str] = {}               # generation -> leader identity
        self.assignments: dict[int, dict[str, bytes]] = {}   # generation -> member id -> bytes
        self.alias: dict[str, str] = {}                 # replacing static member id -> replaced id
        self.owners: dict[int, dict[int, str]] = {}     # generation -> partition -> identity
        self.last_generation = 0
        self.instances = 0


class MemberBehaviour:
    """The members' side of the simulation (a mixin of sim.Sim)."""

    # ------------------------------------------------------------------ members
    def new_member(self, gs: GroupSim, static: bool, instance: str | None = None) -> Member:
        self._names += 1
        name = f"c{self._names}"
        if static:
            if instance is None:
                gs.instances += 1
                instance = f"{gs.gid}-i{gs.instances}"
            jv = self.rng.randint(5, 9)
        else:
            jv = self.rng.randint(0, 3) if self.rng.random() < self.mix.old_versions else self.rng.randint(4, 9)
        protocols = self._dynamic_protocols if self.rng.random() < 0.7 else self._dynamic_protocols_rr
        m = Member(gs, name, instance, jv, protocols)
        gs.live[name] = m
        return m

    def set_state(self, m: Member, state: str, generation: int | None = None) -> None:
        if m.state == "stable":
            m.gs.stable_count[m.generation] -= 1
            if m.healthy:
                m.healthy = False
                m.gs.healthy_count[m.generation] -= 1
        if generation is not None:
            m.generation = generation
        m.state = state
        if state == "stable":
            m.gs.stable_count[m.generation] += 1

    def start_join(self, m: Member) -> None:
        if not m.alive:
            return
        m.hb_epoch += 1                 # no heartbeats while a JoinGroup is in flight
        self.set_state(m, "joining")
        v = m.jv
        req = JoinGroupRequest(
            group_id=m.gs.gid, session_timeout_ms=self.mix.session_timeout_ms,
            rebalance_timeout_ms=self.mix.rebalance_timeout_ms if v >= 1 else -1, member_id=m.member_id,
            group_instance_id=m.instance if v >= 5 else None, protocol_type="consumer",
            protocols=m.protocols, reason="sim" if v >= 8 else None)
        self.send(m, JOIN, v, req)

    def rejoin(self, m: Member, reset_id: bool = False) -> None:
        if reset_id:
            m.member_id = ""
        if m.state in ("joining", "waiting"):
            return
        if m.slow:
            m.slow = False
            self.set_state(m, "waiting")
            delay = int(self.max_rebalance * (1.2 + 0.3 * self.rng.random()))
            self.stats["slow_rejoin"] += 1
            self.at(self.now + delay, self._slow_rejoin, m)
            self.schedule_heartbeat(m)      # the heartbeat thread keeps going while the app is busy
        else:
            self.start_join(m)

    def _slow_rejoin(self, m: Member) -> None:
        if m.alive and m.state == "waiting":
            self.start_join(m)

    def on_join(self, m: Member, body) -> None:
        err = body.error_code
        if err == E.MEMBER_ID_REQUIRED:
            m.member_id = body.member_id
            self.stats["member_id_required"] += 1
            return self.start_join(m)
        if err == E.NONE:
            if m.prev_id and body.member_id != m.prev_id:
                m.gs.alias[body.member_id] = m.prev_id     # a replacement inherits the assignment
            m.member_id = body.member_id
            m.protocol_name = body.protocol_name
            self.set_state(m, "syncing", body.generation_id)
            gs, gen = m.gs, body.generation_id
            assignments = []
            if body.leader == body.member_id:
                ident = m.identity()
                prev = gs.leaders.setdefault(gen, ident)
                if prev != ident:
                    self.fail(f"{gs.gid} generation {gen}: two leaders {prev} and {ident}")
                if not body.skip_assignment:
                    assignments = self.assign(gs, gen, body.members)
                else:
                    self.stats["skip_assignment"] += 1
            self.send_sync(m, assignments)
            self.schedule_heartbeat(m)
            return
        if err == E.UNKNOWN_MEMBER_ID:
            self.stats["join_unknown_member"] += 1
            self.set_state(m, "idle")
            m.member_id = ""
            return self.at(self.now + 50, self.start_join, m)
        self.fail(f"{m.name}: unexpected JoinGroup error {err}")

    def assign(self, gs: GroupSim, gen: int, members: list) -> list:
        """Range-style: members sorted by instance id (else member id; before JoinGroup v5 the leader sees
        no instance ids), P partitions split in contiguous runs."""
        keyed = sorted(((x.group_instance_id or x.member_id), x.member_id) for x in members)
        n, p = len(keyed), self.mix.partitions
        per, extra = divmod(p, n)
        out, table, start = [], {}, 0
        for i, (ident, mid) in enumerate(keyed):
            count = per + (1 if i < extra else 0)
            data = struct.pack(">ii", start, count)
            start += count
            table[mid] = data
            out.append(SyncGroupRequestAssignment(member_id=mid, assignment=data))
        gs.assignments.setdefault(gen, table)
        return out

    def send_sync(self, m: Member, assignments: list) -> None:
        v = SYNC_V[m.jv]
        req = SyncGroupRequest(group_id=m.gs.gid, generation_id=m.generation, member_id=m.member_id,
                               group_instance_id=m.instance if v >= 3 else None,
                               protocol_type="consumer" if v >= 5 else None,
                               protocol_name=m.protocol_name if v >= 5 else None, assignments=assignments)
        self.send(m, SYNC, v, req, extra=m.generation)

    def on_sync(self, m: Member, body, gen: int) -> None:
        if m.state != "syncing" or m.generation != gen:
            return
        err = body.error_code
        if err == E.NONE:
            gs = m.gs
            table = gs.assignments.get(gen)
            if table is None:
                self.fail(f"{m.name}: SyncGroup NONE for generation {gen} before any leader assignment")
            ident = m.identity()
            mid = m.member_id
            while mid not in table and mid in gs.alias:
                mid = gs.alias[mid]
            want = table.get(mid, b"")
            if bytes(body.assignment) != want:
                self.fail(f"{m.name} ({ident}) gen {gen}: got {bytes(body.assignment)!r}, leader gave {want!r}")
            owners = gs.owners.setdefault(gen, {})
            if want:
                start, count = struct.unpack(">ii", want)
                for part in range(start, start + count):
                    prev = owners.setdefault(part, ident)
                    if prev != ident:
                        self.fail(f"{gs.gid} gen {gen}: partition {part} given to {prev} and {ident}")
            m.assignment = want
            self.set_state(m, "stable")
            self._prune(gs, gen)
            return
        if err in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
            self.stats[f"sync_err{err}"] += 1
            self.set_state(m, "idle")
            return self.rejoin(m)
        if err == E.UNKNOWN_MEMBER_ID:
            self.stats["sync_unknown_member"] += 1
            self.set_state(m, "idle")
            return self.rejoin(m, reset_id=True)
        self.fail(f"{m.name}: unexpected SyncGroup error {err}")

    def _prune(self, gs: GroupSim, gen: int) -> None:
        for table in (gs.assignments, gs.owners, gs.leaders):
            if len(table) > 8:
                for old in [k for k in table if k < gen - 4]:
                    del table[old]

    def schedule_heartbeat(self, m: Member) -> None:
        m.hb_epoch += 1
        self.at(self.now + self.mix.session_timeout_ms // 3, self._heartbeat, m, m.hb_epoch)

    def _heartbeat(self, m: Member, epoch: int) -> None:
        if not m.alive or epoch != m.hb_epoch or m.state not in ("syncing", "stable", "waiting") \
                or not m.member_id:
            return
        v = HB_V[m.jv]
        req = HeartbeatRequest(group_id=m.gs.gid, generation_id=m.generation, member_id=m.member_id,
                               group_instance_id=m.instance if v >= 3 else None)
        self.send(m, HEARTBEAT, v, req, extra=epoch)

    def on_heartbeat(self, m: Member, body, epoch: int) -> None:
        if epoch != m.hb_epoch:
            return
        err = body.error_code
        self.stats[f"hb{err}"] += 1
        if m.state == "waiting":        # busy application: keep heartbeating, rejoin later
            if err == E.UNKNOWN_MEMBER_ID:
                m.member_id = ""
                return
            if err == E.FENCED_INSTANCE_ID:
                self.fail(f"{m.name}: live member fenced")
            return self.schedule_heartbeat(m)
        if err == E.NONE:
            if m.state == "stable" and not m.healthy:
                m.healthy = True
                m.gs.healthy_count[m.generation] += 1
            return self.schedule_heartbeat(m)
        if err in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
            if m.state == "stable":
                self.set_state(m, "idle")
                return self.rejoin(m)
            return self.schedule_heartbeat(m) if m.state == "syncing" else None
        if err == E.UNKNOWN_MEMBER_ID:
            self.set_state(m, "idle")
            return self.rejoin(m, reset_id=True)
        self.fail(f"{m.name}: unexpected Heartbeat error {err}")

    # ------------------------------------------------------------------ churn
    def leave(self, m: Member) -> None:
        self.kill(m)
        if not m.member_id:
            return
        v = LEAVE_V[m.jv]
        if v >= 3:
            req = LeaveGroupRequest(group_id=m.gs.gid, members=[MemberIdentity(
                member_id=m.member_id, group_instance_id=m.instance, reason="sim leave" if v >= 5 else None)])
        else:
            req = LeaveGroupRequest(group_id=m.gs.gid, member_id=m.member_id)
        self.send(m, LEAVE, v, req)

    def kill(self, m: Member) -> None:
        if m.alive:
            self.set_state(m, "gone")
            m.alive = False
            m.gs.live.pop(m.name, None)

    def restart(self, m: Member) -> None:
        """Static member process restart: the old incarnation dies, a new one (member id "") comes back
        within the session timeout."""
        self.kill(m)
        down = int(self.mix.session_timeout_ms * (0.05 + 0.5 * self.rng.random()))
        self.at(self.now + down, self._reincarnate, m)

    def _reincarnate(self, old: Member) -> None:
        m = self.new_member(old.gs, True, old.instance)
        m.protocols, m.jv, m.prev_id = old.protocols, old.jv, old.member_id
        self.stats["restart"] += 1
        self.start_join(m)

    def churn_event(self) -> None:
        kinds = [k for k in KINDS if self.mix.weights.get(k)]
        kind = self.rng.choices(kinds, [self.mix.weights[k] for k in kinds])[0]
        gs = self.rng.choice(self.groups)
        if kind == "join":
            m = self.new_member(gs, self.rng.random() < self.mix.static_fraction)
            self.stats["ev_join"] += 1
            return self.start_join(m)
        candidates = [m for m in gs.live.values() if m.state != "gone"]
        if kind == "restart":
            candidates = [m for m in candidates if m.instance is not None and m.member_id]
        if len(candidates) <= 1:
            return
        m = self.rng.choice(candidates)
        self.stats[f"ev_{kind}"] += 1
        if kind == "leave":
            self.leave(m)
        elif kind == "crash":
            self.kill(m)
        elif kind == "slow":
            m.slow = True
        else:
            self.restart(m)
