"""ConsumerGroupHeartbeat (GroupMetadataManager.consumerGroupHeartbeat), after cases of Kafka's
GroupMetadataManagerTest / GroupCoordinatorServiceTest / ConsumerGroupHeartbeatRequestTest."""

from __future__ import annotations

import pytest

from shim.coordinator import errors as E
from shim.coordinator.consumer import codes as K
from shim.coordinator.consumer.consumer_group import STABLE, UNRELEASED, UNREVOKED
from testsuite.coordinator.consumer.harness import Client, ConsumerHarness, stable_pair


# ---------------------------------------------------------------------- request validation (GroupCoordinatorService.consumerGroupHeartbeat)
@pytest.mark.parametrize("kw, v, message", [
    (dict(gid=""), 1, "GroupId can't be empty."),
    (dict(instance=""), 1, "InstanceId can't be empty."),
    (dict(rack=""), 1, "RackId can't be empty."),
    (dict(member_id=""), 1, "MemberId can't be empty."),
    (dict(member_id="", epoch=1, owned={}), 0, "MemberId can't be empty."),
    (dict(member_id="", epoch=-1), 0, "MemberId can't be empty."),
    (dict(rebalance=-1), 1, "RebalanceTimeoutMs must be provided in first request."),
    (dict(owned=None), 1, "TopicPartitions must be empty when (re-)joining."),
    (dict(owned={"foo": [0]}), 1, "TopicPartitions must be empty when (re-)joining."),
    (dict(topics=None), 1, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    (dict(epoch=-2), 1, "InstanceId can't be null."),
    (dict(epoch=-3), 1, "MemberEpoch is invalid."),
])
def test_request_validation(h, kw, v, message):
    kw.setdefault("gid", "g")
    r = h.cgh(kw.pop("gid"), v=v, **kw)
    assert (r.error_code, r.error_message) == (K.INVALID_REQUEST, message)
    assert r.member_id is None and r.member_epoch == 0 and r.heartbeat_interval_ms == 0
    assert h.cg() is None


def test_unsupported_assignor(h):
    r = h.cgh(assignor="sticky")
    assert r.error_code == K.UNSUPPORTED_ASSIGNOR
    assert h.cgh(assignor="range").error_code == E.NONE


def test_v0_member_id_generated_by_the_coordinator(h):
    r = h.cgh(member_id="", v=0)
    assert r.error_code == 0 and r.member_id == "u1"      # the harness's uuid source
    assert r.member_epoch == 2 and h.names(r.assignment) == {"foo": [0, 1, 2, 3, 4, 5]}


def test_empty_subscription_and_empty_regex_are_members_of_nothing(h):
    r = h.cgh(topics=[])
    assert r.error_code == 0 and r.member_epoch == 1 and h.names(r.assignment) == {}
    r = h.cgh(member_id="m2", topics=None, regex="")
    assert r.error_code == 0 and h.cg().group_epoch == 1


# ---------------------------------------------------------------------- members: join, rejoin, epochs
def test_member_joins_empty_group_epoch_two(h):
    r = h.cgh(topics=["foo", "bar"])
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "m1", 2, 5000)
    assert h.names(r.assignment) == {"foo": [0, 1, 2, 3, 4, 5], "bar": [0, 1, 2]}
    g = h.cg()
    assert (g.group_epoch, g.assignment_epoch, g.state) == (2, 2, "Stable")


@pytest.mark.parametrize("release", ["4.0", "4.2"])
def test_before_4_3_a_new_group_starts_at_epoch_zero_and_its_first_heartbeat_bumps(release):
    """Kafka 4.0-4.2: a new consumer group is at epoch 0 and its first heartbeat bumps it whatever it
    changed ("a newly created group must move away from epoch 0"); from 4.3 it starts at 1 (above)."""
    h = ConsumerHarness({"foo": 6}, release=release)
    r = h.cgh(topics=["foo"])
    assert (r.error_code, r.member_epoch) == (0, 1) and h.names(r.assignment) == {"foo": [0, 1, 2, 3, 4, 5]}
    assert (h.cg().group_epoch, h.cg().assignment_epoch) == (1, 1)
    r = h.cgh(gid="g2", topics=None, regex="fo.*")      # a regex not resolved yet still bumps the new group
    assert (r.error_code, r.member_epoch) == (0, 1) and h.names(r.assignment) == {}
    _resolved(h)
    assert h.cg("g2").group_epoch == 2


