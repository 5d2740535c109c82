"""KIP-848 group epochs inferred from ConsumerGroupHeartbeat frames alone (shim/trace/capture/infer.py):
joins, a member that goes silent (its session expires: the bump has no join or leave before it), and
the last member's leave, which bumps the epoch with nobody left to see it. The classic rules are
checked against real clients and kshim's own coordinator in test_trace_import_kshim.py."""

from __future__ import annotations

from shim.trace.capture.infer import infer_events

CGH = 68
S = 1_000_000_000


class Frames:
    def __init__(self):
        self.recs, self.corr = [], 0

    def beat(self, t: float, member: str, epoch: int, answer_epoch: int, conn: int, interval: int = 1000):
        self.corr += 1
        ts = int(t * S)
        base = {"type": "frame", "api_key": CGH, "group": "g", "conn": conn, "corr": self.corr}
        self.recs.append({**base, "dir": "client->broker", "ts_ns": ts, "wall_ms": ts // 10**6,
                          "body": {"groupId": "g", "memberId": member, "memberEpoch": epoch}})
        self.recs.append({**base, "dir": "broker->client", "ts_ns": ts + 2_000_000, "wall_ms": (ts + 2_000_000) // 10**6,
                          "body": {"errorCode": 0, "memberId": member, "memberEpoch": answer_epoch,
                                   "heartbeatIntervalMs": interval}})


def test_joins_a_silent_member_and_the_last_leave():
    f = Frames()
    f.beat(0.0, "a", 0, 1, conn=1)              # a joins: epoch 1
    f.beat(1.0, "b", 0, 2, conn=2)              # b joins: epoch 2
    for t in range(2, 6):
        f.beat(float(t), "a", 2, 2, conn=1)
        f.beat(t + 0.5, "b", 2, 2, conn=2)
    for t in range(6, 50):                      # a is killed at 5 s: only b heartbeats
        f.beat(t + 0.5, "b", 2, 2, conn=2)
    f.beat(50.5, "b", 2, 3, conn=2)             # the broker removed a (session expired): epoch 3
    f.beat(52.0, "b", -1, -1, conn=2)           # b leaves: epoch 4, seen by nobody
    events = infer_events(f.recs)
    epochs = [(e["body"]["epoch"], e["body"]["reason"]) for e in events if e["event"] == "group_epoch"]
    assert [e for e, _ in epochs] == [1, 2, 3, 4]
    assert epochs[0][1] == "inferred: member a subscription changed"
    assert epochs[1][1] == "inferred: member b subscription changed"
    assert epochs[2][1].startswith("inferred: member a removed: the member session expired (silent since 5000")
    assert epochs[3][1] == "inferred: member b removed: left the group"
    assert [(e["event"], e["member"]) for e in events if e["event"] in ("session_timeout", "member_left")] == \
        [("session_timeout", "a"), ("member_left", "b")]
    assert all(e["inferred"] and e["body"]["source"] == "inferred" for e in events)
    # each event sits just after the request it follows from, or just before the answer that showed it
    first = next(e for e in events if e["event"] == "group_epoch")
    assert first["ts_ns"] == 1000


def test_a_broker_log_leave_folded_before_its_leavegroup_frame_gets_its_reason():
    """A broker's "explicit `LeaveGroup` request for (M)" line is stamped to the millisecond, so it may
    sort just before the LeaveGroup frame it names: the cause row still takes the request's reason
    (here the Java consumer's poll timeout) and its link."""
    from shim.trace.analyze.causes import fold_causes
    t = 10 * S
    recs = [
        {"type": "event", "event": "generation", "group": "g", "ts_ns": t - S, "wall_ms": (t - S) // 10**6,
         "body": {"event": "generation", "generation": 4, "source": "broker_log"}},
        {"type": "event", "event": "rebalance", "group": "g", "ts_ns": t, "wall_ms": t // 10**6,
         "body": {"event": "rebalance", "source": "broker_log", "generation": 4,
                  "reason": "explicit `LeaveGroup` request for (m1-x) members."}},
        {"type": "frame", "api_key": 13, "dir": "client->kshim", "group": "g", "conn": 3, "corr": 77,
         "ts_ns": t + 400_000, "wall_ms": t // 10**6, "client_id": "m1",
         "body": {"groupId": "g", "members": [{"memberId": "m1-x", "reason": "consumer poll timeout has expired."}]}},
    ]
    rows = [r for r in fold_causes("g", recs) if r["seq"] == 0]
    assert [(r["kind"], r["member"], r["reason"], r["corr"], r["source"]) for r in rows] == [
        ("poll_interval_exceeded", "m1-x", "consumer poll timeout has expired.", 77, "broker_log")]


