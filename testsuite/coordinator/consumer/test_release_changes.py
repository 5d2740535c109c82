"""Consumer-group behaviour that changed in Kafka 4.4, followed per the release kshim answers as
(CoordinatorConfig.release, from the upstream broker's; shim/coordinator/releases.py): each case run as
4.3 and as 4.4. The same sequences against real 4.3.1 and 4.4.0 brokers: the differential tester."""

from __future__ import annotations

import pytest

from kcodec.protocol import Error as E
from shim.coordinator import CoordinatorConfig, GroupCoordinator
from testsuite.coordinator.consumer.harness import Client, ConsumerHarness

BOTH = pytest.mark.parametrize("release", ["4.3", "4.4"])


def harness(release: str, **cfg) -> ConsumerHarness:
    return ConsumerHarness({"foo": 4, "bar": 2}, release=release, **cfg)


@BOTH
def test_everyone_fenced_moves_the_assignment_epoch(release):
    """KAFKA-20442: when the last members are fenced, 4.4 writes the target assignment of the new epoch."""
    h = harness(release)
    a = Client(h, "a")
    a.beat()
    a.beat()
    assert h.cgh(member_id="a", epoch=-1).error_code == 0
    (g,) = h.describe_cg("g").groups
    assert g.group_epoch == 3                    # 1 created, 2 a joined, 3 a left
    assert g.assignment_epoch == (3 if release == "4.4" else 2)


@BOTH
def test_a_changed_preferred_assignor_bumps_the_epoch(release):
    """KAFKA-20434: a member switching the group's preferred server assignor bumps the group epoch in 4.4."""
    h = harness(release)
    r = h.cgh(member_id="a")
    epoch = r.member_epoch
    h.cgh(member_id="a", epoch=epoch, topics=None)
    r = h.cgh(member_id="a", epoch=epoch, topics=None, assignor="range")
    assert r.error_code == 0
    assert h.cg().group_epoch == (epoch + 1 if release == "4.4" else epoch)
    (g,) = h.describe_cg("g").groups
    assert g.assignor_name == "range"


@BOTH
def test_a_static_member_rejoins_a_full_group(release):
    """KAFKA-20601: 4.4 lets a static member come back (new member id, its instance id) to a full group."""
    h = harness(release, consumer_max_size=1)
    r = h.cgh(member_id="s1", instance="i1")
    assert h.cgh(member_id="s1", epoch=-2, instance="i1", topics=None).error_code == 0     # left for now
    r = h.cgh(member_id="s2", instance="i1")
    if release == "4.4":
        assert r.error_code == 0 and set(h.cg().members) == {"s2"}
    else:
        assert r.error_code == E.GROUP_MAX_SIZE_REACHED and set(h.cg().members) == {"s1"}


@BOTH
def test_a_dynamic_member_becoming_static_is_found_by_its_instance_id(release):
    """A member that joined without an instance id rejoins (epoch 0, same member id) with one: its next
    heartbeat with that instance id is its own (ConsumerGroup.updateStaticMember), in every release."""
    h = harness(release)
    r = h.cgh(member_id="m")
    r = h.cgh(member_id="m", instance="i1")
    epoch = r.member_epoch
    r = h.cgh(member_id="m", epoch=epoch, instance="i1", topics=None, owned=h.names(r.assignment) or {})
    assert (r.error_code, r.error_message) == (0, None)
    assert h.cg().static_members == {"i1": "m"}


@BOTH
def test_a_changed_instance_id_drops_the_old_one_from_44(release):
    """KAFKA-20747: from 4.4 the instance id a member had before no longer maps to it."""
    h = harness(release)
    h.cgh(member_id="m", instance="i1")
    r = h.cgh(member_id="m", instance="i2")
    assert r.error_code == 0
    assert h.cg().static_members == ({"i2": "m"} if release == "4.4" else {"i1": "m", "i2": "m"})
    # and the same after a restart: the state replayed from the records
    c2 = GroupCoordinator(CoordinatorConfig(release=release), now_ms=h.now, topics=h.topics)
    for rec in h.c.written:
        c2.replay(rec, now_ms=h.now)
    assert c2.consumer_groups["g"].static_members == h.cg().static_members
