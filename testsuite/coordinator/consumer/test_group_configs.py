"""Per-group configs (GroupConfigManager / GroupConfig.evaluate) on the coordinator's clock: the
session timeout, heartbeat interval and assignment interval GroupMetadataManager reads per group."""

from __future__ import annotations

import pytest

from shim.coordinator import errors as E
from shim.coordinator.group_config import evaluate
from testsuite.coordinator.consumer.harness import ConsumerHarness

SESSION = "consumer.session.timeout.ms"
HEARTBEAT = "consumer.heartbeat.interval.ms"


@pytest.fixture
def h():
    return ConsumerHarness({"foo": 6}, consumer_session_timeout_ms=45_000, consumer_min_session_timeout_ms=3000,
                           consumer_heartbeat_interval_ms=5000, consumer_min_heartbeat_interval_ms=500)


def test_member_fenced_at_the_groups_session_timeout_not_the_global_one(h):
    h.c.group_configs_updated("g", {SESSION: "4000"}, now_ms=h.now)
    h.cgh()                                        # joins: session armed at 4 s
    h.cgh("other")                                 # another group keeps the global 45 s
    h.advance(3999)
    assert "m1" in h.cg().members
    h.advance(2)
    assert h.cg().members == {}
    assert "m1" in h.cg("other").members
    h.advance(40_000)
    assert "m1" in h.cg("other").members
    h.advance(1000)
    assert h.cg("other").members == {}


def test_heartbeat_interval_answered_per_group(h):
    h.c.group_configs_updated("g", {HEARTBEAT: "700", SESSION: "9000"}, now_ms=h.now)
    assert h.cgh().heartbeat_interval_ms == 700
    assert h.cgh("other").heartbeat_interval_ms == 5000


def test_change_applies_from_the_next_heartbeat_and_removal_restores_the_global_value(h):
    r = h.cgh()
    assert r.heartbeat_interval_ms == 5000
    h.c.group_configs_updated("g", {SESSION: "3000"}, now_ms=h.now)
    h.advance(10_000)                              # the deadline armed before the change stays (45 s)
    assert "m1" in h.cg().members
    h.cgh(epoch=r.member_epoch, topics=None, owned=None)   # re-armed with 3 s
    h.advance(3001)
    assert h.cg().members == {}
    h.c.group_configs_updated("g", {}, now_ms=h.now)      # the override removed
    assert h.c.group_configs.get("g") is None
    r = h.cgh()
    h.advance(40_000)
    assert "m1" in h.cg().members


def test_values_outside_the_broker_bounds_are_capped_with_a_warning(h):
    seen = []
    h.c.on_event = seen.append
    h.c.group_configs_updated("g", {SESSION: "1000", HEARTBEAT: "999999", "share.session.timeout.ms": "50000",
                                    "unknown.key": "1"}, now_ms=h.now)
    gc = h.c.group_configs.get("g")
    assert gc.consumer_session_timeout_ms == 3000          # group.consumer.min.session.timeout.ms
    assert gc.consumer_heartbeat_interval_ms == 15_000     # group.consumer.max.heartbeat.interval.ms
    assert "unknown.key" not in gc.props and gc.props["share.session.timeout.ms"] == "50000"
    capped = [e for e in seen if e.get("event") == "group_config_capped"]
    assert {e["config"] for e in capped} == {SESSION, HEARTBEAT}
    assert h.cgh().heartbeat_interval_ms == 15_000
    h.advance(3001)
    assert h.cg().members == {}


def test_assignment_interval_per_group(h):
    assert h.c.group_configs.consumer_assignment_interval_ms("g", h.c.cfg) == 1000
    h.c.group_configs_updated("g", {"consumer.assignment.interval.ms": "0"}, now_ms=h.now)
    assert h.c.group_configs.consumer_assignment_interval_ms("g", h.c.cfg) == 0
    h.c.group_configs_updated("g", {"consumer.assignment.interval.ms": "99999"}, now_ms=h.now)
    assert h.c.group_configs.consumer_assignment_interval_ms("g", h.c.cfg) == 15_000


def test_evaluate_warns_when_session_not_above_heartbeat():
    from shim.coordinator import CoordinatorConfig
    cfg = CoordinatorConfig(consumer_min_session_timeout_ms=1000, consumer_min_heartbeat_interval_ms=1000)
    gc, warnings = evaluate("g", {SESSION: "2000", HEARTBEAT: "3000"}, cfg)
    assert (gc.consumer_session_timeout_ms, gc.consumer_heartbeat_interval_ms) == (2000, 3000)
    assert any("not greater than" in w["reason"] for w in warnings)


def test_unknown_member_after_fencing_by_group_timeout(h):
    h.c.group_configs_updated("g", {SESSION: "5000"}, now_ms=h.now)
    r = h.cgh()
    h.advance(5001)
    assert h.cgh(epoch=r.member_epoch, topics=None, owned=None).error_code == E.UNKNOWN_MEMBER_ID
