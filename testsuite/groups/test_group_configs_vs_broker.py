"""The broker's group settings through kshim, side by side with the broker (same run):

- a per-group `consumer.session.timeout.ms` set with kafka-configs (through kshim, or directly on the
  broker, before the group exists or while its member is live) changes when kshim fences a silent
  KIP-848 member (raw ConsumerGroupHeartbeat), as it changes when the broker fences one;
- kshim started without group flags adopts the broker's own group settings (banner), an explicit flag
  still wins (the heartbeat interval kshim answers).
"""

from __future__ import annotations

import time

import pytest

from kcodec.generated.consumer_group_describe import ConsumerGroupDescribeRequest
from kcodec.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kcodec.generated.find_coordinator import FindCoordinatorRequest
from shim.compat.javaclient import run_tool
from shim.compat.wire import Wire
from shim.testing.kshimproc import KshimProcess
from shim.testing.ports import free_port_block

pytestmark = pytest.mark.timing   # compares wall-clock measurements: runs alone (scripts/test)

LOADING = (14, 15, 16)
GROUP_SESSION_MS = 4000          # the broker's bounds (FAST_SETTINGS): 3000..60000; its default 10000


def _call(boot: str, key: int, version: int, req):
    deadline = time.monotonic() + 30
    while True:
        with Wire(boot) as w:
            w.send(key, version, req)
            body = w.read_response(key, version)[1]
        code = body.groups[0].error_code if key == 69 else body.error_code
        if code not in LOADING or time.monotonic() > deadline:
            return body
        with Wire(boot) as w:                 # creates __consumer_offsets on a fresh broker
            w.send(10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=[req.group_id if key == 68 else "x"]))
            w.read_response(10, 4)
        time.sleep(0.5)


def _join(boot: str, group: str, topic: str, member: str):
    r = _call(boot, 68, 1, ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=[topic], topic_partitions=[]))
    assert r.error_code == 0, (group, r.error_code, r.error_message)
    return r


def _beat(boot: str, group: str, member: str, epoch: int):
    r = _call(boot, 68, 1, ConsumerGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch))
    assert r.error_code == 0, (group, r.error_code, r.error_message)
    return r


def _members(boot: str, group: str) -> int:
    (g,) = _call(boot, 69, 1, ConsumerGroupDescribeRequest(group_ids=[group])).groups
    return len(g.members) if g.error_code == 0 else 0


def _set_session(kafka_install, boot: str, group: str, ms: int) -> None:
    run_tool(kafka_install, "kafka-configs", ["--bootstrap-server", boot, "--entity-type", "groups", "--entity-name",
                                              group, "--alter", "--add-config", f"consumer.session.timeout.ms={ms}"])


def test_group_session_timeout_fences_as_on_the_broker(kafka, kafka_install, names, new_topic, tmp_path):
    topic = new_topic()
    port = free_port_block(5, start=33500)
    k = KshimProcess(kafka.bootstrap, port, tmp_path / "kshim.log", same_as_broker=False,
                     extra=["--state-topic", "", "--group-configs-refresh-ms", "500",
                            "--group-consumer-heartbeat-interval-ms", "2000"]).start()
    try:
        banner = k.log_text()
        # adopted from the broker (FAST_SETTINGS), not Kafka's documented defaults (6000, 45000)
        assert "group.min.session.timeout.ms=1000" in banner and "group.consumer.session.timeout.ms=10000" in banner
        assert "kept as given: group.consumer.heartbeat.interval.ms=2000 (broker: 1000)" in banner
        boot, direct = k.bootstrap, kafka.bootstrap
        g = {tag: names.group(tag) for tag in ("via-kshim", "direct", "changed-live", "control", "b", "b-control")}
        # the configs: through kshim (watched alteration), directly on the broker (read on the first heartbeat)
        _set_session(kafka_install, boot, g["via-kshim"], GROUP_SESSION_MS)
        _set_session(kafka_install, direct, g["direct"], GROUP_SESSION_MS)
        _set_session(kafka_install, direct, g["b"], GROUP_SESSION_MS)
        # a live member whose group's config changes directly on the broker (the periodic read)
        live = _join(boot, g["changed-live"], topic, "member-live-00000000")
        _set_session(kafka_install, direct, g["changed-live"], GROUP_SESSION_MS)
        time.sleep(1.5)
        members = {  # (bootstrap, group) -> member id, each heartbeating once more now, then silent
            (boot, g["changed-live"]): "member-live-00000000"}
        answers, last = {}, {}                 # group -> when its member last heartbeated
        for target, tags in ((boot, ("via-kshim", "direct", "control")), (direct, ("b", "b-control"))):
            for tag in tags:
                mid = f"member-{tag}-0000000000"[:24]
                answers[tag] = _join(target, g[tag], topic, mid)
                last[g[tag]] = time.monotonic()
                members[(target, g[tag])] = mid
        _beat(boot, g["changed-live"], "member-live-00000000", live.member_epoch)
        t0 = last[g["changed-live"]] = time.monotonic()
        assert answers["control"].heartbeat_interval_ms == 2000       # explicit flag wins over the broker's 1000
        assert answers["b-control"].heartbeat_interval_ms == 1000     # the broker's own

        fenced_at: dict[str, float] = {}
        while len(fenced_at) < 4 and time.monotonic() - t0 < 9:
            for (target, group), mid in members.items():
                if group not in fenced_at and _members(target, group) == 0:
                    fenced_at[group] = time.monotonic() - last[group]
            time.sleep(0.2)
        at = {tag: fenced_at.get(g[tag]) for tag in g}
        for tag in ("via-kshim", "direct", "changed-live", "b"):     # kshim as the broker: at the group's 4 s
            assert at[tag] is not None and 3.8 <= at[tag] <= 6.0, at
        # the groups without a config keep the broker-level 10 s on both sides
        assert at["control"] is None and at["b-control"] is None, at
        assert _members(boot, g["control"]) == 1 and _members(direct, g["b-control"]) == 1
        # kshim's log names the configs it applied
        log = k.log_text()
        assert f"group_config_updated group={g['via-kshim']}" in log
    finally:
        k.stop()