def test_heartbeat_without_changes_carries_no_assignment(h):
    h.cgh()
    r = h.cgh(epoch=2, rebalance=-1, topics=None, owned={"foo": range(6)})
    assert (r.error_code, r.member_epoch, r.assignment) == (0, 2, None)
    r = h.cgh(epoch=2, rebalance=30_000, topics=["foo"], owned={"foo": range(6)})   # a full request
    assert h.names(r.assignment) == {"foo": [0, 1, 2, 3, 4, 5]}


def test_member_epoch_validation(h):
    h.cgh(topics=["foo"])
    h.advance(2000)
    h.cgh(member_id="m2", topics=["foo"])                    # group epoch 3, target recomputed
    r = h.cgh(epoch=3, topics=None, owned={"foo": range(6)})
    assert r.error_code == K.FENCED_MEMBER_EPOCH                # greater than its epoch (2)
    r = h.cgh(epoch=1, topics=None, owned={"foo": range(6)})
    assert r.error_code == K.FENCED_MEMBER_EPOCH                # smaller, not the previous epoch
    m = h.cg().members["m1"]
    assert (m.member_epoch, m.previous_member_epoch) == (2, 0)
    r = h.cgh(epoch=0, topics=["foo"])                         # epoch 0 is never fenced
    assert r.error_code == 0


def test_previous_epoch_with_owned_subset_is_accepted(h):
    h.cgh(topics=["foo"])
    h.advance(2000)
    h.cgh(member_id="m2", topics=["foo"])
    h.cgh(epoch=2, topics=None, owned={"foo": [0, 1, 2]})      # revokes 3-5 -> epoch 3
    m = h.cg().members["m1"]
    assert (m.member_epoch, m.previous_member_epoch) == (3, 2)
    r = h.cgh(epoch=2, topics=None, owned={"foo": [0, 1]})     # lost response: previous epoch, subset
    assert (r.error_code, r.member_epoch) == (0, 3)
    r = h.cgh(epoch=2, topics=None, owned={"foo": [0, 5]})     # not a subset of its assignment
    assert r.error_code == K.FENCED_MEMBER_EPOCH


# found by the wire differential tester (its replay is under testsuite/compat/wire_replays/)
def test_subscription_shrink_makes_the_current_epoch_the_previous_one(h):
    """CurrentAssignmentBuilder.updateCurrentAssignment (a subscription that drops assigned topics while
    the target is not recomputed yet) goes through ConsumerGroupMember.Builder.updateMemberEpoch: the
    previous epoch becomes the current one, so a heartbeat with the epoch before is fenced
    (replay cg-epoch-after-subscription-shrink.json, seed 6150)."""
    h.cgh(member_id="a")
    h.advance(1000)
    r = h.cgh(member_id="a", epoch=2, topics=["foo", "bar"], rebalance=-1, owned=None)
    assert r.member_epoch == 3
    r = h.cgh(member_id="a", epoch=0, topics=["tx"], owned={})     # within the assignment interval
    assert (r.error_code, r.member_epoch, h.names(r.assignment)) == (0, 3, {})
    m = h.cg().members["a"]
    assert (m.member_epoch, m.previous_member_epoch) == (3, 3)
    r = h.cgh(member_id="a", epoch=2, topics=None, rebalance=-1, owned={})
    assert r.error_code == K.FENCED_MEMBER_EPOCH
    assert r.error_message.startswith("The consumer group member has a smaller member epoch (2)")


