"""Seeded simulation of a KIP-848 consumer group on the sans-IO coordinator, under a virtual clock.

Each simulated consumer behaves like the Java consumer of the new protocol: it joins with epoch 0,
heartbeats every HeartbeatIntervalMs reporting the partitions it owns, applies every assignment it
gets (revoking = dropping partitions and reporting that at once, with an immediate heartbeat, as
the Java client does when a reconciliation completes), rejoins with epoch 0 after
FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID. Churn: clean leaves (epoch -1), crashes (the member goes
silent until its session expires), new members, static bounces (epoch -2, then a new process with a
new member id and the same instance id).

Invariants (InvariantViolation at the first breach):
  - no partition is owned by two live consumers at once (checked whenever one receives partitions);
  - at the end (after churn stops) the group converges: state Stable, every member at the
    assignment epoch, and every live consumer owns exactly its target assignment, which covers
    every partition once;
  - after every run_until (each second of virtual time while converging), a fresh coordinator fed
    all the records written so far (replay()) has the live durable state (replay_check.py;
    ReplayMismatch at the first difference).
`run(members, ...)` returns the figures (CPU seconds, heartbeats, virtual time to converge).
"""

from __future__ import annotations

import heapq
import itertools
import random
import time
from dataclasses import dataclass, field

from kcodec.generated.consumer_group_heartbeat import (ConsumerGroupHeartbeatRequest,
                                                       ConsumerGroupHeartbeatRequestTopicPartitions)
from shim.coordinator import CoordinatorConfig
from shim.coordinator import errors as E
from shim.coordinator.consumer import codes as K
from shim.coordinator.metadata import TopicCatalog
from testsuite.coordinator.harness import RecordingCoordinator
from testsuite.coordinator.replay_check import assert_replay_agrees

GID = "sim"


class InvariantViolation(AssertionError):
    pass


@dataclass
class Consumer:
    member_id: str
    instance: str | None = None
    epoch: int = 0
    owned: dict = field(default_factory=dict)    # topic id -> frozenset
    alive: bool = True
    gen: int = 0                                 # bumps when the consumer is replaced/crashes (stale events)


