"""The consumers' side of the rebalance scenario (consumer_gaps.py) and its comparison with
partition_gaps rows (gap_compare.py), on hand-made callback lines and rows."""

from __future__ import annotations

from testsuite.trace.consumer_gaps import log_gaps, ownerships
from testsuite.trace.gap_compare import compare

T = "t"


def ev(name: str, at: int, parts, member: str = "", generation: int = -1) -> dict:
    return {"name": name, "timestamp": at, "member": member, "generation": generation,
            "partitions": [{"topic": T, "partition": p} for p in parts]}


def inc(name: str, events, client_log=None, **more) -> dict:
    return {"name": name, "instance": None, "events": events, "client_log": client_log, **more}


def test_ends_revoked_closed_poll_timeout_killed(tmp_path):
    log = tmp_path / "b.stderr.log"
    log.write_text("1000 INFO [main] joined\n"
                   "5000 WARN [kafka-coordinator-heartbeat-thread | g] consumer poll timeout has expired. ...\n"
                   "5002 INFO [kafka-coordinator-heartbeat-thread | g] [Consumer clientId=b, groupId=g] Member b-1 "
                   "sending LeaveGroup request to coordinator x:1 due to consumer poll timeout has expired.\n")
    a = inc("a", [ev("partitions_assigned", 100, [0, 1], "a-1", 1), ev("partitions_revoked", 900, [1], "a-1", 2),
                  ev("partitions_revoked", 3000, [0], "a-1", 2)], stopped_at=2990)
    b = inc("b", [ev("partitions_assigned", 1000, [1], "b-1", 3), ev("partitions_lost", 8000, [1], "", -1)],
            client_log=log)
    c = inc("c", [ev("partitions_assigned", 3500, [0], "c-1", 4), ev("partitions_assigned", 5600, [1], "c-1", 5)],
            killed_at=9000)
    kinds = {(o.owner, o.partition): (o.end, o.end_kind) for i in (a, b, c) for o in ownerships(i)}
    assert kinds == {("a", 1): (900, "revoked"), ("a", 0): (3000, "closed"), ("b", 1): (5002, "poll_timeout"),
                     ("c", 0): (9000, "killed"), ("c", 1): (9000, "killed")}
    gaps = [(g.partition, g.start, g.end, g.previous and g.previous.owner, g.next.owner) for g in log_gaps([a, b, c])]
    assert gaps == [(0, None, 100, None, "a"), (0, 3000, 3500, "a", "c"),
                    (1, None, 100, None, "a"), (1, 900, 1000, "a", "b"), (1, 5002, 5600, "b", "c")]


def test_lost_without_a_poll_timeout_line_ends_at_the_callback():
    (o,) = ownerships(inc("x", [ev("partitions_assigned", 10, [2], "x-1", 1), ev("partitions_lost", 50, [2])]))
    assert (o.end, o.end_kind) == (50, "lost")


def gap_row(partition, frm, to, prev, nxt, gen, kind="revoked", stalled=None, duration=None):
    return {"group": "g", "topic": T, "partition": partition, "from_wall_ms": frm, "to_wall_ms": to,
            "duration_ms": duration if duration is not None else to - frm, "initial": False,
            "stalled_from_wall_ms": stalled, "stalled_ms": None if stalled is None else to - stalled, "previous_member": prev, "previous_client_id": None,
            "previous_end_kind": kind, "next_member": nxt, "next_client_id": None, "next_generation": gen}


LOGS = [inc("a", [ev("partitions_assigned", 100, [0, 1], "a-1", 1), ev("partitions_revoked", 2000, [0, 1], "a-1", 2)],
            stopped_at=1990),
        inc("b", [ev("partitions_assigned", 3000, [0], "b-1", 2)], killed_at=5000),
        inc("c", [ev("partitions_assigned", 3010, [1], "c-1", 2), ev("partitions_assigned", 11000, [0], "c-1", 3)])]


