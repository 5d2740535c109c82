"""`kshim trace analyze` without Spark: the assignment decoder, one group's timeline folded from a
hand-built trace (testsuite/trace/tracebuild.py), the anomaly rules, the HTML/SVG rendering, and the
CLI's message when PySpark is missing; and (on Spark, local) a KIP-848 member's heartbeat count."""

from __future__ import annotations

import struct
import subprocess
import sys

from shim.trace.analyze import anomalies as A
from shim.trace.analyze.assignment import decode_assignment, decode_b64, encode_assignment
from shim.trace.analyze.report import group_summary, render_html
from shim.trace.analyze.viewer import viewer_data
from shim.trace.analyze.timeline import fold_group
from testsuite.trace.tracebuild import W0, scenario


def test_assignment_decoder_reads_every_version_and_rejects_garbage():
    for v in (0, 1, 2, 3):
        data = encode_assignment({"orders": [2, 0], "audit": [7]}, v)
        assert struct.unpack_from(">h", data)[0] == v
        assert decode_assignment(data) == ["audit-7", "orders-0", "orders-2"]
    # a newer version than the schema knows is read as the newest (fields are only appended)
    newer = struct.pack(">h", 9) + encode_assignment({"x": [1]}, 3)[2:]
    assert decode_assignment(newer) == ["x-1"]
    assert decode_assignment(b"") == []
    assert decode_assignment(b"\x00\x00\x00\x00\x00\x05ab") is None       # array longer than the bytes
    assert decode_b64("not base64!") is None and decode_b64(None) is None


def fold():
    return fold_group("g", scenario().records)


def test_generations_timing_reasons_and_moves():
    rounds, _, _ = fold()
    assert [r["generation"] for r in rounds] == [1, 2, 3]
    assert [r["members"] for r in rounds] == [1, 2, 1]
    assert [r["leader"] for r in rounds] == ["A-1", "A-1", "B-2"]
    assert [r["reason"] for r in rounds] == [
        "adding new member A-1 with group instance id None; client reason: first",
        "adding new member B-1 with group instance id b; client reason: hello", "1 member(s) left the group"]
    # first JoinGroup (gen 1: the attempt answered MEMBER_ID_REQUIRED at 0) -> last first SyncGroup answer
    assert [r["first_join_wall_ms"] - W0 for r in rounds] == [0, 12000, 30600]
    assert [r["last_sync_wall_ms"] - W0 for r in rounds] == [3011, 12703, 30701]
    assert [r["join_to_sync_ms"] for r in rounds] == [3011.0, 703.0, 101.0]
    # KIP-800 reasons as the JoinGroup/LeaveGroup requests gave them; owners by instance id
    assert [r["joined"] for r in rounds] == [["A-1: first"], ["b: hello"], []]
    assert [r["left"] for r in rounds] == [[], [], ["A-1: bye"]]
    assert [r["member_ids"] for r in rounds] == [["A-1"], ["A-1", "b"], ["b"]]
    assert [r["assigned_partitions"] for r in rounds] == [4, 4, 4]
    assert [r["partitions_moved"] for r in rounds] == [None, 2, 2]
    # A-1 asked for a 500 ms rebalance timeout and rejoined ~600 ms after the rebalance started
    assert rounds[1]["slow_rejoins"] == ["A-1: 599 ms > 500 ms"]
    assert rounds[0]["slow_rejoins"] == rounds[2]["slow_rejoins"] == []
    assert rounds[1]["fenced"] == ["b"] and rounds[2]["fenced"] == []


def test_static_bounce_keeps_the_generation_and_the_assignment():
    _, members, changes = fold()
    rows = [(m["generation"], m["member"], m["instance"], m["assignment"], m["leader"],
             m["from_wall_ms"] - W0, m["to_wall_ms"] - W0 if m["to_wall_ms"] else None) for m in members]
    assert rows == [
        (1, "A-1", None, ["t-0", "t-1", "t-2", "t-3"], True, 3002, 12601),
        (2, "A-1", None, ["t-0", "t-1"], True, 12601, 30000),
        (2, "B-1", "b", ["t-2", "t-3"], False, 12601, 20000),
        (2, "B-2", "b", ["t-2", "t-3"], False, 20000, 30601),      # the bounce: same generation
        (3, "B-2", "b", ["t-0", "t-1", "t-2", "t-3"], True, 30601, None)]
    kinds = [(c["kind"], c["member"], c["generation"]) for c in changes]
    assert kinds == [("joined", "A-1", None), ("joined", "B-1", 1), ("joined", "A-1", 1),
                     ("static_replaced", "B-2", 2), ("static_rejoin", "B-2", 2), ("fenced", "B-1", 2),
                     ("left", "A-1", 2)]
    assert changes[-1]["reason"] == "bye" and changes[-1]["client_id"] == "client-1"