def test_rejoin_with_epoch_zero_keeps_the_member(h):
    h.cgh(topics=["foo"])
    r = h.cgh(topics=["foo"])
    assert (r.error_code, r.member_epoch) == (0, 2)
    assert h.names(r.assignment) == {"foo": [0, 1, 2, 3, 4, 5]}
    assert h.cg().group_epoch == 2


def test_unknown_member_and_unknown_group(h):
    assert h.cgh(epoch=1, topics=None, owned={}).error_code == E.GROUP_ID_NOT_FOUND
    h.cgh()
    assert h.cgh(member_id="zz", epoch=2, topics=None, owned={}).error_code == E.UNKNOWN_MEMBER_ID


def test_max_size(h):
    h = ConsumerHarness({"foo": 6}, consumer_max_size=1)
    h.cgh()
    assert h.cgh(member_id="m2").error_code == E.GROUP_MAX_SIZE_REACHED
    assert h.cgh(epoch=2, topics=None, owned={"foo": range(6)}).error_code == 0


# ---------------------------------------------------------------------- reconciliation (CurrentAssignmentBuilder)
def test_reconciliation_process(h):
    h = ConsumerHarness({"foo": 6, "bar": 3})
    a, b = Client(h, "a", topics=("foo", "bar")), Client(h, "b", topics=("foo", "bar"))
    a.beat()
    assert a.epoch == 2 and a.owned == {"foo": [0, 1, 2, 3, 4, 5], "bar": [0, 1, 2]}
    h.advance(1000)
    b.beat()                                     # epoch 3: b's target computed, a still owns it all
    g = h.cg()
    assert g.group_epoch == 3 and g.assignment_epoch == 3
    assert b.epoch == 3 and b.owned == {}
    assert g.members["b"].state == UNRELEASED and g.state == "Reconciling"
    a.beat()                                     # a must revoke first: stays at epoch 2
    ma = g.members["a"]
    assert ma.state == UNREVOKED and ma.member_epoch == 2 and a.epoch == 2
    revoked = {h.topics.topic(t).name: sorted(ps) for t, ps in ma.pending_revocation.items()}
    assert revoked and all(set(ps) <= set(range(6 if n == "foo" else 3)) for n, ps in revoked.items())
    b.beat()                                     # nothing released yet
    assert b.owned == {} and g.members["b"].state == UNRELEASED
    a.beat()                                     # acknowledges the revocation by omitting them
    assert ma.state == STABLE and a.epoch == 3
    b.beat()
    assert g.members["b"].state == STABLE
    owned = [(n, p) for cl in (a, b) for n, ps in cl.owned.items() for p in ps]
    assert len(owned) == len(set(owned)) == 9
    assert g.state == "Stable"


def test_assignment_interval_delays_the_target(h):
    h.cgh()
    h.cgh(member_id="m2")                        # same ms: the assignment interval has not passed
    g = h.cg()
    assert (g.group_epoch, g.assignment_epoch, g.state) == (3, 2, "Assigning")
    h.advance(1000)
    h.cgh(member_id="m2", epoch=2, topics=None, owned={})
    assert g.assignment_epoch == 3


def test_subscription_change_drops_unsubscribed_topics(h):
    a = Client(h, "a", topics=("foo", "bar"))
    a.beat()
    h.advance(1000)
    r = h.cgh("g", "a", 2, topics=["foo"], rebalance=-1, owned={"foo": range(6), "bar": range(3)})
    m = h.cg().members["a"]
    assert h.cg().group_epoch == 3 and m.state == UNREVOKED and m.member_epoch == 2
    assert h.names(r.assignment) == {"foo": [0, 1, 2, 3, 4, 5]}
    r = h.cgh("g", "a", 2, topics=None, rebalance=-1, owned={"foo": range(6)})
    assert (m.state, m.member_epoch) == (STABLE, 3)