def test_compare_judges_ends_and_close_starts_and_a_kill_when_the_analysis_knows_it():
    rows = [gap_row(0, 2010, 3040, "a-1", "b-1", 2), gap_row(1, 2010, 3020, "a-1", "c-1", 2),
            gap_row(0, 10900, 10990, "b-1", "c-1", 3, "session_timeout", stalled=5030)]
    out = compare(LOGS, {"partition_gaps": rows}, "g", (0, 20000), 100)
    assert out["ok"] and out["max_diff_ms"] == 40
    by = {(r["partition"], r["next"]): r for r in out["rows"]}
    assert (by[(0, "b")]["d_from"], by[(0, "b")]["d_to"], by[(0, "b")]["d_dur"]) == (10, 40, 30)
    killed = by[(0, "c")]      # stalled_ms (5960), not duration_ms (90), is the analysis's length
    assert killed["log_kind"] == "killed" and killed["judged"] == [-10, 30, -40]
    rows[2] = gap_row(0, 10900, 10990, "b-1", "c-1", 3, "session_timeout")
    killed = next(r for r in compare(LOGS, {"partition_gaps": rows}, "g", (0, 20000), 100)["rows"]
                  if r["log_kind"] == "killed")
    assert killed["judged"] == [-10] and "not judged" in killed["note"]     # the analysis cannot say when it died


def test_compare_fails_on_a_late_edge_a_short_duration_a_missing_gap_or_another_owner():
    base = [gap_row(0, 2010, 3040, "a-1", "b-1", 2), gap_row(1, 2010, 3020, "a-1", "c-1", 2)]
    late = [gap_row(0, 2010, 3200, "a-1", "b-1", 2), base[1]]
    short = [gap_row(0, 2010, 3040, "a-1", "b-1", 2, duration=30), base[1]]
    other = [gap_row(0, 2010, 3040, "x-1", "b-1", 2), base[1]]
    extra = base + [gap_row(1, 4000, 4500, "c-1", "a-1", 9)]
    for rows in (late, short, other, base[:1], extra):
        assert not compare(LOGS, {"partition_gaps": rows}, "g", (0, 5000), 100)["ok"], rows
    assert compare(LOGS, {"partition_gaps": base}, "g", (0, 5000), 100)["ok"]
    assert not compare(LOGS, {"partition_gaps": None}, "g", (0, 5000), 100)["ok"]


def cause(kind, member, at, generation=None, instance=None, seq=0):
    return {"group": "g", "kind": kind, "member": member, "instance": instance, "client_id": None,
            "wall_ms": at, "generation": generation, "seq": seq, "cause_id": f"g:{generation}", "reason": None}


MARKS = [{"step": "start", "member": None, "wall_ms": 0}, {"step": "stable", "member": None, "wall_ms": 10},
         {"step": "poll_loop_blocked", "member": "a", "wall_ms": 20}, {"step": "stable", "member": None, "wall_ms": 100},
         {"step": "static_member_closed", "member": "s", "wall_ms": 110}, {"step": "stable", "member": None, "wall_ms": 200},
         {"step": "killed", "member": "b", "wall_ms": 210}, {"step": "stable", "member": None, "wall_ms": 300}]
INCS = [inc("a", [ev("partitions_assigned", 1, [0], "a-1", 1)]), inc("b", [ev("partitions_assigned", 1, [1], "b-1", 1)]),
        {**inc("s", [ev("partitions_assigned", 1, [2], "s-1", 1)]), "instance": "i-s"},
        {**inc("sb", [ev("partitions_assigned", 150, [2], "s-2", 1)]), "instance": "i-s"}]


def test_event_checks_want_each_step_named_with_its_member():
    from testsuite.trace.gap_compare import event_checks
    good = [cause("poll_interval_exceeded", "a-1", 50, 2), cause("static_replaced", "s-2", 140, 2, "i-s"),
            cause("session_timeout", "b-1", 260, 3)]
    lines, ok = event_checks({"causes": good}, "g", MARKS, INCS)
    assert ok and len(lines) == 3
    wrong_member = [cause("poll_interval_exceeded", "b-1", 50, 2), *good[1:]]
    rebalanced = [*good, cause("joined", "s-2", 140, 3)]
    missing = good[:2]
    for causes in (wrong_member, rebalanced, missing):
        assert not event_checks({"causes": causes}, "g", MARKS, INCS)[1], causes
