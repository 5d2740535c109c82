"""KIP-848 as Kafka 4.0-4.2 brokers answer it, where it differs from 4.3+ (each found by the wire
differential tester against a 4.1.2 broker, and read in that release's GroupMetadataManager,
CurrentAssignmentBuilder and ConsumerGroup):
- 4.0-4.1: a dynamic member's rejoin with epoch 0 is epoch-checked (the early return is 4.2's);
- 4.0-4.1: the reconciliation does not look at the subscription: a member whose subscription
  changed without a new target keeps its partitions until the next target assignment;
- 4.0-4.2: no assignment interval (group.consumer.assignment.interval.ms is 4.3's): the target is
  recomputed on the heartbeat that finds the group epoch ahead;
- 4.0-4.2: OffsetCommit's member epoch must be the member's (KIP-1251's relaxation is 4.3's).
The new group's first epoch is tested in test_heartbeat.py."""

from __future__ import annotations

from shim.coordinator import errors as E
from shim.coordinator.consumer import codes as K
from shim.coordinator.consumer.consumer_group import STABLE, UNREVOKED

from .harness import Client, ConsumerHarness


def _a_then_b(release: str, partitions: int, rounds: int = 1):
    """a joins alone, then b; each round both heartbeat once more (a moves on past its first epoch)."""
    h = ConsumerHarness({"foo": partitions}, release=release)
    a, b = Client(h, "a"), Client(h, "b")
    a.beat()
    for _ in range(rounds):
        h.advance(1000)
        b.beat()
        a.beat()
    return h, h.cg().members["a"]


def test_a_dynamic_members_rejoin_with_epoch_zero_is_fenced_before_4_2():
    for release, expected in (("4.1", K.FENCED_MEMBER_EPOCH), ("4.2", E.NONE)):
        h, m = _a_then_b(release, 6)
        assert m.previous_member_epoch > 0, release
        r = h.cgh(member_id="a", topics=["foo"])
        assert r.error_code == expected, release
        if expected:
            assert "smaller member epoch (0)" in r.error_message
    h = ConsumerHarness({"foo": 6}, release="4.1")   # a static member's rejoin replaces it, unchecked
    h.cgh(topics=["foo"], instance="i1")
    h.cgh(epoch=-2, topics=None, owned=None, instance="i1")
    assert h.cgh(member_id="m2", topics=["foo"], instance="i1").error_code == E.NONE


def test_a_subscription_change_without_a_new_target_keeps_the_partitions_before_4_2():
    """A switch to a regex not resolved yet bumps nothing: from 4.2 the member's assignment is made
    consistent with its subscription at once (all revoked); before, it keeps its partitions."""
    for release, state, assignment in (("4.1", STABLE, None), ("4.2", UNREVOKED, {})):
        h = ConsumerHarness({"foo": 2, "bar": 2}, release=release)
        r = h.cgh(member_id="a", topics=[], regex="foo|bar")
        h.advance(0)                              # resolved
        h.advance(1000)
        r = h.cgh(member_id="a", epoch=r.member_epoch, topics=None, rebalance=-1, owned={})
        assert h.names(r.assignment) == {"foo": [0, 1], "bar": [0, 1]}, release
        epoch = r.member_epoch
        h.advance(1000)
        r = h.cgh(member_id="a", epoch=epoch, topics=None, regex="fo.*", rebalance=-1,
                  owned={"foo": [0, 1], "bar": [0, 1]})
        m = h.cg().members["a"]
        assert (r.error_code, r.member_epoch, h.cg().group_epoch) == (E.NONE, epoch, epoch), release
        assert m.state == state and h.names(r.assignment) == assignment, release


def test_no_assignment_interval_before_4_3():
    for release, behind in (("4.2", 0), ("4.3", 1)):
        h = ConsumerHarness({"foo": 6}, release=release)
        h.cgh()
        h.cgh(member_id="m2")                     # the same ms: within 4.3's assignment interval
        g = h.cg()
        assert g.group_epoch - g.assignment_epoch == behind, release


def test_an_older_epoch_commits_for_a_held_partition_only_from_4_3():
    for release, expected in (("4.2", E.STALE_MEMBER_EPOCH), ("4.3", E.NONE)):
        h, m = _a_then_b(release, 2, rounds=3)
        held = next(iter(m.assigned[h.tid("foo")]))
        assert m.member_epoch >= 2, release
        got = h.commit("g", {("foo", held): 1}, generation=m.member_epoch - 1, member_id="a")
        assert got == {("foo", held): expected}, (release, m.member_epoch, m.assigned)
