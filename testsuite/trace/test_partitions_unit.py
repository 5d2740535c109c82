"""The per-partition analysis without Spark: owner segments, gaps and rebalance impact folded from
hand-built traces (testsuite/trace/tracebuild.py): eager, cooperative (KIP-429), static bounce, leave."""

from __future__ import annotations

from shim.trace.analyze.causes import fold_causes
from shim.trace.analyze.gaps import partition_gaps, rebalance_impact
from shim.trace.analyze.ownership import fold_ownership
from shim.trace.analyze.partition_tables import (CAUSE_COLUMNS, GAP_COLUMNS, IMPACT_COLUMNS, OWNER_COLUMNS,
                                                  RECONCILIATION_COLUMNS)
from shim.trace.analyze.reconcile import fold_consumer_group
from testsuite.trace.tracebuild import W0, Trace, join_req, join_resp, scenario, sync_req, sync_resp


def rel(v):
    return v - W0 if v is not None else None


def segs(owners, part):
    return [(s["member"], s["generation"], rel(s["from_wall_ms"]), rel(s["to_wall_ms"]), s["end_kind"],
             s["end_generation"]) for s in owners if s["partition"] == part]


def test_eager_owners_end_at_the_join_leave_and_static_replacement():
    owners, rounds = fold_ownership("g", scenario().records)
    assert all(tuple(s) == OWNER_COLUMNS for s in owners)
    assert {s["protocol"] for s in owners} == {"eager"}
    # t-0: A-1 from its gen-1 SyncGroup answer, revoked at its JoinGroup (12600), again at its
    # gen-2 answer, until its LeaveGroup; then B-2 from gen 3 to the trace end
    assert segs(owners, 0) == [("A-1", 1, 3011, 12600, "revoked", 2), ("A-1", 2, 12701, 30000, "left", 3),
                               ("B-2", 3, 30701, None, "trace_end", None)]
    # t-2: the static bounce ends B-1 at the replacement (no rebalance: generation 2 goes on)
    assert segs(owners, 2) == [("A-1", 1, 3011, 12600, "revoked", 2), ("B-1", 2, 12703, 20000, "static_replaced", 2),
                               ("B-2", 2, 20101, 30600, "revoked", 3), ("B-2", 3, 30701, None, "trace_end", None)]
    b1 = next(s for s in owners if s["member"] == "B-1")
    assert b1["last_seen_wall_ms"] - W0 == 15000 and b1["instance"] == "b" and b1["client_id"] == "client-2"
    # round members: the JoinGroup (first attempt for A-1) and SyncGroup answers; B-2's later static rejoin is not
    assert [(r["generation"], rel(r["start_wall_ms"]), {m: rel(t) for m, t in r["joins"].items()},
             {m: rel(t) for m, t in r["syncs"].items()}) for r in rounds] == [
        (1, 2, {"A-1": 0}, {"A-1": 3011}),
        (2, 12000, {"A-1": 12600, "B-1": 12000}, {"A-1": 12701, "B-1": 12703}),
        (3, 30000, {"B-2": 30600}, {"B-2": 30701})]


def test_gaps_and_impact_of_the_eager_scenario():
    owners, rounds = fold_ownership("g", scenario().records)
    gaps = partition_gaps(owners, W0 + 48001)
    assert all(tuple(g) == GAP_COLUMNS for g in gaps)
    p2 = [(rel(g["from_wall_ms"]), rel(g["to_wall_ms"]), g["duration_ms"], g["initial"], g["previous_member"],
           g["previous_end_kind"], g["next_member"], g["generation"], g["cause_id"])
          for g in gaps if g["partition"] == 2]
    assert p2 == [(3011, 3011, 0, True, None, None, "A-1", 1, "g:1"),
                  (12600, 12703, 103, False, "A-1", "revoked", "B-1", 2, "g:2"),
                  (20000, 20101, 101, False, "B-1", "static_replaced", "B-2", 2, "g:static@1790000020000"),
                  (30600, 30701, 101, False, "B-2", "revoked", "B-2", 3, "g:3")]
    assert [(g["stalled_from_wall_ms"], g["stalled_ms"]) for g in gaps if g["previous_end_kind"] == "static_replaced"] \
        == [(W0 + 15000, 20101 - 15000)] * 2
    impact = rebalance_impact(rounds, gaps)
    assert all(tuple(r) == IMPACT_COLUMNS for r in impact)
    got = [(r["generation"], r["protocol"], r["partitions_unavailable"], r["max_gap_ms"], r["unavailable_partition_ms"],
            r["slowest_revoke_member"], r["slowest_revoke_ms"], r["slowest_rejoin_member"], r["slowest_rejoin_ms"])
           for r in impact]
    assert got == [(1, "eager", 0, None, 0, "A-1", 0, "A-1", 3009),     # A-1's JoinGroup started it: 0 ms
                   (2, "eager", 4, 103, 101 + 101 + 103 + 103, "A-1", 600, "B-1", 703),
                   (3, "eager", 4, 701, 701 + 701 + 101 + 101, "B-2", 600, "B-2", 701)]