# ---------------------------------------------------------------------- leave, fencing, timeouts
def test_leaving_member_bumps_group_epoch(h):
    h.cgh()
    r = h.cgh(epoch=-1, topics=None, rebalance=-1, owned=None)
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "m1", -1)
    g = h.cg()
    assert g.members == {} and g.group_epoch == 3 and g.state == "Empty"
    assert h.cgh(epoch=-1, topics=None, owned=None).error_code == E.UNKNOWN_MEMBER_ID
    assert h.cgh("nope", epoch=-1, topics=None, owned=None).error_code == E.GROUP_ID_NOT_FOUND


def test_static_temporary_leave_and_rejoin_keeps_assignment(h):
    a, b = stable_pair(h, ("i-a", "i-b"))
    g = h.cg()
    epoch, owned_b = g.group_epoch, b.owned
    assert g.state == "Stable" and owned_b
    r = h.cgh("g", "b", -2, instance="i-b", topics=None, owned=None)
    assert (r.error_code, r.member_epoch) == (0, -2)
    assert g.group_epoch == epoch and g.members["b"].member_epoch == -2
    # a new process with a new member id and the same instance id gets the same partitions back
    r = h.cgh("g", "b2", 0, instance="i-b")
    assert r.error_code == 0 and h.names(r.assignment) == owned_b
    assert g.group_epoch == epoch and "b" not in g.members and g.static_members["i-b"] == "b2"


def test_unreleased_instance_id(h):
    h.cgh(member_id="a", instance="i")
    r = h.cgh(member_id="a2", instance="i")
    assert r.error_code == K.UNRELEASED_INSTANCE_ID
    r = h.cgh(member_id="a2", epoch=2, instance="i", topics=None, owned={})
    assert r.error_code == E.FENCED_INSTANCE_ID
    assert h.cgh(member_id="x", epoch=2, instance="j", topics=None, owned={}).error_code == E.UNKNOWN_MEMBER_ID


def test_session_timeout_fences(h):
    h.cgh()
    h.cgh(member_id="m2")
    h.advance(40_000)
    h.cgh(member_id="m2", epoch=2, topics=None, owned={})
    h.advance(5_001)                              # m1 silent for 45 s
    g = h.cg()
    assert "m1" not in g.members and "m2" in g.members
    assert g.group_epoch == 4
    assert h.cgh(epoch=2, topics=None, owned={}).error_code == E.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_fences_a_member_that_does_not_revoke(h):
    h.cgh(rebalance=10_000)
    h.advance(1000)
    h.cgh(member_id="m2")
    h.cgh(epoch=2, topics=None, rebalance=-1, owned={"foo": range(6)})   # -> UNREVOKED, timer armed
    assert h.cg().members["m1"].state == UNREVOKED
    for t in range(3):
        h.advance(3000)
        h.cgh(epoch=2, topics=None, rebalance=-1, owned={"foo": range(6)})   # still holding them
        h.cgh(member_id="m2", epoch=3, topics=None, rebalance=-1, owned={})
    h.advance(1001)
    assert "m1" not in h.cg().members
    r = h.cgh(member_id="m2", epoch=3, topics=None, rebalance=-1, owned={})
    assert (r.member_epoch, h.names(r.assignment)) == (4, {"foo": [0, 1, 2, 3, 4, 5]})


# ---------------------------------------------------------------------- regex, topic metadata
def _resolved(h):
    """The regex resolution the heartbeat scheduled runs (the broker's executor: right after it)."""
    h.advance(0)


