"""`kshim trace analyze` for share groups (KIP-932) and streams groups (KIP-1071): member timelines
folded from a trace of real encoded frames (testsuite/trace/sharebuild.py), directly and on Spark
(local[2]), and their report sections."""

from __future__ import annotations

import json

import pytest

from kcodec.protocol import ApiKey
from shim.trace.analyze.member_timeline import fold_heartbeats
from shim.trace.analyze.report import heartbeat_sections, heartbeat_summary, render_html
from shim.trace.analyze.viewer import viewer_data
from shim.trace.show import read_trace
from testsuite.trace.sharebuild import scenario

NAMES = {"PxwqTmt9To-aCxwtPk9aaw": "orders"}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("share-analyze")
    scenario(d)
    return d


def folded(trace, group, kind, api, names=NAMES):
    # every hop of the group's heartbeats: the fold reads the client side only
    recs = [r for r in read_trace(trace) if r.get("api_key") == api and r.get("group") == group]
    return fold_heartbeats(group, kind, recs, names)


def steps(timeline, *cols):
    return [tuple(r[c] for c in ("member", "kind", "epoch", *cols)) for r in timeline]


def test_share_member_timeline(trace):
    timeline, members, segments = folded(trace, "sg", "share", ApiKey.SHARE_GROUP_HEARTBEAT)
    assert steps(timeline, "assignment") == [
        ("S-1", "joined", 1, ["orders-0", "orders-1", "orders-2"]),
        ("S-2", "joined", 2, ["orders-2"]),
        ("S-1", "epoch", 2, ["orders-0", "orders-1"]),             # orders-2 moved to S-2
        ("S-2", "fenced", 1, []),                                  # S-2's epoch-2 heartbeat: no change, no row
        ("S-2", "joined", 4, ["orders-2"]),
        ("S-1", "left", -1, [])]
    assert timeline[3]["detail"] == "FENCED_MEMBER_EPOCH; sent epoch 1"
    by = {m["member"]: m for m in members}
    s1, s2 = by["S-1"], by["S-2"]
    assert (s1["heartbeats"], s1["joins"], s1["epochs"], s1["last_epoch"], s1["end"]) == (3, 1, [1, 2], -1, "left")
    assert (s2["heartbeats"], s2["joins"], s2["epochs"], s2["fenced"], s2["end"]) == (4, 2, [2, 4], 1, None)
    assert s2["assignment"] == ["orders-2"] and s1["client_id"] == "s1" and s1["heartbeat_interval_ms"] == 5000
    assert s1["left_wall_ms"] - s1["joined_wall_ms"] == 14900 and s1["heartbeat_gap_max_ms"] == 9900.0
    assert [(s["member"], s["epoch"], s["assignment"], s["to_wall_ms"] is None) for s in segments] == [
        ("S-1", 1, ["orders-0", "orders-1", "orders-2"], False), ("S-2", 2, ["orders-2"], False),
        ("S-1", 2, ["orders-0", "orders-1"], False), ("S-2", 4, ["orders-2"], True)]


def test_share_topic_ids_without_metadata_stay_ids(trace):
    timeline, _, _ = folded(trace, "sg", "share", ApiKey.SHARE_GROUP_HEARTBEAT, names={})
    assert timeline[0]["assignment"] == ["PxwqTmt9To-aCxwtPk9aaw-0", "PxwqTmt9To-aCxwtPk9aaw-1", "PxwqTmt9To-aCxwtPk9aaw-2"]


def test_streams_member_timeline(trace):
    timeline, members, segments = folded(trace, "app", "streams", ApiKey.STREAMS_GROUP_HEARTBEAT)
    assert steps(timeline, "active_tasks", "standby_tasks", "warmup_tasks") == [
        ("T-1", "joined", 1, ["0_0", "0_1", "0_2"], [], []),
        ("T-2", "joined", 2, [], [], ["0_2"]),
        ("T-1", "epoch", 2, ["0_0", "0_1"], ["0_2"], []),
        ("T-2", "epoch", 3, ["0_2"], [], []),                      # the warmup task became active
        ("T-2", "left", -2, [], [], []),
        ("T-2", "fenced", 3, [], [], [])]
    assert timeline[2]["detail"] == "STALE_TOPOLOGY: The topology epoch is stale"
    assert timeline[4]["detail"] == "static leave (epoch -2)" and timeline[4]["instance"] == "i-2"
    assert timeline[5]["detail"] == "UNKNOWN_MEMBER_ID; sent epoch 3"
    by = {m["member"]: m for m in members}
    assert (by["T-1"]["epochs"], by["T-1"]["active_tasks"], by["T-1"]["standby_tasks"]) == ([1, 2], ["0_0", "0_1"], ["0_2"])
    assert (by["T-2"]["instance"], by["T-2"]["epochs"], by["T-2"]["end"], by["T-2"]["fenced"]) == ("i-2", [2, 3], "fenced", 1)
    assert [(s["member"], s["epoch"], s["assignment"]) for s in segments] == [
        ("T-1", 1, ["active 0_0", "active 0_1", "active 0_2"]), ("T-2", 2, ["warmup 0_2"]),
        ("T-1", 2, ["active 0_0", "active 0_1", "standby 0_2"]), ("T-2", 3, ["active 0_2"])]