def test_a_capture_started_mid_life_starts_from_the_epoch_in_force():
    """The first epochs seen are the state in force (no bump): a lagging member's epoch then the
    group's within the first heartbeat interval; a refused leave (NOT_COORDINATOR) is no cause, its
    retry is; a leave's bump seen in the other member's answer is named for the leave."""
    f = Frames()
    f.beat(0.0, "a", 6, 6, conn=1)              # a, still reconciling
    f.beat(0.5, "b", 7, 7, conn=2)              # b at the group epoch: 7 was in force
    f.beat(1.5, "a", 6, 7, conn=1)
    f.beat(3.0, "a", -1, -1, conn=1)            # a leaves, refused: its coordinator moved
    f.recs[-1]["body"] = {"errorCode": 16, "memberId": "a", "memberEpoch": 0}
    f.recs[-1]["error_codes"] = [16]
    f.beat(3.4, "a", -1, -1, conn=1)            # the retry
    f.beat(3.5, "b", 7, 8, conn=2)              # b sees the bump
    events = infer_events(f.recs)
    epochs = [(e["body"]["epoch"], e["body"]["reason"], e["ts_ns"]) for e in events if e["event"] == "group_epoch"]
    assert epochs == [(8, "inferred: member a removed: left the group", int(3.4 * S) + 1000)], epochs
    assert [e["ts_ns"] for e in events if e["event"] == "member_left"] == [int(3.4 * S) + 1000]


def test_two_static_members_joining_together_each_named_for_its_own_answer():
    """Two static members' JoinGroups, answered in the other order: the round's cause names the member
    id of the instance that caused it."""
    S_ = S
    recs = []
    for corr, (inst, t) in enumerate([("s-a", 0.0), ("s-b", 0.01)]):
        recs.append({"type": "frame", "api_key": 11, "api_version": 9, "group": "g", "conn": corr, "corr": 1,
                     "dir": "client->broker", "ts_ns": int(t * S_), "instance": inst,
                     "body": {"groupId": "g", "memberId": "", "groupInstanceId": inst, "sessionTimeoutMs": 6000}})
    for corr, (inst, mid, t) in enumerate([("s-a", "s-a-1", 0.2), ("s-b", "s-b-1", 0.1)]):
        recs.append({"type": "frame", "api_key": 11, "api_version": 9, "group": "g", "conn": corr, "corr": 1,
                     "dir": "broker->client", "ts_ns": int(t * S_), "instance": inst,
                     "body": {"errorCode": 0, "generationId": 1, "memberId": mid, "leader": "s-a-1",
                              "members": [{"memberId": "s-a-1", "groupInstanceId": "s-a"},
                                          {"memberId": "s-b-1", "groupInstanceId": "s-b"}] if mid == "s-a-1" else []}})
    events = infer_events(recs)
    rebalance = [e for e in events if e["event"] == "rebalance"]
    assert len(rebalance) == 1 and rebalance[0]["member"] == "s-a-1", rebalance
    assert "s-a-1 with group instance id s-a" in rebalance[0]["body"]["reason"]
    assert [e["body"]["generation"] for e in events if e["event"] == "generation"] == [1]
    assert not [e for e in events if e["event"] == "static_member_replaced"]


def _join(recs, t, conn, inst, mid, gen, leader="", members=()):
    recs.append({"type": "frame", "api_key": 11, "api_version": 9, "group": "g", "conn": conn, "corr": 1,
                 "dir": "client->broker", "ts_ns": int(t * S), "instance": inst,
                 "body": {"groupId": "g", "memberId": "", "groupInstanceId": inst, "sessionTimeoutMs": 6000}})
    recs.append({"type": "frame", "api_key": 11, "api_version": 9, "group": "g", "conn": conn, "corr": 1,
                 "dir": "broker->client", "ts_ns": int((t + 0.005) * S), "instance": inst,
                 "body": {"errorCode": 0, "generationId": gen, "memberId": mid, "leader": leader,
                          "members": [{"memberId": m, "groupInstanceId": i} for m, i in members]}})


def test_a_lone_static_rejoin_first_seen_is_no_rebalance_but_a_round_is():
    """No heartbeat before it shows the generation in force: a static member's lone JoinGroup answer is
    its rejoin without a rebalance (its old member id unknown); a later round's answers (two members at
    a new generation) form a generation with its cause."""
    recs = []
    _join(recs, 0.0, 1, "s-a", "s-a-2", 5, leader="d-1")
    events = infer_events(list(recs))
    assert [(e["event"], e["body"].get("old_member")) for e in events] == \
        [("static_member_replaced", None), ("static_rejoin_without_rebalance", None)]
    _join(recs, 3.0, 2, "s-b", "s-b-1", 6, leader="s-a-2")
    _join(recs, 3.001, 1, "s-a", "s-a-2", 6, leader="s-a-2", members=[("s-a-2", "s-a"), ("s-b-1", "s-b")])
    events = infer_events(recs)
    assert [e["body"]["generation"] for e in events if e["event"] == "generation"] == [6]
    assert [e["member"] for e in events if e["event"] == "rebalance"] == ["s-b-1"]
    assert len([e for e in events if e["event"] == "static_member_replaced"]) == 1
