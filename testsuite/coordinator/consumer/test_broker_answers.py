"""Answers of the real broker (Kafka 4.3.1, seen with raw requests) that kshim gives alike: a classic static
member taking the last consumer-protocol member's instance id downgrades the group, a classic rejoin with
rebalance timeout -1 is fenced at once, JoinGroup errors raised inside a consumer group carry member id "",
ConsumerGroupHeartbeat's validation order and messages, and the GroupIdNotFound messages naming a group
of the other type. testsuite/groups/test_consumer_classic_vs_broker.py sends the same requests to both."""

from __future__ import annotations

import pytest

from shim.coordinator import errors as E
from shim.coordinator.consumer import codes as K
from testsuite.coordinator.consumer.harness import Client, ConsumerHarness
from testsuite.coordinator.consumer.test_migration import SESSION, meta

RANGE = (("range", meta("foo")),)


def harness(**cfg) -> ConsumerHarness:
    return ConsumerHarness({"foo": 4, "bar": 2}, **cfg)


def stable_static(h: ConsumerHarness, instance: str = "i1") -> Client:
    s = Client(h, "s", instance=instance)
    for _ in range(2):
        assert s.beat().error_code == 0
    return s


# ---------------------------------------------------------------------------------- downgrade by replacement
def test_classic_static_member_replacing_the_only_consumer_member_downgrades():
    # GroupMetadataManager.validateOnlineDowngradeWithReplacedMember: no "group not empty" condition
    h = harness()
    stable_static(h)
    epoch = h.cg().group_epoch
    r = h.answered(h.join("g", instance="i1", protocols=RANGE, session=SESSION))
    assert (r.error_code, r.generation_id, r.leader) == (0, epoch, "")
    assert h.cg() is None
    g = h.group("g")
    assert g.state == "Stable" and g.generation_id == epoch and set(g.members) == {r.member_id}
    (d,) = h.describe("g").groups
    assert (d.error_code, d.group_state, d.protocol_data) == (0, "Stable", "range")
    s = h.answered(h.sync("g", r.member_id, r.generation_id, instance="i1"))
    assert s.error_code == 0


def test_classic_static_replacement_with_a_new_subscription_downgrades_at_generation_0():
    h = harness()
    stable_static(h)
    r = h.answered(h.join("g", instance="i1", protocols=(("range", meta("foo", "bar")),), session=SESSION))
    assert (r.error_code, r.generation_id) == (0, 0)
    assert h.cg() is None and h.group("g").state == "PreparingRebalance"


def test_replacing_a_classic_static_member_keeps_the_consumer_group():
    # allMembersUseClassicProtocolExcept(replaced) is false when the replaced member is classic itself
    h = harness()
    Client(h, "c").beat()
    first = h.answered(h.join("g", instance="i1", protocols=RANGE, session=SESSION))
    assert first.error_code == 0
    r = h.answered(h.join("g", instance="i1", protocols=RANGE, session=SESSION))
    assert r.error_code == 0 and h.cg() is not None and h.cg().static_members["i1"] == r.member_id


# ---------------------------------------------------------------------------------- rebalance timeout -1
def test_classic_rejoin_with_rebalance_timeout_minus_one_is_fenced_before_its_sync():
    h = harness()
    Client(h, "c").beat()
    mid = h.answered(h.join("g", protocols=RANGE, session=SESSION)).member_id
    j = h.answered(h.join("g", mid, protocols=RANGE, session=SESSION))
    assert h.answered(h.sync("g", mid, j.generation_id)).error_code == 0
    again = h.answered(h.join("g", mid, protocols=RANGE, session=SESSION, rebalance=-1))
    assert again.error_code == 0 and again.member_id == mid     # answered, then the sync timer expires at once
    assert h.answered(h.sync("g", mid, again.generation_id)).error_code == E.UNKNOWN_MEMBER_ID
    assert mid not in h.cg().members


# ---------------------------------------------------------------------------------- JoinGroup errors
def test_join_errors_inside_a_consumer_group_carry_no_member_id():
    h = harness()
    Client(h, "c").beat()
    assert h.answered(h.join("g", instance="i1", protocols=RANGE, session=SESSION)).error_code == 0
    cases = [
        (dict(member_id="given", ptype="other"), E.INCONSISTENT_GROUP_PROTOCOL),
        (dict(member_id="given", protocols=(("sticky", meta("foo")),)), E.INCONSISTENT_GROUP_PROTOCOL),
        (dict(member_id="other-id", instance="i1"), E.FENCED_INSTANCE_ID),
        (dict(member_id="other-id", instance="i9"), E.UNKNOWN_MEMBER_ID),
    ]
    for kw, code in cases:
        kw.setdefault("protocols", RANGE)
        r = h.answered(h.join("g", session=SESSION, **kw))
        assert (r.error_code, r.member_id, r.generation_id) == (code, "", -1), kw
    # GroupCoordinatorService.joinGroup's own check echoes the id
    r = h.answered(h.join("g", "given", protocols=RANGE, session=10))
    assert (r.error_code, r.member_id) == (E.INVALID_SESSION_TIMEOUT, "given")