def test_a_streams_status_is_a_row_when_it_changes(trace):
    recs = [r for r in read_trace(trace) if r.get("api_key") == ApiKey.STREAMS_GROUP_HEARTBEAT
            and r.get("member") == "T-1"]
    rq, rs = [r for r in recs if r["corr"] == 8]               # T-1's answer with STALE_TOPOLOGY

    def again(corr: int, t: int, status) -> list[dict]:
        body = {**rs["body"], "activeTasks": None, "standbyTasks": None, "warmupTasks": None, "status": status}
        return [dict(rq, corr=corr, ts_ns=rq["ts_ns"] + t), dict(rs, corr=corr, ts_ns=rs["ts_ns"] + t, body=body)]
    more = again(100, 10**9, rs["body"]["status"]) + again(101, 2 * 10**9, None)
    timeline, _, _ = fold_heartbeats("app", "streams", recs + more)
    assert steps(timeline)[1:] == [("T-1", "epoch", 2), ("T-1", "status", 2)]
    assert timeline[-1]["detail"] == "status cleared" and timeline[-1]["active_tasks"] == ["0_0", "0_1"]


def test_a_member_seen_mid_life_and_other_errors(trace):
    recs = [r for r in read_trace(trace) if r.get("api_key") == ApiKey.SHARE_GROUP_HEARTBEAT]
    late = [r for r in recs if r["corr"] >= 6]                 # the trace starts after both joined
    timeline, members, _ = fold_heartbeats("sg", "share", late, NAMES)
    assert steps(timeline)[:1] == [("S-1", "first_seen", 2)]
    assert {m["member"]: m["joins"] for m in members} == {"S-1": 0, "S-2": 1}
    answer = next(r for r in recs if r["corr"] == 7 and r["dir"] == "kshim->client")
    broken = dict(answer, body={**answer["body"], "errorCode": 15, "errorMessage": "not available"})
    timeline, members, _ = fold_heartbeats("sg", "share", [r for r in recs if r["corr"] == 7 and r is not answer]
                                           + [broken], NAMES)
    assert steps(timeline) == [("S-2", "error", 2)] and timeline[0]["detail"] == "COORDINATOR_NOT_AVAILABLE: not available"
    assert members[0]["errors"] == ["COORDINATOR_NOT_AVAILABLE"] and members[0]["end"] == "error COORDINATOR_NOT_AVAILABLE"


def tables(trace) -> dict:
    out = {}
    for group, kind, api in (("sg", "share", ApiKey.SHARE_GROUP_HEARTBEAT), ("app", "streams", ApiKey.STREAMS_GROUP_HEARTBEAT)):
        tl, ms, seg = folded(trace, group, kind, api)
        out.update({f"{kind}_timeline": tl, f"{kind}_members": ms, f"{kind}_epochs": seg})
    return out


def test_report_sections_per_group_type(trace):
    t = tables(trace)
    s = heartbeat_summary(t)
    assert s == {"share_groups": [{"group": "sg", "group_type": "share", "members": 2, "joins": 3, "left": 1,
                                   "fenced": 1, "errors": 0, "max_epoch": 4}],
                 "streams_groups": [{"group": "app", "group_type": "streams", "members": 2, "joins": 2, "left": 0,
                                     "fenced": 1, "errors": 0, "max_epoch": 3}]}
    summary = {"trace": "t", "records": None, "group_records": 0, "master": "local[1]", "made": "now", **s}
    html = heartbeat_sections(summary, t)
    assert html.index('id="share-groups"') < html.index('id="streams-groups"')
    assert html.count('<div class="view"') == 2
    views = viewer_data(t, [], {"share": ["sg"], "streams": ["app"]})["groups"]
    assert [v["type"] for v in views] == ["share", "streams"] and sum(len(v["segs"]) for v in views) == 8
    texts = [s[5] for v in views for s in v["segs"]]
    assert 'S-2 epoch 4: orders-2' in texts and 'T-1 epoch 2: active 0_0, active 0_1, standby 0_2' in texts
    kinds = [m[2] for v in views for m in v["marks"]]
    assert kinds.count("fenced") == 2 and "left" in kinds
    page = render_html(summary, [], {"anomalies": [], **t})
    assert "<h2>Share and streams groups</h2>" in page and page.count('data-group="sg"') >= 1


def test_analyze_on_spark_writes_the_tables(spark, trace, tmp_path):
    import pyarrow.parquet as pq

    from shim.trace.analyze.pipeline import analyze
    out = tmp_path / "report"
    summary = analyze(spark, trace, out, master="local[2]", png=False)
    assert summary["groups"] == []                               # no classic or consumer group
    assert [(g["group"], g["members"], g["max_epoch"]) for g in summary["share_groups"]] == [("sg", 2, 4)]
    assert [(g["group"], g["fenced"]) for g in summary["streams_groups"]] == [("app", 1)]
    direct = tables(trace)
    for name in ("share_timeline", "share_members", "share_epochs", "streams_timeline", "streams_members",
                 "streams_epochs"):
        rows = pq.read_table(out / f"{name}.parquet").to_pylist()
        key = (lambda r: (r["member"], r.get("ts_ns") or r.get("from_wall_ms") or 0))
        assert sorted(rows, key=key) == sorted(direct[name], key=key), name   # Spark's fold = the direct fold
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["share_groups"] == summary["share_groups"] and on_disk["scanned_records"] > 0
    page = (out / "report.html").read_text()
    assert 'id="share-groups"' in page and 'id="streams-groups"' in page and "orders-0" in page