def test_regex_subscription_and_new_topic(h):
    r = h.cgh(topics=None, regex="fo.*")
    # compiled by the heartbeat, resolved after it: nothing assigned yet and no epoch bump
    assert r.error_code == 0 and r.member_epoch == 1 and h.names(r.assignment) == {}
    assert h.cg().group_epoch == 1 and "fo.*" not in h.cg().regex_topics
    assert h.cgh(member_id="m2", topics=None, regex="(").error_code == K.INVALID_REGULAR_EXPRESSION
    _resolved(h)
    g = h.cg()
    assert g.group_epoch == 2 and g.regex_topics["fo.*"] == frozenset({"foo"})
    h.advance(1000)
    r = h.cgh(epoch=1, topics=None, rebalance=-1, owned={})
    assert r.member_epoch == 2 and h.names(r.assignment) == {"foo": [0, 1, 2, 3, 4, 5]}
    h.topics["fox"] = 2
    h.c.metadata_updated(h.now)
    assert g.group_epoch == 3 and g.regex_topics["fo.*"] == frozenset({"foo", "fox"})
    h.advance(1000)
    r = h.cgh(epoch=2, topics=None, rebalance=-1, owned={"foo": range(6)})
    assert r.member_epoch == 3 and h.names(r.assignment) == {"foo": [0, 1, 2, 3, 4, 5], "fox": [0, 1]}


def test_new_regex_with_topic_names_assigns_the_names_first(h):
    """librdkafka 0045 "Resubscribe with Regex" against the broker: subscribing to a regex no member
    uses plus a literal topic, the first heartbeat assigns the literal topic, a later one the matches."""
    h.topics["bar"] = 2
    r = h.cgh(topics=["bar"], regex="fo.*")
    assert h.names(r.assignment) == {"bar": [0, 1]} and r.member_epoch == 2     # the names bumped
    _resolved(h)
    h.advance(1000)
    r = h.cgh(epoch=2, topics=None, rebalance=-1, owned={"bar": [0, 1]})
    assert r.member_epoch == 3 and h.names(r.assignment) == {"bar": [0, 1], "foo": [0, 1, 2, 3, 4, 5]}


def test_a_resolved_regex_applies_at_once_and_an_unused_one_goes(h):
    """A second member switching to a regex the group has resolved bumps in its own heartbeat; a regex
    whose only member leaves before its resolution is never resolved."""
    h.cgh(topics=None, regex="fo.*")
    _resolved(h)
    epoch = h.cg().group_epoch
    r = h.cgh(member_id="m2", topics=None, regex="fo.*")
    assert h.cg().group_epoch == epoch + 1 and r.member_epoch == epoch + 1
    h.cgh(member_id="m3", topics=None, regex="ba.*", topic_filter=lambda t: True)
    assert h.cg().group_epoch == epoch + 1 and "ba.*" in h.cg().regex_filters
    assert h.cgh(member_id="m3", epoch=-1, topics=None, rebalance=-1, owned=None).error_code == 0
    epoch = h.cg().group_epoch
    _resolved(h)
    assert "ba.*" not in h.cg().regex_topics and "ba.*" not in h.cg().regex_filters
    assert h.cg().group_epoch == epoch


def test_regex_resolves_only_topics_the_member_may_describe(h):
    """With an authorizer (the proxy passes the caller's TOPIC DESCRIBE right), a regex resolves to
    the matching topics that member may describe, now and when topics are created later."""
    h.topics["fob"] = 2
    h.topics["fox"] = 3
    r = h.cgh(topics=None, regex="fo.*", topic_filter=lambda t: t != "fox")
    _resolved(h)
    h.advance(1000)
    r = h.cgh(epoch=r.member_epoch, topics=None, rebalance=-1, owned={})
    assert r.error_code == 0 and h.names(r.assignment) == {"foo": [0, 1, 2, 3, 4, 5], "fob": [0, 1]}
    h.topics["fold"] = 1
    h.topics["fox2"] = 1
    h.c.metadata_updated(h.now)
    assert h.cg().regex_topics["fo.*"] == frozenset({"foo", "fob", "fold", "fox2"})
    assert h.cgh(member_id="m1", epoch=-1, topics=None, rebalance=-1, owned=None).error_code == 0
    assert "fo.*" not in h.cg().regex_topics and not h.cg().regex_filters   # gone with its last subscriber