def coop_join(member="", instance=None, reason=None):
    return {**join_req(member, instance, reason), "protocols": [{"name": "cooperative-sticky", "metadata": "AAE="}]}


def cooperative() -> Trace:
    """A (cooperative-sticky) owns t-0..3; B joins: gen 2 gives A t-0,t-1 (it revokes t-2,t-3 and
    rejoins), gen 3 gives B t-2,t-3; A's t-0,t-1 stay owned throughout."""
    tr = Trace("c")
    tr.call(0, 100, 1, 11, coop_join("A"), join_resp(1, "A", "A", [("A", None)]))
    tr.event(1, "rebalance", reason="adding new member A", generation=0)
    tr.event(99, "generation", generation=1, members=1, leader="A", protocol="cooperative-sticky")
    tr.call(110, 111, 1, 14, sync_req(1, "A", assignments={"A": [0, 1, 2, 3]}), sync_resp([0, 1, 2, 3]), 5)
    tr.call(5000, 5300, 2, 11, coop_join("", "b", reason="hello"), join_resp(2, "B", "A"))
    tr.event(5000.5, "rebalance", reason="adding new member B with group instance id b", generation=1)
    tr.call(5200, 5299, 1, 11, coop_join("A", reason="group is already rebalancing"),
            join_resp(2, "A", "A", [("A", None), ("B", "b")]))
    tr.event(5298, "generation", generation=2, members=2, leader="A", protocol="cooperative-sticky")
    tr.call(5310, 5311, 1, 14, sync_req(2, "A", assignments={"A": [0, 1], "B": []}), sync_resp([0, 1]), 5)
    tr.call(5312, 5313, 2, 14, sync_req(2, "B", "b"), sync_resp([]), 5)
    tr.call(5400, 5600, 1, 11, coop_join("A", reason="need to revoke partitions and re-join"),
            join_resp(3, "A", "A", [("A", None), ("B", "b")]))
    tr.event(5400.5, "rebalance", reason="updating metadata for member A", generation=2)
    tr.call(5450, 5599, 2, 11, coop_join("B", "b", reason="group is already rebalancing"), join_resp(3, "B", "A"))
    tr.event(5598, "generation", generation=3, members=2, leader="A", protocol="cooperative-sticky")
    tr.call(5610, 5611, 1, 14, sync_req(3, "A", assignments={"A": [0, 1], "B": [2, 3]}), sync_resp([0, 1]), 5)
    tr.call(5612, 5650, 2, 14, sync_req(3, "B", "b"), sync_resp([2, 3]), 5)
    return tr


def test_cooperative_keeps_owned_partitions_and_gaps_only_the_moved_ones():
    owners, rounds = fold_ownership("c", cooperative().records)
    assert {s["protocol"] for s in owners} == {"cooperative"}
    assert segs(owners, 0) == [("A", 1, 111, None, "trace_end", None)]         # kept across both rebalances
    assert segs(owners, 3) == [("A", 1, 111, 5311, "revoked", 2), ("B", 3, 5650, None, "trace_end", None)]
    gaps = [g for g in partition_gaps(owners, W0 + 6000) if not g["initial"]]
    assert [(g["partition"], rel(g["from_wall_ms"]), g["duration_ms"], g["generation"], g["next_generation"])
            for g in gaps] == [(2, 5311, 339, 2, 3), (3, 5311, 339, 2, 3)]
    impact = {r["generation"]: r for r in rebalance_impact(rounds, partition_gaps(owners, W0 + 6000))}
    assert impact[2]["partitions_unavailable"] == 2 and impact[2]["unavailable_partition_ms"] == 678
    assert impact[3]["partitions_unavailable"] == 0 and impact[3]["protocol"] == "cooperative"


