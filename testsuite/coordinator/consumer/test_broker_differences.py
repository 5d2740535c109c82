"""KIP-848 heartbeats where kshim answered otherwise than the Kafka 4.3.1 broker (found by the wire
differential tester; each has a replay under testsuite/compat/wire_replays/)."""

from __future__ import annotations

import pytest

from shim.coordinator import errors as E
from shim.coordinator.consumer import codes as K
from testsuite.coordinator.consumer.harness import ConsumerHarness


@pytest.fixture
def h():
    return ConsumerHarness({"foo": 6, "bar": 3})


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


def test_a_regex_brought_within_10s_of_the_last_resolution_waits(h):
    """GroupMetadataManager.maybeUpdateRegularExpressions: no resolution within 10 s
    (REGEX_BATCH_REFRESH_MIN_INTERVAL_MS) of the last one; a heartbeat after that resolves every
    subscribed regex, and only then the new one bumps the epoch (replay regex-refresh-min-interval.json,
    seed 5145)."""
    h.cgh(member_id="a", topics=None, regex="fo.*")
    h.advance(0)
    g = h.cg()
    assert g.group_epoch == 2 and g.regex_topics == {"fo.*": frozenset({"foo"})}
    h.advance(200)
    r = h.cgh(member_id="b", topics=["bar"], regex="ba.*")
    assert r.member_epoch == 3                             # its names bumped
    h.advance(0)
    assert "ba.*" not in g.regex_topics and g.group_epoch == 3
    h.advance(9_000)
    h.cgh(member_id="b", epoch=3, topics=None, rebalance=-1, owned=None)
    h.advance(0)
    assert "ba.*" not in g.regex_topics and g.group_epoch == 3
    h.advance(1_000)                                       # 10.2 s after the first resolution
    h.cgh(member_id="b", epoch=3, topics=None, rebalance=-1, owned=None)
    assert g.group_epoch == 3
    h.advance(0)
    assert g.regex_topics == {"fo.*": frozenset({"foo"}), "ba.*": frozenset({"bar"})}
    assert g.group_epoch == 4
