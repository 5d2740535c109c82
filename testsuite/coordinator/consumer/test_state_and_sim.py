"""Consumer groups survive a restart: every record goes through the state-topic format (keys 4-7) and
is replayed into a new coordinator, which then serves the same group; the seeded simulation
(testsuite/coordinator/sim_consumer.py) keeps its invariants under churn."""

from __future__ import annotations

import pytest

from shim.coordinator import CoordinatorConfig, GroupCoordinator
from shim.state import format as F
from testsuite.coordinator import sim_consumer
from testsuite.coordinator.consumer.harness import Client, ConsumerHarness


def restart(h: ConsumerHarness) -> GroupCoordinator:
    c2 = GroupCoordinator(CoordinatorConfig(), now_ms=h.now, topics=h.topics)
    for rec in h.c.written:
        key, value = F.encode(rec)
        assert F.decode(key, value) == rec
        c2.replay(rec, now_ms=h.now)
    return c2


def test_groups_come_back_after_a_restart():
    h = ConsumerHarness({"foo": 4, "bar": 2})
    a, b = Client(h, "a", topics=("foo", "bar"), instance="ia"), Client(h, "b", topics=("foo",))
    a.beat()
    h.advance(1000)
    b.beat()
    a.beat()                                      # a pending revocation at this point
    h.cgh("other", "x", topics=None, regex="ba.*")
    h.cgh("gone", "y")
    h.cgh("gone", "y", -1, topics=None, owned=None)
    h.delete("gone")
    c2 = restart(h)
    assert set(c2.consumer_groups) == {"g", "other"}
    for gid in ("g", "other"):
        g1, g2 = h.c.consumer_groups[gid], c2.consumer_groups[gid]
        assert (g2.group_epoch, g2.assignment_epoch, g2.state) == (g1.group_epoch, g1.assignment_epoch, g1.state)
        assert g2.static_members == g1.static_members and g2.owners == g1.owners
        for mid, m1 in g1.members.items():
            m2 = g2.members[mid]
            for attr in ("member_epoch", "previous_member_epoch", "state", "assigned", "pending_revocation", "target",
                         "subscribed_topic_names", "subscribed_topic_regex", "instance_id", "rebalance_timeout_ms"):
                assert getattr(m2, attr) == getattr(m1, attr), (mid, attr)
    assert c2.consumer_groups["other"].regex_topics == {"ba.*": frozenset({"bar"})}
    # members that do not come back are fenced by their session timeout, counted from the load
    c2.tick(h.now + 45_000)
    assert c2.consumer_groups["g"].members == {}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_simulation_with_churn_keeps_invariants(seed):
    r = sim_consumer.run(60, seed=seed, churn=40)
    assert r["live"] > 0 and r["heartbeats_total"] > r["heartbeats_to_stable"]


def test_simulation_detects_double_ownership():
    sim = sim_consumer.ConsumerSim(4, seed=1)
    sim.run_to_convergence()
    a, b = [c for c in sim.consumers.values()][:2]
    t = next(iter(a.owned))
    with pytest.raises(sim_consumer.InvariantViolation):
        from kcodec.generated.consumer_group_heartbeat import Assignment, ConsumerGroupHeartbeatResponseTopicPartitions
        sim._apply(b, Assignment(topic_partitions=[ConsumerGroupHeartbeatResponseTopicPartitions(
            topic_id=t, partitions=sorted(a.owned[t]))]))