def test_a_partition_still_unowned_at_the_end_is_an_open_gap():
    tr = scenario()
    tr.call(40000, 40001, 3, 13, {"members": [{"memberId": "B-2", "groupInstanceId": "b",
                                               "reason": "consumer poll timeout has expired."}]},
            {"throttleTimeMs": 0, "errorCode": 0, "members": []}, 5)
    tr.event(40000.5, "rebalance", reason="1 member(s) left the group", generation=3)
    owners, rounds = fold_ownership("g", tr.records)
    last = [s for s in owners if s["member"] == "B-2" and s["generation"] == 3]
    assert {(s["end_kind"], rel(s["to_wall_ms"]), s["end_generation"]) for s in last} == {("poll_timeout", 40000, None)}
    r = {(rr["group"], rr["generation"]): rr for rr in rounds}
    gaps = [g for g in partition_gaps(owners, W0 + 41000, r) if g["open"]]
    assert len(gaps) == 4 and {g["duration_ms"] for g in gaps} == {1000}
    assert {g["cause_id"] for g in gaps} == {"g:open@1790000040000"}
    impact = rebalance_impact(rounds, partition_gaps(owners, W0 + 41000, r))
    assert impact[-1]["generation"] is None and impact[-1]["partitions_unavailable"] == 4


def test_causes_of_the_eager_scenario_link_the_frames_behind_them():
    causes = fold_causes("g", scenario().records)
    assert all(tuple(c) == CAUSE_COLUMNS for c in causes)
    got = [(c["cause_id"], c["generation"], c["seq"], c["kind"], c["member"], c["instance"], c["client_id"],
            c["reason"]) for c in causes]
    assert got == [("g:1", 1, 0, "joined", "A-1", None, "client-1", "first"),
                   ("g:2", 2, 0, "joined", "B-1", "b", "client-2", "hello"),
                   ("g:static@1790000020000", 2, 0, "static_replaced", "B-2", "b", "client-3", "restart"),
                   ("g:3", 3, 0, "left", "A-1", None, "client-1", "bye")]
    recs = {(r.get("conn"), r.get("corr"), r["ts_ns"]): r for r in scenario().records
            if r.get("dir") == "client->kshim"}
    linked = [recs[(c["conn"], c["corr"], c["ts_ns"])]["api"] for c in causes]
    assert linked == ["JoinGroup", "JoinGroup", "JoinGroup", "LeaveGroup"]


def test_session_timeout_and_poll_timeout_causes():
    tr = scenario()
    # B-2 goes silent after its 48000 heartbeat: its 10 s session expires
    tr.event(58000, "session_timeout", member="B-2", instance="b")
    tr.event(58000.1, "member_removed", member="B-2", instance="b", reason="session timeout expired")
    tr.event(58000.2, "rebalance", reason="removing member B-2 on session timeout expired", generation=3)
    causes = fold_causes("g", tr.records)
    st = causes[-1]
    assert (st["kind"], st["member"], st["reason"], st["cause_id"]) == \
        ("session_timeout", "B-2", "session timeout expired", "g:open@1790000058000")
    assert st["last_heartbeat_wall_ms"] - W0 == 48000 and st["timeout_ms"] == 10000
    assert st["ts_ns"] == 48000 * 1_000_000          # the frame: that last heartbeat
    owners, _ = fold_ownership("g", tr.records)
    ended = {(s["end_kind"], rel(s["to_wall_ms"]), rel(s["last_seen_wall_ms"])) for s in owners if s["generation"] == 3}
    assert ended == {("session_timeout", 58000, 48000)}
    # its connection (3) closed at 50000 (killed): that is when it went away; a close before its last
    # request (an old connection) says nothing
    for closed, seen in ((50000, 50000), (47000, 48000)):
        owners, _ = fold_ownership("g", tr.records, {3: W0 + closed})
        assert {rel(s["last_seen_wall_ms"]) for s in owners if s["generation"] == 3} == {seen}

    tr = scenario()
    tr.call(40000, 40001, 3, 13, {"members": [{"memberId": "B-2", "groupInstanceId": "b",
                                               "reason": "consumer poll timeout has expired."}]},
            {"throttleTimeMs": 0, "errorCode": 0, "members": []}, 5)
    tr.event(40000.2, "member_left", member="B-2", instance="b", reason="consumer poll timeout has expired.")
    tr.event(40000.5, "rebalance", reason="1 member(s) left the group", generation=3)
    last = fold_causes("g", tr.records)[-1]
    assert (last["kind"], last["member"], last["reason"]) == \
        ("poll_interval_exceeded", "B-2", "consumer poll timeout has expired.")


