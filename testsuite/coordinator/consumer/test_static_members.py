"""Static members of a consumer group (GroupMetadataManager.consumerGroupHeartbeat with an instance id):
a member that left with epoch -2 keeps its instance id until a replacement's records are kept. The cases
citing a replay were found by the wire differential tester against a Kafka 4.3.1 broker; the replays
are under testsuite/compat/wire_replays/."""

from __future__ import annotations

from shim.coordinator import errors as E
from shim.coordinator.consumer import codes as K


def test_refused_static_rejoin_keeps_the_member_that_left(h):
    """GroupMetadataManager.consumerGroupHeartbeat: the replacement of a static member that left (epoch
    -2) is records that a later refusal (an invalid regex) drops; the old member stays, so it may leave
    again (replay static-leave-after-refused-rejoin.json)."""
    assert h.cgh(member_id="a", instance="i1").error_code == 0
    r = h.cgh(member_id="a", instance="i1", epoch=-2, topics=None, rebalance=-1)
    assert (r.error_code, r.member_epoch) == (0, -2)
    r = h.cgh(member_id="b", instance="i1", regex="(t")
    assert r.error_code == K.INVALID_REGULAR_EXPRESSION
    assert h.cg().static_members == {"i1": "a"}
    r = h.cgh(member_id="a", instance="i1", epoch=-2, topics=None, rebalance=-1)
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "a", -2)
    r = h.cgh(member_id="b", instance="i1")
    assert (r.error_code, r.member_id) == (E.NONE, "b")
    assert h.cg().static_members == {"i1": "b"} and list(h.cg().members) == ["b"]
