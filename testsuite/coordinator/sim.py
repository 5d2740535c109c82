"""Seeded simulation of many classic-protocol members against one sans-IO GroupCoordinator.

Everything runs on a virtual clock: client actions sit in an event queue, the coordinator's own
timers are driven through `tick(next_deadline())`, and every random choice comes from one
`random.Random(seed)`, member ids from a counter-based `new_uuid` — so a (mix, seed) pair always
replays the same run.

Each simulated member follows the Java consumer's classic loop: JoinGroup (answering
MEMBER_ID_REQUIRED with a rejoin), SyncGroup (the leader computes a range-style assignment of
`partitions` over the member list it got, or sends none when told SkipAssignment), heartbeats every
session/3 while not joining, and a rejoin on REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION /
UNKNOWN_MEMBER_ID (the last one resets its member id). Churn events: joins, clean leaves, crashes
(the member goes silent), slow members (their rejoin comes later than the rebalance timeout),
restarts of static members within the session timeout (a new incarnation with member id "").

Invariants, checked as the run goes (InvariantViolation is raised at the first breach):
  - at most one leader identity (instance id, else member id) per group generation;
  - every member answered NONE by SyncGroup got exactly the leader's assignment for its generation;
  - no partition is delivered to two identities within one generation;
  - a static restart handled while the group is Stable (protocols unchanged) is answered at once
    with the current generation and does not bump it;
  - every request is answered exactly once, Join/Sync within rebalance timeout + initial delay;
  - group generations never decrease;
  - every `replay_every` steps and at the end, a fresh coordinator fed all the records written so
    far (replay()) has the same durable state as the live one (replay_check.py).
"""

from __future__ import annotations

import heapq
import random
import struct
from collections import Counter
from dataclasses import dataclass, field

from kcodec.generated.heartbeat import HeartbeatRequest
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.leave_group import LeaveGroupRequest, MemberIdentity
from kcodec.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from shim.coordinator import CoordinatorConfig, GroupCoordinator
from shim.coordinator import errors as E
from shim.coordinator.classic_group import STABLE

from .replay_check import assert_replay_agrees

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