TID = "AAAAAAAAAAAAAAAAAAAAAQ"


def tps(*parts):
    return [{"topicId": TID, "partitions": list(parts)}] if parts else []


def cg_hb(tr, t_req, t_resp, conn, member, epoch, owned=None, answer_epoch=None, assigned=None, error=0):
    req = {"memberId": member, "memberEpoch": epoch, "instanceId": None, "rebalanceTimeoutMs": 30000,
           "subscribedTopicNames": ["orders"], "topicPartitions": owned}
    resp = {"throttleTimeMs": 0, "errorCode": error, "memberId": member, "memberEpoch": answer_epoch,
            "heartbeatIntervalMs": 5000, "assignment": None if assigned is None else {"topicPartitions": assigned}}
    tr.call(t_req, t_resp, conn, 68, req, resp, 1)


def kip848() -> Trace:
    """A owns orders-0..3; B joins (A revokes 2,3 at 5700, B gets them at 6001); A leaves at 9000."""
    tr = Trace("k")
    cg_hb(tr, 0, 1, 1, "A", 0, tps(), 1, tps(0, 1, 2, 3))
    tr.event(0.5, "group_epoch", epoch=1, reason="member A subscription changed")
    cg_hb(tr, 1000, 1001, 1, "A", 1, tps(0, 1, 2, 3), 1)
    cg_hb(tr, 5000, 5001, 2, "B", 0, tps(), 2, [])
    tr.event(5000.5, "group_epoch", epoch=2, reason="member B subscription changed")
    cg_hb(tr, 5500, 5501, 1, "A", 1, None, 1, tps(0, 1))
    cg_hb(tr, 5700, 5701, 1, "A", 1, tps(0, 1), 2)
    cg_hb(tr, 6000, 6001, 2, "B", 2, None, 2, tps(2, 3))
    cg_hb(tr, 6200, 6201, 2, "B", 2, tps(2, 3), 2)
    cg_hb(tr, 9000, 9001, 1, "A", -1, None, -1)
    tr.event(9000.3, "member_removed", member="A", reason="the member left the group")
    tr.event(9000.4, "group_epoch", epoch=3, reason="member A removed: the member left the group")
    cg_hb(tr, 9500, 9501, 2, "B", 2, None, 3, tps(0, 1, 2, 3))
    cg_hb(tr, 9600, 9601, 2, "B", 3, tps(0, 1, 2, 3), 3)
    return tr