def test_an_open_rebalance_at_the_end_of_the_trace_is_reported_without_generation():
    tr = scenario()
    tr.event(40000, "rebalance", reason="1 member(s) left the group", generation=3)
    rounds, _, _ = fold_group("g", tr.records)
    assert [r["generation"] for r in rounds] == [1, 2, 3, None]
    assert rounds[-1]["start_wall_ms"] - W0 == 40000 and rounds[-1]["join_to_sync_ms"] is None


def test_anomaly_rules():
    rounds = [{"group": "s", "generation": g, "start_wall_ms": t, "slow_rejoins": []}
              for g, t in [(1, 0), (2, 10_000), (3, 20_000), (4, 30_000), (5, 40_000), (6, 200_000)]]
    storms = A.storms(rounds, count=5, window_ms=60_000)
    assert [(s["group"], s["subject"], s["wall_ms"]) for s in storms] == [("s", "generations 1-5", 0)]
    assert A.storms(rounds, count=6, window_ms=60_000) == []

    ch = lambda kind, member, inst=None, cid=None: {"group": "f", "kind": kind, "member": member,  # noqa: E731
                                                     "instance": inst, "client_id": cid, "wall_ms": 1}
    changes = [ch("left", f"m{i}", cid="app-1") for i in range(3)] + [ch("removed", "x", "i-1")] * 2
    flaps = A.flapping(changes, count=3)
    assert [(f["subject"], f["detail"]) for f in flaps] == [("app-1", "left or removed 3 times")]

    _, _, changes = fold()
    static = A.static_new_ids(changes)
    assert [(s["subject"], s["severity"]) for s in static] == [("b", "info")]
    assert "B-1 -> B-2" in static[0]["detail"]
    slow = A.slow_revocations(fold()[0])
    assert [(s["subject"], s["detail"]) for s in slow] == [("A-1", "generation 2: A-1: 599 ms > 500 ms")]
    gaps = A.session_gaps([{"group": "g", "member": "m", "instance": None, "last_wall_ms": 5,
                            "silences_over_session_timeout": 1, "session_timeout_ms": 10000, "silence_max_ms": 12000.0},
                           {"group": "g", "member": "n", "silences_over_session_timeout": 0}])
    assert [(g["subject"], g["kind"]) for g in gaps] == [("m", "session_gap")]


def test_html_report_has_a_lane_per_member_identity_and_a_band_per_generation():
    rounds, members, changes = fold()
    tables = {"rebalances": rounds, "generation_members": members, "changes": changes}
    view = viewer_data(tables, ["g"], {})["groups"][0]
    assert [lane["label"] for lane in view["lanes"]] == ["A-1", "b"]   # instance b: both incarnations
    assert [r["label"] for r in view["rebs"]] == ["g1", "g2", "g3"]
    assert len(view["segs"]) == 5 and view["parts"] is None
    groups = group_summary(rounds, changes, [], [])
    assert groups == [{"group": "g", "rebalances": 3, "generations": [1, 2, 3], "static_rejoins_without_rebalance": 1,
                       "fenced": 1, "max_members": 2, "join_to_sync_ms_max": 3011.0, "partitions_moved": 4,
                       "anomalies": 0}]
    page = render_html({"trace": "t<1>", "records": 10, "group_records": 8, "master": "local[1]", "made": "now"},
                       groups, {**tables, "members": [], "anomalies": []})
    assert "t&lt;1&gt;" in page and 'data-group="g"' in page and page.count('<div class="view"') == 1


def test_cli_says_how_to_install_pyspark_when_it_is_missing(tmp_path):
    scenario().write(tmp_path / "trace")
    code = ("import sys; sys.modules['pyspark'] = None; from shim.cli import main; "
            f"sys.exit(main(['trace', 'analyze', {str(tmp_path / 'trace')!r}, '--out', {str(tmp_path / 'r')!r}]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 3
    assert "pip install 'kshim[analyze]'" in out.stderr and "scripts/setup" in out.stderr
    assert not (tmp_path / "r").exists()


def test_kip848_members_heartbeats_are_their_consumer_group_heartbeats(spark, tmp_path):
    """(Spark, local) members.py counts a KIP-848 member's ConsumerGroupHeartbeat requests as its heartbeats."""
    from shim.trace.analyze.load import load
    from shim.trace.analyze.members import member_stats
    from testsuite.trace.test_partitions_unit import kip848
    kip848().write(tmp_path / "trace")
    rows = {r["member"]: r.asDict() for r in member_stats(load(spark, tmp_path / "trace"), "k").collect()}
    assert {m: r["heartbeats"] for m, r in rows.items()} == {"A": 5, "B": 5}
    assert (rows["B"]["first_wall_ms"] - W0, rows["B"]["last_wall_ms"] - W0, rows["B"]["heartbeat_gap_max_ms"]) == \
        (5000, 9600, 3300.0)