@pytest.mark.parametrize("release,code", [("4.3", E.UNKNOWN_SERVER_ERROR), ("4.4", E.INCONSISTENT_GROUP_PROTOCOL)])
@pytest.mark.parametrize("metadata", [b"", b"\x00", b"\xff\xff\x00\x00\x00\x00", b"\x00\x01garbage",
                                      b"\x00\x01\x00\x00\x00\x01\x00\x05ab"])
def test_join_with_a_malformed_subscription_into_a_consumer_group(metadata, release, code):
    # Kafka 4.3: deserializeSubscription throws IllegalStateException (UNKNOWN_SERVER_ERROR); 4.4 answers
    # INCONSISTENT_GROUP_PROTOCOL (KAFKA-20662, KAFKA-20570); the group is unchanged either way
    h = harness(release=release)
    Client(h, "c").beat()
    r = h.answered(h.join("g", "given", protocols=(("range", metadata),), session=SESSION))
    assert (r.error_code, r.member_id) == (code, "")
    assert set(h.cg().members) == {"c"}


def test_join_refused_by_a_disabled_migration_carries_no_member_id():
    h = harness(consumer_migration_policy="disabled")
    Client(h, "c").beat()
    r = h.answered(h.join("g", "given", protocols=RANGE, session=SESSION))
    assert (r.error_code, r.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")


# ---------------------------------------------------------------------------------- ConsumerGroupHeartbeat
@pytest.mark.parametrize("kw, code, message", [
    (dict(gid=" "), K.INVALID_REQUEST, "GroupId can't be empty."),
    (dict(member_id=" ", epoch=5, rebalance=-1), K.INVALID_REQUEST, "MemberId can't be empty."),
    (dict(member_id="", epoch=1, instance="", rack=""), K.INVALID_REQUEST, "MemberId can't be empty."),
    (dict(instance=" \t"), K.INVALID_REQUEST, "InstanceId can't be empty."),
    (dict(epoch=-3, rebalance=-1), K.INVALID_REQUEST, "MemberEpoch is invalid."),
    (dict(epoch=-3, rebalance=-1, assignor="foo"), K.INVALID_REQUEST, "MemberEpoch is invalid."),
    (dict(topics=None), K.INVALID_REQUEST,
     "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    (dict(assignor="foo"), K.UNSUPPORTED_ASSIGNOR, "ServerAssignor foo is not supported. Supported assignors: "
                                                   "uniform, range."),
    (dict(epoch=1, rebalance=-1), E.GROUP_ID_NOT_FOUND, "Consumer group g not found."),
    (dict(epoch=-1, rebalance=-1), E.GROUP_ID_NOT_FOUND, "Group g not found."),
])
def test_heartbeat_validation_order_and_messages(kw, code, message):
    h = harness()
    r = h.cgh(kw.pop("gid", "g"), **kw)
    assert (r.error_code, r.error_message) == (code, message)
    assert h.cg() is None and h.cg(" ") is None


def test_heartbeat_to_a_classic_group_names_its_type():
    h = harness()
    mid = h.answered(h.join("g", protocols=RANGE, session=SESSION)).member_id
    h.join("g", mid, protocols=RANGE, session=SESSION)
    for kw in (dict(epoch=5, rebalance=-1), dict(epoch=-1, rebalance=-1), dict(epoch=-2, instance="i", rebalance=-1)):
        r = h.cgh("g", "m", **kw)
        assert (r.error_code, r.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")


def test_static_member_identity_messages():
    h = harness()
    stable_static(h)
    r = h.cgh("g", "x", 0, instance="i1")
    assert (r.error_code, r.error_message) == (
        K.UNRELEASED_INSTANCE_ID,
        "Static member x with instance id i1 cannot join the group because the instance id is owned by s member.")
    for epoch in (1, -1):
        r = h.cgh("g", "x", epoch, instance="i1", rebalance=-1)
        assert (r.error_code, r.error_message) == (
            E.FENCED_INSTANCE_ID, "Static member x with instance id i1 was fenced by member s.")


def test_describe_groups_of_a_consumer_group_names_its_type():
    h = harness()
    Client(h, "c").beat()
    (d,) = h.describe("g").groups
    assert (d.error_code, d.error_message, d.group_state) == (E.GROUP_ID_NOT_FOUND,
                                                              "Group g is not a classic group.", "Dead")
    (d,) = h.describe("none").groups
    assert d.error_message == "Group none not found."
    (d,) = h.describe("g", v=5).groups
    assert (d.error_code, d.error_message) == (E.NONE, None)