def test_kip848_owners_gaps_reconciliation_and_causes():
    names = {TID: "orders"}
    owners, recon, rounds = fold_consumer_group("k", kip848().records, names)
    assert all(tuple(s) == OWNER_COLUMNS for s in owners) and all(tuple(r) == RECONCILIATION_COLUMNS for r in recon)
    seg = lambda p: [(s["topic"], s["member"], s["epoch"], rel(s["from_wall_ms"]), rel(s["to_wall_ms"]),  # noqa: E731
                      s["end_kind"], s["end_generation"]) for s in owners if s["partition"] == p]
    assert seg(0) == [("orders", "A", 1, 1, 9000, "left", 3), ("orders", "B", 3, 9501, None, "trace_end", None)]
    assert seg(2) == [("orders", "A", 1, 1, 5700, "revoked", 2), ("orders", "B", 2, 6001, None, "trace_end", None)]
    got = [(r["member"], r["epoch"], rel(r["target_wall_ms"]), r["assigned"], r["revoked"], r["latency_ms"],
            r["revocation_latency_ms"], r["superseded"]) for r in recon]
    assert got == [("A", 1, 1, ["orders-0", "orders-1", "orders-2", "orders-3"], [], 999, None, False),
                   ("B", 2, 5001, [], [], None, None, True),
                   ("A", 1, 5501, [], ["orders-2", "orders-3"], 199, 199, False),
                   ("B", 2, 6001, ["orders-2", "orders-3"], [], 199, None, False),
                   ("B", 3, 9501, ["orders-0", "orders-1"], [], 99, None, False)]
    # the answer at 5501 asked A to give up orders-2,3 (fetching pauses there); its ack at 5700 ends them
    assert {(s["partition"], rel(s["revoke_asked_wall_ms"])) for s in owners if s["end_kind"] == "revoked"} == \
        {(2, 5501), (3, 5501)}
    gaps = [g for g in partition_gaps(owners, W0 + 10000) if not g["initial"]]
    assert [(g["partition"], g["duration_ms"], g["generation"], g["cause_id"], rel(g["stalled_from_wall_ms"]))
            for g in gaps] == [(0, 501, 3, "k:3", None), (1, 501, 3, "k:3", None), (2, 301, 2, "k:2", 5501),
                               (3, 301, 2, "k:2", 5501)]
    causes = fold_causes("k", kip848().records)
    assert [(c["cause_id"], c["kind"], c["member"]) for c in causes] == [
        ("k:1", "joined", "A"), ("k:2", "joined", "B"), ("k:3", "left", "A")]
    impact = {r["generation"]: r for r in rebalance_impact(rounds, partition_gaps(owners, W0 + 10000), causes)}
    two = impact[2]
    assert (two["protocol"], two["partitions_unavailable"], two["max_gap_ms"], two["unavailable_partition_ms"],
            two["max_stalled_ms"]) == ("consumer", 2, 301, 602, 6001 - 5501)
    assert (two["slowest_revoke_member"], two["slowest_revoke_ms"], two["slowest_rejoin_member"],
            two["slowest_rejoin_ms"]) == ("A", 700, "B", 1001)
    assert two["cause"] == "joined B" and impact[3]["cause"] == "left A: the member left the group"


def test_kip848_static_replacement_ends_the_old_member_and_has_its_own_cause():
    tr = kip848()
    cg_hb(tr, 7000, 7001, 3, "B2", 0, tps(), 2, tps(2, 3))            # B restarted with its instance id
    tr.event(7000.5, "static_member_replaced", instance="b", old="B", new="B2")
    owners, _, _ = fold_consumer_group("k", tr.records, {TID: "orders"})
    ends = {(s["member"], s["partition"]): (s["end_kind"], rel(s["to_wall_ms"])) for s in owners if s["to_wall_ms"]}
    assert ends[("B", 2)] == ends[("B", 3)] == ("static_replaced", 7000)
    (cause,) = [c for c in fold_causes("k", tr.records) if c["kind"] == "static_replaced"]
    assert (cause["cause_id"], cause["member"], cause["generation"], cause["group_type"]) == \
        ("k:static@1790000007000", "B2", 2, "consumer")
    assert cause["ts_ns"] == 7000 * 1_000_000       # B2's joining heartbeat


def midlife() -> Trace:
    """A capture begun in the middle of group m's life: A and B (eager) are members of generation 5,
    which the trace never shows; C joins (generation 6: A 0,1, B 2,3, C 4,5), then leaves (7)."""
    tr = Trace("m")
    hb_ = lambda t, conn, gen, m: tr.call(t, t + 1, conn, 12, {"generationId": gen, "memberId": m},  # noqa: E731
                                          {"throttleTimeMs": 0, "errorCode": 0}, 4)
    hb_(100, 1, 5, "A")
    hb_(200, 2, 5, "B")
    tr.call(1000, 1400, 3, 11, join_req("", reason="new"), join_resp(6, "C", "A"))
    tr.event(1000.5, "rebalance", reason="adding new member C", generation=5)
    tr.call(1100, 1399, 1, 11, join_req("A"), join_resp(6, "A", "A", [("A", None), ("B", None), ("C", None)]))
    tr.call(1200, 1398, 2, 11, join_req("B"), join_resp(6, "B", "A"))
    tr.event(1397, "generation", generation=6, members=3, leader="A", protocol="range")
    tr.call(1500, 1501, 1, 14, sync_req(6, "A", assignments={"A": [0, 1], "B": [2, 3], "C": [4, 5]}),
            sync_resp([0, 1]), 5)
    tr.call(1502, 1503, 2, 14, sync_req(6, "B"), sync_resp([2, 3]), 5)
    tr.call(1504, 1505, 3, 14, sync_req(6, "C"), sync_resp([4, 5]), 5)
    tr.call(8000, 8001, 3, 13, {"members": [{"memberId": "C", "groupInstanceId": None, "reason": "bye"}]},
            {"throttleTimeMs": 0, "errorCode": 0, "members": []}, 5)
    tr.event(8000.5, "rebalance", reason="1 member(s) left the group", generation=6)
    tr.call(8100, 8300, 1, 11, join_req("A"), join_resp(7, "A", "A", [("A", None), ("B", None)]))
    tr.call(8200, 8299, 2, 11, join_req("B"), join_resp(7, "B", "A"))
    tr.event(8298, "generation", generation=7, members=2, leader="A", protocol="range")
    tr.call(8400, 8401, 1, 14, sync_req(7, "A", assignments={"A": [0, 1, 4], "B": [2, 3, 5]}), sync_resp([0, 1, 4]), 5)
    tr.call(8402, 8403, 2, 14, sync_req(7, "B"), sync_resp([2, 3, 5]), 5)
    return tr


