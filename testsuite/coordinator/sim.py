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

The members (their state, requests, answers and churn) are in sim_members.py; this module is the
driver: the event queue and virtual clock, the invariant checks, convergence and a whole run.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter

from kcodec.generated.join_group import JoinGroupRequestProtocol
from shim.coordinator import CoordinatorConfig
from shim.coordinator import errors as E
from shim.coordinator.classic_group import STABLE

from .harness import RecordingCoordinator
from .replay_check import assert_replay_agrees
from .sim_members import (HB_V, HEARTBEAT, JOIN, KINDS, LEAVE, LEAVE_V, SYNC, SYNC_V, GroupSim, InvariantViolation,
                          Member, MemberBehaviour, Mix)

__all__ = ["Sim", "Mix", "Member", "GroupSim", "InvariantViolation", "MemberBehaviour",
           "JOIN", "SYNC", "HEARTBEAT", "LEAVE", "SYNC_V", "HB_V", "LEAVE_V", "KINDS"]


class Sim(MemberBehaviour):
    def __init__(self, mix: Mix, seed: int, config: CoordinatorConfig | None = None, replay_every: int = 1000):
        self.mix, self.seed = mix, seed
        self.replay_every = replay_every       # steps between replay checks (0: only at the end)
        self.rng = random.Random(seed)
        self._uuid_n = 0
        self.cfg = config or CoordinatorConfig()
        self.coord = RecordingCoordinator(self.cfg, now_ms=0, new_uuid=self._uuid)
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
        for r in out.responses:
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
                assert_replay_agrees(self.coord, self.coord.written,
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

    # ------------------------------------------------------------------ invariant checks
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
        assert_replay_agrees(self.coord, self.coord.written, f"seed {self.seed} t={self.now}ms at the end")
        return {"first_stable_ms": t_first, "churn_end_ms": t_churn, "stable_again_ms": t_end,
                "generations_first": gens_first,
                "generations": {gs.gid: self.coord.groups[gs.gid].generation_id for gs in self.groups},
                "members": {gs.gid: len(gs.live) for gs in self.groups}, "steps": self.steps,
                "stats": dict(self.stats)}