class ConsumerSim:
    def __init__(self, members: int, topics: int = 4, partitions: int | None = None, seed: int = 1,
                 static_share: float = 0.2, assignor: str | None = None):
        self.rng = random.Random(seed)
        self.seed = seed
        per_topic = partitions if partitions is not None else max(1, (2 * members) // topics)
        self.catalog = TopicCatalog({f"t{i}": per_topic for i in range(topics)})
        self.names = [f"t{i}" for i in range(topics)]
        ids = itertools.count(1)
        self.c = RecordingCoordinator(CoordinatorConfig(), now_ms=0, new_uuid=lambda: f"x{next(ids)}", topics=self.catalog)
        self.now = 0
        self.queue: list = []
        self.seq = itertools.count()
        self.consumers: dict[str, Consumer] = {}
        self.owner: dict = {}                    # (tid, p) -> member id, for live consumers
        self.heartbeats = 0
        self.coordinator_cpu = 0.0               # CPU seconds spent inside the coordinator
        self.static_share = static_share
        self.assignor = assignor
        self.tokens = itertools.count()
        self.interval = self.c.cfg.consumer_heartbeat_interval_ms
        for i in range(members):
            self.add_consumer(self.rng.randrange(0, 1000))

    # ------------------------------------------------------------------ clients
    def add_consumer(self, at: int, instance: str | None = None) -> Consumer:
        n = len(self.consumers) + 1
        if instance is None and self.rng.random() < self.static_share:
            instance = f"i{n}"
        cons = Consumer(f"m{n}-{self.rng.getrandbits(32):08x}", instance)
        self.consumers[cons.member_id] = cons
        self.schedule(at, cons)
        return cons

    def schedule(self, at: int, cons: Consumer) -> None:
        heapq.heappush(self.queue, (at, next(self.seq), cons.member_id, cons.gen))

    def _request(self, cons: Consumer, epoch: int) -> ConsumerGroupHeartbeatRequest:
        joining = epoch == 0
        return ConsumerGroupHeartbeatRequest(
            group_id=GID, member_id=cons.member_id, member_epoch=epoch, instance_id=cons.instance,
            rebalance_timeout_ms=30_000 if joining else -1,
            subscribed_topic_names=self.names if joining else None, server_assignor=self.assignor if joining else None,
            topic_partitions=[] if joining else [
                ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t, partitions=sorted(ps))
                for t, ps in cons.owned.items()])

    def _send(self, cons: Consumer, epoch: int):
        self.heartbeats += 1
        req = self._request(cons, epoch)
        t0 = time.process_time()
        out = self.c.handle(68, 1, req, next(self.tokens), client_id="sim", client_host="/127.0.0.1",
                            now_ms=self.now)
        self.coordinator_cpu += time.process_time() - t0
        if len(out.responses) != 1:
            raise InvariantViolation(f"{len(out.responses)} responses to one heartbeat")
        return out.responses[0].body

    def _drop(self, cons: Consumer) -> None:
        for t, ps in cons.owned.items():
            for p in ps:
                if self.owner.get((t, p)) == cons.member_id:
                    del self.owner[(t, p)]
        cons.owned = {}

    def _apply(self, cons: Consumer, assignment) -> bool:
        new = {tp.topic_id: frozenset(tp.partitions) for tp in assignment.topic_partitions if tp.partitions}
        revoked = False
        for t, ps in cons.owned.items():
            gone = ps - new.get(t, frozenset())
            if gone:
                revoked = True
                for p in gone:
                    if self.owner.get((t, p)) == cons.member_id:
                        del self.owner[(t, p)]
        for t, ps in new.items():
            had = cons.owned.get(t, frozenset())
            for p in ps - had:
                holder = self.owner.get((t, p))
                if holder is not None and holder != cons.member_id:
                    raise InvariantViolation(f"t={self.now}: partition {t}-{p} given to {cons.member_id} while "
                                             f"{holder} still owns it")
                self.owner[(t, p)] = cons.member_id
        cons.owned = new
        return revoked

    def heartbeat(self, cons: Consumer) -> None:
        r = self._send(cons, cons.epoch)
        if r.error_code in (K.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID):
            self._drop(cons)
            cons.epoch = 0
            self.schedule(self.now + 1, cons)
            return
        if r.error_code != 0:
            raise InvariantViolation(f"t={self.now}: heartbeat of {cons.member_id} failed with {r.error_code} "
                                     f"{r.error_message}")
        cons.epoch = r.member_epoch
        soon = False
        if r.assignment is not None:
            soon = self._apply(cons, r.assignment)
        self.schedule(self.now + (self.rng.randrange(5, 50) if soon else self.interval), cons)

    # ------------------------------------------------------------------ churn
    def churn(self, events: int, until: int) -> None:
        for _ in range(events):
            at = self.rng.randrange(self.now, until)
            heapq.heappush(self.queue, (at, next(self.seq), "!churn", self.rng.random()))

    def _churn_event(self, x: float) -> None:
        live = [c for c in self.consumers.values() if c.alive]
        if not live:
            return
        cons = self.rng.choice(live)
        if x < 0.3:                                   # clean leave
            if cons.epoch > 0:
                self._send(cons, -1)
            self._retire(cons)
        elif x < 0.5:                                 # crash: silent until its session expires
            self._retire(cons)
        elif x < 0.8 or cons.instance is None:        # a new member
            self.add_consumer(self.now + 1)
        else:                                         # static bounce: -2, then a new process
            if cons.epoch > 0:
                self._send(cons, -2)
            self._retire(cons)
            self.add_consumer(self.now + self.rng.randrange(100, 3000), instance=cons.instance)

    def _retire(self, cons: Consumer) -> None:
        cons.alive = False
        cons.gen += 1
        self._drop(cons)

    # ------------------------------------------------------------------ running
    def run_until(self, t_end: int) -> None:
        c, consumers = self.c, self.consumers
        while True:
            nxt = self.queue[0][0] if self.queue else None
            deadline = c.next_deadline()
            if deadline is not None and (nxt is None or deadline < nxt) and deadline <= t_end:
                self.now = max(self.now, deadline)
                t0 = time.process_time()
                c.tick(self.now)
                self.coordinator_cpu += time.process_time() - t0
                continue
            if nxt is None or nxt > t_end:
                break
            at, _, mid, gen = heapq.heappop(self.queue)
            self.now = max(self.now, at)
            if mid == "!churn":
                self._churn_event(gen)
                continue
            cons = consumers[mid]
            if cons.alive and cons.gen == gen:
                self.heartbeat(cons)
        self.now = max(self.now, t_end)
        assert_replay_agrees(c, c.written, f"seed {self.seed} t={self.now}ms")

    def converged(self) -> bool:
        g = self.c.consumer_groups.get(GID)
        if g is None or g.state != "Stable":
            return False
        for cons in self.consumers.values():
            if not cons.alive:
                continue
            m = g.members.get(cons.member_id)
            if m is None or cons.epoch != g.assignment_epoch or cons.owned != m.target:
                return False
        return True

    def check_final(self) -> None:
        g = self.c.consumer_groups[GID]
        live = {c.member_id for c in self.consumers.values() if c.alive}
        if set(g.members) != live:
            raise InvariantViolation(f"members {len(g.members)} != live consumers {len(live)}")
        seen = set()
        for m in g.members.values():
            for t, ps in m.target.items():
                for p in ps:
                    if (t, p) in seen:
                        raise InvariantViolation(f"{t}-{p} in two targets")
                    seen.add((t, p))
        total = sum(self.catalog.get(n).partitions for n in self.names)
        if live and len(seen) != total:
            raise InvariantViolation(f"target covers {len(seen)} of {total} partitions")

    def run_to_convergence(self, limit_ms: int = 600_000, step_ms: int = 1000) -> int:
        start = self.now
        while not self.converged():
            if self.now - start > limit_ms:
                raise InvariantViolation(f"no convergence within {limit_ms} ms (state "
                                         f"{self.c.consumer_groups[GID].state})")
            self.run_until(self.now + step_ms)
        self.check_final()
        return self.now - start