def test_a_regex_resolved_without_rights_is_resolved_again_with_the_next_heartbeats_rights(h):
    """After a restart regexes are replayed without the member's rights: its next heartbeat through
    an authorizer resolves the regex again with them (and bumps the epoch when that changes it)."""
    h.topics["fox"] = 3
    r = h.cgh(topics=None, regex="fo.*")                  # as replayed: no filter known
    _resolved(h)
    assert h.cg().regex_topics["fo.*"] == frozenset({"foo", "fox"})
    epoch = h.cg().group_epoch
    h.cgh(epoch=r.member_epoch, topics=None, rebalance=-1, owned=None, topic_filter=lambda t: t != "fox")
    assert h.cg().regex_topics["fo.*"] == frozenset({"foo"}) and h.cg().group_epoch == epoch + 1


def test_topic_growth_and_deletion_bump_the_group_epoch(h):
    h.cgh(topics=["foo", "bar"])
    h.topics["foo"] = 8
    h.c.metadata_updated(h.now)
    assert h.cg().group_epoch == 3
    del h.topics["bar"]
    h.c.metadata_updated(h.now)
    assert h.cg().group_epoch == 4
    h.topics["unrelated"] = 1
    h.c.metadata_updated(h.now)
    assert h.cg().group_epoch == 4


def test_consumer_protocol_off_upstream_answers_unsupported_version():
    """KafkaApis.handleConsumerGroupHeartbeat / handleConsumerGroupDescribe without "consumer" in
    group.coordinator.rebalance.protocols (Kafka 3.9's default): UNSUPPORTED_VERSION, no message, no
    group made; seen from a real 3.9.1 broker (testsuite/groups/test_version_matrix.py)."""
    h = ConsumerHarness({"foo": 6}, consumer_protocol=False, release="3.9")
    r = h.cgh(v=0)
    assert (r.error_code, r.error_message, r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == \
        (E.UNSUPPORTED_VERSION, None, None, 0, 0, None)
    assert h.cg() is None
    d = h.describe_cg("g", "g", v=0).groups
    assert [(x.group_id, x.error_code, x.error_message, x.authorized_operations) for x in d] == \
        [("g", E.UNSUPPORTED_VERSION, None, -2**31)] * 2


@pytest.mark.parametrize("wait_ms", [100, 1500])
def test_a_member_taking_an_instance_id_nobody_holds_has_no_target_until_one_is_computed(wait_ms):
    """A dynamic member behind the group's target epoch rejoins (epoch 0, its member id) with an instance
    id no member holds and a new subscription. Within group.consumer.assignment.interval.ms of the last
    target computation the broker keeps the last target and reads this member's part by that instance
    id: none (UpdateTargetAssignmentResult.fromLastTargetAssignment, ConsumerGroup.targetAssignment(
    memberId, instanceId)), so the member reconciles to nothing; a target computed by the heartbeat
    itself includes it. Found by the differential tester against Kafka 4.4.0, seed 381 (only in batch
    runs: its timing)."""
    h = ConsumerHarness({"foo": 6, "bar": 3})
    r = h.cgh(member_id="m")
    assert h.names(r.assignment) == {"foo": [0, 1, 2, 3, 4, 5]}
    h.advance(1500)
    assert h.cgh(member_id="x", topics=("bar",)).error_code == 0      # a new target epoch; m is behind it
    h.advance(wait_ms)
    r = h.cgh(member_id="m", instance="i1", topics=("foo", "bar"))
    assert r.error_code == 0
    if wait_ms < 1000:
        assert h.names(r.assignment) == {} and r.member_epoch == h.cg().assignment_epoch
    else:
        assert "foo" in h.names(r.assignment)
    h.advance(1500)
    r = h.cgh(member_id="m", epoch=r.member_epoch, instance="i1", topics=None, owned=h.names(r.assignment))
    assert r.error_code == 0 and h.cg().members["m"].target       # computed with it: a target of its own