def test_ownership_before_the_first_assignment_of_a_capture_begun_mid_life_is_unknown_not_zero():
    owners, rounds = fold_ownership("m", midlife().records)
    first = {s["partition"]: s for s in sorted(owners, key=lambda s: -s["from_wall_ms"])}
    assert {p: (s["generation"], s["previous_owner_unknown"]) for p, s in first.items()} == \
        {p: (6, True) for p in range(6)}
    assert not any(s["previous_owner_unknown"] for s in owners if s["generation"] == 7)
    gaps = partition_gaps(owners, W0 + 9000)
    initial = [g for g in gaps if g["initial"]]
    assert [(g["partition"], g["previous_owner_unknown"], g["duration_ms"]) for g in initial] == \
        [(p, True, None) for p in range(6)]
    # no gap counted from a time the owner was unknown: A's and B's eager JoinGroups for generation 6
    # revoked partitions the trace never saw them own
    real = [g for g in gaps if not g["initial"]]
    assert real and min(g["from_wall_ms"] for g in real) >= W0 + 8000
    impact = {r["generation"]: r for r in rebalance_impact(rounds, gaps)}
    six = impact[6]
    assert (six["partitions_unavailable"], six["max_gap_ms"], six["unavailable_partition_ms"], six["max_stalled_ms"],
            six["partitions_owner_unknown"]) == (None, None, None, None, 6)
    seven = impact[7]   # known from generation 6 on: every partition (eager) waited for its answer
    assert (seven["partitions_unavailable"], seven["partitions_owner_unknown"]) == (6, 0)
    # a group the trace saw form (generation 1): its first assignments are known, not unknown
    owners, rounds = fold_ownership("g", scenario().records)
    assert not any(s["previous_owner_unknown"] for s in owners)
    assert rebalance_impact(rounds, partition_gaps(owners, W0 + 48001))[0]["partitions_unavailable"] == 0


def test_kip848_mid_life_owners_are_unknown_before_their_first_assignment_and_ids_say_they_are_ids():
    tr = Trace("k")
    cg_hb(tr, 100, 101, 1, "A", 7, None, 7)                 # A and B: members before the trace began
    cg_hb(tr, 200, 201, 2, "B", 7, None, 7)
    cg_hb(tr, 1000, 1001, 3, "C", 0, tps(), 8, [])
    tr.event(1000.5, "group_epoch", epoch=8, reason="member C subscription changed")
    cg_hb(tr, 1500, 1501, 1, "A", 7, None, 8, tps(0, 1))
    cg_hb(tr, 1700, 1701, 1, "A", 8, tps(0, 1), 8)
    cg_hb(tr, 2000, 2001, 3, "C", 8, None, 8, tps(2))
    owners, _, rounds = fold_consumer_group("k", tr.records, {})      # no Metadata answer named the topic
    assert {(s["topic"], s["partition"], s["previous_owner_unknown"]) for s in owners} == \
        {(f"topic id {TID} (name not in the trace)", p, True) for p in (0, 1, 2)}
    impact = rebalance_impact(rounds, partition_gaps(owners, W0 + 3000))
    assert [(r["generation"], r["partitions_unavailable"], r["partitions_owner_unknown"]) for r in impact] == \
        [(8, None, 3)]
    # the group's first epochs seen (kip848(): A joins, group epoch 1): known from the start
    owners, _, _ = fold_consumer_group("k", kip848().records, {TID: "orders"})
    assert not any(s["previous_owner_unknown"] for s in owners)