def run(members: int, *, seed: int = 1, churn: int = 0, topics: int = 4, partitions: int | None = None) -> dict:
    """Join `members` consumers, converge, then apply `churn` events over 30 s and converge again."""
    t0 = time.process_time()
    sim = ConsumerSim(members, topics=topics, partitions=partitions, seed=seed)
    join_ms = sim.run_to_convergence()
    t_join = time.process_time() - t0
    coord_join = sim.coordinator_cpu
    hb_join = sim.heartbeats
    churn_ms = 0
    if churn:
        sim.churn(churn, sim.now + 30_000)
        sim.run_until(sim.now + 30_000)
        churn_ms = sim.run_to_convergence(limit_ms=900_000)
    return {"members": members, "partitions": sum(sim.catalog.get(n).partitions for n in sim.names),
            "cpu_s_to_stable": t_join, "coordinator_cpu_s_to_stable": coord_join, "heartbeats_to_stable": hb_join,
            "virtual_ms_to_stable": join_ms, "cpu_s_total": time.process_time() - t0,
            "coordinator_cpu_s_total": sim.coordinator_cpu, "heartbeats_total": sim.heartbeats,
            "virtual_ms_after_churn": churn_ms,
            "group_epoch": sim.c.consumer_groups[GID].group_epoch, "live": len(sim.c.consumer_groups[GID].members)}