class Sim:
    def __init__(self, mix: Mix, seed: int, config: CoordinatorConfig | None = None, replay_every: int = 1000):
        self.mix, self.seed = mix, seed
        self.replay_every = replay_every       # steps between replay checks (0: only at the end)
        self.rng = random.Random(seed)
        self._uuid_n = 0
        self.cfg = config or CoordinatorConfig()
        self.coord = GroupCoordinator(self.cfg, now_ms=0, new_uuid=self._uuid)
        self.now = 0
        self.q: list = []
        self._seq = 0
        self._tokens = 0
        self.pending: dict[int, tuple] = {}    # token -> (member, api, version, sent, extra)
        self.deadlines: list = []              # (deadline, token) for Join/Sync
        self.groups = [GroupSim(f"group-{i}") for i in range(mix.groups)]
        self.stats: Counter = Counter()
        self._names = 0
        self.max_rebalance = max(mix.rebalance_timeout_ms, mix.session_timeout_ms)
        self.answer_bound = self.max_rebalance + self.cfg.initial_rebalance_delay_ms + 4 * mix.latency_ms[1] + 1000
        self.steps = 0
        self.heartbeats = True         # converged() also waits for one good heartbeat per member
        self._dynamic_protocols = self._protocols(0)
        self._dynamic_protocols_rr = self._protocols(1)

    # ------------------------------------------------------------------ plumbing
    def _uuid(self) -> str:
        self._uuid_n += 1
        return f"{self.seed:x}-{self._uuid_n:08d}"

    def _protocols(self, variant: int) -> list:
        names = ["range", "roundrobin"] if variant == 0 else ["roundrobin", "range"]
        return [JoinGroupRequestProtocol(name=n, metadata=b"\x00\x00sub-" + n.encode()) for n in names]

    def at(self, t: int, fn, *args) -> None:
        self._seq += 1
        heapq.heappush(self.q, (t, self._seq, fn, args))

    def latency(self) -> int:
        lo, hi = self.mix.latency_ms
        return self.rng.randint(lo, hi)

    def fail(self, what: str) -> None:
        raise InvariantViolation(f"seed {self.seed} t={self.now}ms: {what}")

    def send(self, m: Member, api: int, version: int, req, extra=None) -> None:
        self._tokens += 1
        token = self._tokens
        self.pending[token] = (m, api, version, self.now, extra)
        if api in (JOIN, SYNC):
            heapq.heappush(self.deadlines, (self.now + self.answer_bound, token))
        self.stats[f"req{api}"] += 1
        self.at(self.now + self.latency(), self._arrive, token, api, version, req, m)

    def _arrive(self, token: int, api: int, version: int, req, m: Member) -> None:
        check = None
        if api == JOIN and not req.member_id and m.instance is not None:
            check = self._restart_precheck(m)
        out = self.coord.handle(api, version, req, token, client_id=m.name, client_host="/10.0.0.1",
                                now_ms=self.now)
        answered = self._outputs(out)
        if api in (HEARTBEAT, LEAVE) and token not in answered:
            self.fail(f"{m.name}: api {api} not answered at once")
        if check is not None:
            self._restart_postcheck(m, token, check, answered)

    def _outputs(self, out) -> dict:
        answered = {}
        for r in out:
            entry = self.pending.pop(r.token, None)
            if entry is None:
                self.fail(f"token {r.token} answered twice or never sent")
            m, api, version, sent, extra = entry
            if self.mix.check_encode:
                r.body.encode(version)
            answered[r.token] = r.body
            self.at(self.now + self.latency(), self._receive, m, api, version, r.body, extra)
        return answered

    def _receive(self, m: Member, api: int, version: int, body, extra) -> None:
        if not m.alive:
            return
        if api == JOIN:
            self.on_join(m, body)
        elif api == SYNC:
            self.on_sync(m, body, extra)
        elif api == HEARTBEAT:
            self.on_heartbeat(m, body, extra)

    # ------------------------------------------------------------------ driving the clock
    def run_until(self, t_end: int, stop=None) -> bool:
        coord, q = self.coord, self.q
        while True:
            nd = coord.next_deadline()
            nq = q[0][0] if q else None
            if nd is not None and (nq is None or nd <= nq):
                if nd > t_end:
                    break
                self.now = nd
                self._outputs(coord.tick(nd))
            elif nq is not None:
                if nq > t_end:
                    break
                t, _, fn, args = heapq.heappop(q)
                self.now = t
                fn(*args)
            else:
                break
            self.steps += 1
            self.check_step()
            if self.replay_every and self.steps % self.replay_every == 0:
                assert_replay_agrees(self.coord, self.coord.records,
                                     f"seed {self.seed} t={self.now}ms step {self.steps}")
            if stop is not None and stop():
                return True
        self.now = max(self.now, t_end)
        return stop is not None and stop()

    def check_step(self) -> None:
        for gs in self.groups:
            g = self.coord.groups.get(gs.gid)
            if g is not None:
                if g.generation_id < gs.last_generation:
                    self.fail(f"{gs.gid}: generation went back {gs.last_generation} -> {g.generation_id}")
                gs.last_generation = g.generation_id
        dl = self.deadlines
        while dl and dl[0][0] < self.now:
            _, token = heapq.heappop(dl)
            if token in self.pending:
                m, api, version, sent, _ = self.pending[token]
                self.fail(f"{m.name}: api {api} sent at {sent} still unanswered")

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

    def _restart_precheck(self, m: Member):
        g = self.coord.groups.get(m.gs.gid)
        if g is not None and g.state == STABLE and m.instance in g.static_members:
            return g.generation_id
        return None

    def _restart_postcheck(self, m: Member, token: int, generation: int, answered: dict) -> None:
        g = self.coord.groups[m.gs.gid]
        body = answered.get(token)
        if body is None or body.error_code != E.NONE or body.generation_id != generation \
                or g.generation_id != generation or g.state != STABLE:
            self.fail(f"{m.name}: static restart in a Stable group was not answered at once with generation "
                      f"{generation} (answer {body!r}, group {g.state} gen {g.generation_id})")
        self.stats["static_restart_no_rebalance"] += 1

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

    def check_counters(self) -> None:
        """The coordinator's incremental counters agree with a recount."""
        for gs in self.groups:
            g = self.coord.groups[gs.gid]
            counts = Counter(name for m in g.members.values() for name in set(m.protocol_names()))
            if dict(counts) != g.protocol_counts:
                self.fail(f"{gs.gid}: protocol counts {g.protocol_counts} != recount {dict(counts)}")
            joined = sum(m.awaiting_join is not None for m in g.members.values())
            if joined != g.awaiting_join_count:
                self.fail(f"{gs.gid}: awaiting_join_count {g.awaiting_join_count} != recount {joined}")

    # ------------------------------------------------------------------ convergence
    def converged(self, gs: GroupSim) -> bool:
        """Stable with exactly the live members, each synced in the current generation and (unless
        `heartbeats` is off) heartbeating successfully in it: a state the group stays in."""
        g = self.coord.groups.get(gs.gid)
        if g is None or g.state != STABLE or g.pending_members or len(g.members) != len(gs.live):
            return False
        counts = gs.healthy_count if self.heartbeats else gs.stable_count
        if counts[g.generation_id] != len(gs.live):
            return False
        return all(g.members.get(m.member_id) is not None and m.generation == g.generation_id
                   for m in gs.live.values())

    def all_converged(self) -> bool:
        return all(self.converged(gs) for gs in self.groups)

    def start(self) -> None:
        n, mix = self.mix.members, self.mix
        for i in range(n):
            gs = self.groups[i % mix.groups]
            m = self.new_member(gs, self.rng.random() < mix.static_fraction)
            self.at(self.rng.randint(0, mix.start_window_ms), self.start_join, m)

    def settle(self, limit_ms: int) -> int:
        """Run until every group is Stable with all its live members; returns the virtual time."""
        if not self.run_until(self.now + limit_ms, self._cheap_converged):
            self.fail(f"did not converge within {limit_ms} ms: " + "; ".join(
                f"{gs.gid}: {self._describe(gs)}" for gs in self.groups))
        return self.now

    def _cheap_converged(self) -> bool:
        if self.q and self.q[0][0] == self.now:
            return False                # finish everything due at this instant first
        return self.all_converged()

    def _describe(self, gs: GroupSim) -> str:
        g = self.coord.groups.get(gs.gid)
        states = Counter(m.state for m in gs.live.values())
        return (f"coordinator {g.state if g else None} gen {g.generation_id if g else None} "
                f"members {len(g.members) if g else 0} pending {len(g.pending_members) if g else 0}; "
                f"live {len(gs.live)} {dict(states)}")

    def run(self, settle_limit_ms: int = 600_000) -> dict:
        """Cold start, converge, churn, converge again, then check that nothing is left unanswered."""
        self.start()
        t_first = self.settle(settle_limit_ms)
        gens_first = {gs.gid: self.coord.groups[gs.gid].generation_id for gs in self.groups}
        for _ in range(self.mix.churn):
            self.at(self.now + self.rng.randint(0, self.mix.churn_window_ms), self.churn_event)
        self.run_until(self.now + self.mix.churn_window_ms)
        t_churn = self.now
        self.settle(settle_limit_ms)
        t_end = self.now
        self.run_until(self.now + self.answer_bound + 1)    # quiet period: every request answered
        late = [t for t, (_, api, _, sent, _) in self.pending.items() if self.now - sent > self.answer_bound]
        if late:
            self.fail(f"{len(late)} requests never answered")
        if not self.all_converged():
            self.fail("group left Stable during the quiet period")
        self.check_counters()
        assert_replay_agrees(self.coord, self.coord.records, f"seed {self.seed} t={self.now}ms at the end")
        return {"first_stable_ms": t_first, "churn_end_ms": t_churn, "stable_again_ms": t_end,
                "generations_first": gens_first,
                "generations": {gs.gid: self.coord.groups[gs.gid].generation_id for gs in self.groups},
                "members": {gs.gid: len(gs.live) for gs in self.groups}, "steps": self.steps,
                "stats": dict(self.stats)}
