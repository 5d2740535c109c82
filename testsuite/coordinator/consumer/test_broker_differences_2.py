"""More KIP-848 heartbeats where kshim answered otherwise than the Kafka 4.3.1 broker (found by the wire
differential tester; each has a replay under testsuite/compat/wire_replays/)."""

from __future__ import annotations

import pytest

from shim.coordinator.consumer import codes as K
from testsuite.coordinator.consumer.harness import ConsumerHarness


@pytest.fixture
def h():
    return ConsumerHarness({"foo": 6, "bar": 3})


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
