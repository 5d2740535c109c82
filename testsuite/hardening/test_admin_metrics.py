"""The admin endpoint (shim/admin_http.py): /metrics scraped over HTTP after real client traffic,
/faults managed over HTTP, and the delay/close/drop actions seen on the wire."""

from __future__ import annotations

import json
import socket
import time

import pytest

from kcodec.generated.api_versions import ApiVersionsRequest
from kcodec.generated.heartbeat import HeartbeatRequest
from kcodec.generated.metadata import MetadataRequest
from testsuite.harness.clients import ck_consume, ck_produce
from shim.compat.wire import Wire


def _sum(m: dict[str, float], prefix: str, *labels: str) -> float:
    return sum(v for k, v in m.items() if k.startswith(prefix) and all(lab in k for lab in labels))


def test_metrics_move_with_real_traffic(admin_kshim, new_topic, names):
    proc, admin = admin_kshim
    before = admin.metrics()
    topic = new_topic(partitions=2)
    values = [f"m{i}".encode() for i in range(300)]
    ck_produce(proc.bootstrap, topic, values)
    group = names.group()
    assert sorted(ck_consume(proc.bootstrap, topic, group, len(values))) == sorted(values)
    with Wire(proc.bootstrap) as w:          # one connection held open during the scrape
        w.send(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        w.read_response(18, 3)
        after = admin.metrics()
    for api_name in ("Produce", "Fetch", "JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch", "Metadata"):
        assert _sum(after, "kshim_requests_total", f'api="{api_name}"') > \
            _sum(before, "kshim_requests_total", f'api="{api_name}"'), api_name
    assert _sum(after, "kshim_responses_total", 'api="OffsetCommit"', 'error="0"') >= 1
    assert _sum(after, "kshim_upstream_latency_seconds_count", 'api="Produce"') > \
        _sum(before, "kshim_upstream_latency_seconds_count", 'api="Produce"')
    assert after['kshim_upstream_latency_seconds_bucket{api="Produce",le="+Inf"}'] == \
        after['kshim_upstream_latency_seconds_count{api="Produce"}']
    assert after["kshim_group_rebalances_total"] > before.get("kshim_group_rebalances_total", 0)
    assert after["kshim_connections_open"] >= 1
    assert _sum(after, "kshim_groups") >= 1                 # our group (Empty once the consumer left)
    assert after['kshim_groups{state="Empty"}'] >= 1


def test_faults_endpoint_and_error_metrics(admin_kshim, names):
    proc, admin = admin_kshim
    admin.clear()
    status, out = admin.call("POST", "/faults", {"api": "Heartbeat", "action": "explode"})
    assert status == 400 and "action" in out["error"]
    assert admin.call("GET", "/nothing")[0] == 404
    [rule] = admin.add({"api": "Heartbeat", "action": "error", "error": "REBALANCE_IN_PROGRESS", "every": 2})
    assert admin.call("GET", "/faults")[1]["rules"][0]["id"] == rule["id"]
    before = admin.metrics()
    group = names.group()
    codes = []
    with Wire(proc.bootstrap) as w:
        for _ in range(4):
            w.send(12, 4, HeartbeatRequest(group_id=group, generation_id=1, member_id="m"))
            codes.append(w.read_response(12, 4)[1].error_code)
    # every 2nd is the injected error; the others reach the coordinator (which does not know the group)
    assert codes[1] == codes[3] == 27 and codes[0] == codes[2] != 27
    assert admin.rules()[rule["id"]]["applied"] == 2 and admin.rules()[rule["id"]]["matched"] == 4
    after = admin.metrics()
    assert _sum(after, "kshim_responses_total", 'api="Heartbeat"', 'error="27"') - \
        _sum(before, "kshim_responses_total", 'api="Heartbeat"', 'error="27"') == 2
    assert _sum(after, "kshim_faults_injected_total", 'action="error"', 'api="Heartbeat"') >= 2
    assert admin.call("DELETE", f"/faults/{rule['id']}")[1] == {"removed": 1}
    assert admin.rules() == {}


def test_delay_keeps_order_close_and_drop(admin_kshim, names):
    proc, admin = admin_kshim
    admin.clear()
    admin.add({"api": "Metadata", "action": "delay", "delay_ms": 600, "first": 1, "client_id": "delay-"})
    with Wire(proc.bootstrap) as w:
        t0 = time.monotonic()
        first = w.send(3, 12, MetadataRequest(topics=[]), client_id="delay-1")
        second = w.send(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                        client_id="delay-1")
        assert w.read_response(3, 12)[0] == first          # the held request still answers first
        assert time.monotonic() - t0 >= 0.55
        assert w.read_response(18, 3)[0] == second
    admin.clear()
    admin.add({"api": "Metadata", "action": "close", "client_id": "close-"})
    with Wire(proc.bootstrap) as w:
        w.send(3, 12, MetadataRequest(topics=[]), client_id="close-1")
        assert w.closed_by_peer(5)
    admin.clear()
    admin.add({"api": "Metadata", "action": "drop", "first": 1, "client_id": "drop-"})
    with Wire(proc.bootstrap) as w:
        w.send(3, 12, MetadataRequest(topics=[]), client_id="drop-1")
        w.send(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"), client_id="drop-1")
        w.sock.settimeout(1.5)              # nothing comes back: the dropped request blocks the line
        with pytest.raises(socket.timeout):
            w.sock.recv(1)
    with Wire(proc.bootstrap) as w:         # a new connection is served (first: 1 is used up)
        w.send(3, 12, MetadataRequest(topics=[]), client_id="drop-2")
        assert w.read_response(3, 12)[1].brokers
    admin.clear()


def test_json_logs(kafka, tmp_path):
    from testsuite.hardening.conftest import start_admin_kshim
    proc, admin = start_admin_kshim(kafka, "hardening-json-logs", ["--log-format", "json"])
    try:
        admin.add({"api": "Heartbeat", "action": "drop"})
    finally:
        proc.stop()
    lines = [json.loads(line) for line in proc.log_text().splitlines() if line.startswith("{")]
    assert any(rec["logger"] == "kshim.admin" and "fault rules added" in rec["msg"] for rec in lines)
    assert all({"ts", "level", "logger", "msg"} <= set(rec) for rec in lines)
