"""Broker server logs into trace events (shim/trace/capture/broker_log.py), without a broker.

The samples in testsuite/trace/data/ are lines cut, unchanged and in order, from real broker runs
(LocalKafka, the layout of Kafka's own config: `[%d] %p %m (%c)%n`), with confluent-kafka 2.16
members: server-4.4.0.log (Kafka 4.4.0: a classic group where a second member joins and both
leave, one killed during a join (session timeout), a static member replaced then timed out, KIP-848
groups joining, leaving, fenced on rebalance timeout and session expiry; it starts with a stack trace
from another 4.4.0 run), server-4.4.0-debug.log (the same with DEBUG for GroupMetadataManager),
server-3.9.1.log (Kafka 3.9.1, its default Scala coordinator) and server-3.9.1-new-coordinator.log
(3.9.1 with group.coordinator.rebalance.protocols=classic,consumer)."""

from __future__ import annotations

import gzip
import re
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from shim.trace.analyze.causes import fold_causes
from shim.trace.analyze.reconcile import fold_consumer_group
from shim.trace.analyze.timeline import fold_group
from shim.trace.capture.broker_log import parse_broker_logs

DATA = Path(__file__).parent / "data"
K44, K44D = DATA / "server-4.4.0.log", DATA / "server-4.4.0-debug.log"
K39, K39N = DATA / "server-3.9.1.log", DATA / "server-3.9.1-new-coordinator.log"


# a static member joins, is replaced by a new member id (no rebalance), and the new one times out
STATIC_BOUNCE = ["member_joined", "rebalance", "generation", "assignment", "static_member_replaced",
                 "session_timeout", "member_removed", "rebalance", "generation"]


def _ms(stamp: str, tz=timezone.utc) -> int:
    return int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=tz).timestamp() * 1000)


def _group(records, group):
    return [r for r in records if r["group"] == group]


def _brief(records):
    return [(r["event"], r["body"].get("generation", r["body"].get("epoch"))) for r in records]


def test_kafka_44_classic_group_events_in_order():
    records, stats = parse_broker_logs([K44])
    recs = _group(records, "v440-classic")
    a, b = "a-8d773575-5ce1-48fe-904e-dd0a9951cb87", "b-c108e48d-4fc8-48be-a47a-629b82ba8fdb"
    assert [(r["event"], r.get("member"), r.get("generation")) for r in recs] == [
        ("member_id_required", a, None), ("member_joined", a, None), ("rebalance", None, 0), ("generation", None, 1),
        ("assignment", None, 1),
        ("member_id_required", b, None), ("member_joined", b, None), ("rebalance", None, 1), ("generation", None, 2),
        ("assignment", None, 2),
        ("member_left", a, None), ("rebalance", None, 2), ("generation", None, 3), ("assignment", None, 3),
        ("member_left", b, None), ("rebalance", None, 3), ("generation", None, 4)]
    first = recs[2]
    assert first == {
        "type": "event", "event": "rebalance", "group": "v440-classic", "generation": 0,
        "body": {"event": "rebalance", "group": "v440-classic", "generation": 0,
                 "reason": f"Adding new member {a} with group instance id null; client reason: not provided"},
        "wall_ms": _ms("2026-11-28 00:19:21,098"), "source": "broker_log",
        "broker_log": {"file": "server-4.4.0.log", "line": 49, "node": 1, "partition": 1, "level": "INFO",
                       "logger": "org.apache.kafka.coordinator.group.GroupMetadataManager",
                       "text": "[GroupCoordinator id=1 topic=__consumer_offsets partition=1] Preparing to rebalance "
                               "group v440-classic in state PreparingRebalance with old generation 0 (reason: Adding "
                               f"new member {a} with group instance id null; client reason: not provided)."}}
    assert [r["body"]["members"] for r in recs if r["event"] == "generation"] == [1, 2, 1, 0]
    assert recs[1]["body"] == {"event": "member_joined", "group": "v440-classic", "member": a, "new": True}
    assert recs[10]["body"]["reason"] == "not provided"              # the client's KIP-800 reason
    assert recs[11]["body"]["reason"] == f"explicit `LeaveGroup` request for ({a}) members."
    assert recs[4]["body"] == {"event": "assignment", "group": "v440-classic", "leader": a, "generation": 1,
                               "members": 1, "static_members": 0}
    # stack traces are continuation lines; the ERROR/WARN lines around them are no coordinator event
    assert stats["lines_read"] == 117 and stats["events"] == len(records)
    assert [r["broker_log"]["line"] for r in _group(records, "gprobe2")] == [1, 14, 15, 41]
    assert stats["files"] == [{"file": "server-4.4.0.log", "path": str(K44), "lines": 117, "matched": 73,
                               "first_wall_ms": _ms("2026-11-27 21:04:50,302"),
                               "last_wall_ms": _ms("2026-11-28 00:34:43,098"),
                               "first": "2026-11-27T21:04:50.302+00:00", "last": "2026-11-28T00:34:43.098+00:00"}]
    assert sum(stats["kinds"].values()) == len(records) and stats["kinds"]["rebalance"] == 9


def test_kafka_44_classic_timeouts_and_static_replacement():
    records, _ = parse_broker_logs([K44])
    t = _group(records, "v440-classic-timeout")
    b = "b-dbf5db17-2de3-445d-9f4a-94aa3b493887"
    assert [(r["event"], r.get("member")) for r in t[8:]] == [
        ("session_timeout", b), ("member_removed", b), ("member_removed", "a-d48d6a7f-fa40-4906-90e1-81f3f927c0fc"),
        ("generation", None)]
    assert t[10]["body"]["reason"] == "removed dynamic members who haven't joined"
    assert t[11]["body"] == {"event": "generation", "group": "v440-classic-timeout", "generation": 2, "members": 0}
    s = _group(records, "v440-classic-static")
    assert [r["event"] for r in s] == STATIC_BOUNCE
    assert s[0]["instance"] == "inst-1" and s[0]["body"]["new"] is True
    assert s[4]["body"] == {"event": "static_member_replaced", "group": "v440-classic-static", "instance": "inst-1",
                            "old_member": "inst-1-e52b49e7-c053-40de-b4f8-3a33d35ca5b0"}
    assert s[7]["body"]["reason"] == ("removing member inst-1-887ad815-e731-4043-9ca8-4f4795afbfde on heartbeat "
                                      "expiration.")


def test_kafka_44_consumer_group_epochs_and_reasons():
    records, _ = parse_broker_logs([K44])
    c = _group(records, "v440-consumer")
    a, b = "N+8ynWxvRnWmbxHIQKyctg", "wYRNzOSgRVWTIj0gNx8NFA"
    assert _brief(c) == [("member_joined", None), ("group_epoch", 2), ("target_assignment", 2),
                         ("member_joined", None), ("group_epoch", 3), ("target_assignment", 3),
                         ("member_removed", None), ("group_epoch", 4), ("target_assignment", 4),
                         ("member_removed", None), ("group_epoch", 5)]
    assert [r["body"].get("reason") for r in c if r["event"] == "group_epoch"] == [
        f"member {a} subscription changed", f"member {b} subscription changed",
        f"member {a} removed: left the consumer group", f"member {b} removed: left the consumer group"]
    assert c[1]["body"]["cause"].endswith(f"[GroupId v440-consumer] Member {a} joins the consumer group using the "
                                          "consumer protocol.")
    assert c[0]["body"] == {"event": "member_joined", "group": "v440-consumer", "member": a, "new": True,
                            "protocol": "consumer"}
    assert c[2]["body"] == {"event": "target_assignment", "group": "v440-consumer", "epoch": 2, "assignor": "uniform",
                            "time_ms": 17}
    t = _group(records, "v440-consumer-timeout")
    g = "GElahpPDTAW6YtFStWw5Xg"
    fenced = [(r["event"], r.get("member"), r["body"].get("reason")) for r in t
              if r["event"] in ("rebalance_timeout", "session_timeout", "member_removed")]
    assert fenced[:4] == [("rebalance_timeout", g, None),
                          ("member_removed", g, "it failed to transition from epoch 2 within 300000ms"),
                          ("session_timeout", "996MvUWxT42v67sQsXL3pQ", None),
                          ("member_removed", "996MvUWxT42v67sQsXL3pQ", "the member session expired")]
    assert [r["body"]["epoch"] for r in t if r["event"] == "group_epoch"] == [2, 3, 4, 5, 6, 7, 8, 9]
    static = next(r for r in t if r.get("instance") == "inst-2")
    assert static["event"] == "member_joined" and static["member"] == "XuLGEnpdSr+Ww3Q196l2bA"


def test_kafka_391_scala_coordinator():
    records, stats = parse_broker_logs([K39])
    c = _group(records, "v391-classic")
    a = "a-f2553d96-d3c1-4930-a47e-05d0688d7242"
    # 3.9 logs the second JoinGroup of a member ("Pending dynamic member ...") at DEBUG only: no member_joined
    assert _brief(c) == [("member_id_required", None), ("rebalance", 0), ("generation", 1), ("assignment", 1),
                         ("member_id_required", None), ("rebalance", 1), ("generation", 2), ("assignment", 2),
                         ("rebalance", 2), ("member_left", None), ("generation", 3), ("assignment", 3),
                         ("rebalance", 3), ("generation", 4), ("member_left", None)]
    assert c[8]["body"]["reason"] == f"Removing member {a} on LeaveGroup; client reason: not provided"
    assert c[9]["body"] == {"event": "member_left", "group": "v391-classic", "member": a, "reason": "not provided"}
    assert c[9]["broker_log"]["logger"] == "kafka.coordinator.group.GroupCoordinator"
    assert c[1]["broker_log"]["node"] == 1 and c[1]["broker_log"]["partition"] == 2      # "(__consumer_offsets-2)"
    assert c[13]["body"] == {"event": "generation", "group": "v391-classic", "generation": 4, "members": 0}
    s = _group(records, "v391-classic-static")
    assert [r["event"] for r in s] == STATIC_BOUNCE
    assert s[0]["instance"] == "inst-1"
    assert s[7]["body"]["reason"].endswith("on heartbeat expiration")
    assert stats["lines_read"] == 44 and stats["lines_matched"] == 38


def test_kafka_391_new_coordinator_wording():
    records, _ = parse_broker_logs([K39N])
    assert _brief(_group(records, "v391n-classic")) == [
        ("member_id_required", None), ("rebalance", 0), ("generation", 1), ("assignment", 1),
        ("member_id_required", None), ("rebalance", 1), ("generation", 2), ("assignment", 2),
        ("member_left", None), ("rebalance", 2), ("generation", 3), ("assignment", 3),
        ("member_left", None), ("rebalance", 3), ("generation", 4)]
    s = _group(records, "v391n-classic-static")
    assert s[0]["event"] == "member_joined" and s[0]["instance"] == "inst-1"     # "... and added to the group."
    assert s[4]["event"] == "static_member_replaced"


def test_debug_lines_are_read_and_do_not_change_the_reasons():
    records, stats = parse_broker_logs([K44D])
    c = _group(records, "v440-consumer")
    a, b = "eQQfYBWrR/aXqVKPosWGng", "LaeqluB7SU6xO+Lc55AFgg"
    assert [r["body"].get("reason") for r in c if r["event"] == "group_epoch"] == [
        f"member {a} subscription changed", f"member {b} subscription changed",
        f"member {a} removed: left the consumer group", f"member {b} removed: left the consumer group"]
    # with DEBUG on, 4.4 logs the target assignment at DEBUG, with the assignment appended
    ta = [r for r in c if r["event"] == "target_assignment"]
    assert [(r["body"]["epoch"], r["broker_log"]["level"]) for r in ta] == [(2, "DEBUG"), (3, "DEBUG"), (4, "DEBUG")]
    assert c[1]["body"]["cause"].endswith(f"Member {a} updated its subscribed topics to: [v440-t-consumer].")
    assert stats["lines_matched"] == 20


def _split(src: Path, cuts: list[int]) -> list[list[str]]:
    lines = src.read_text().splitlines(keepends=True)
    edges = [0, *cuts, len(lines)]
    return [lines[a:b] for a, b in zip(edges, edges[1:])]


def _key(r):
    return r["event"], r["group"], r["wall_ms"], r["body"]


def test_rotated_gzipped_set_reads_as_one_log(tmp_path):
    whole, _ = parse_broker_logs([K44])
    # cut between a KIP-848 join (line 83) and its epoch bump (line 84): the reason crosses files
    old, mid, new = _split(K44, [60, 83])
    with gzip.open(tmp_path / "server.log.2026-11-28-00.gz", "wt") as f:
        f.writelines(old)
    (tmp_path / "server.log.1").write_text("".join(mid))
    (tmp_path / "server.log").write_text("".join(new))
    paths = [tmp_path / "server.log", tmp_path / "server.log.1", tmp_path / "server.log.2026-11-28-00.gz"]
    records, stats = parse_broker_logs(paths)
    assert [_key(r) for r in records] == [_key(r) for r in whole]
    assert [f["file"] for f in stats["files"]] == ["server.log.2026-11-28-00.gz", "server.log.1", "server.log"]
    assert stats["lines_read"] == 117
    assert records[-1]["broker_log"]["file"] == "server.log"


def test_time_zone_and_iso_layout(tmp_path):
    utc, _ = parse_broker_logs([K39])
    berlin = ZoneInfo("Europe/Berlin")
    local, stats = parse_broker_logs([K39], tz=berlin)
    assert [r["wall_ms"] for r in local] == [r["wall_ms"] - 3_600_000 for r in utc]     # CET = UTC+1
    assert stats["tz"] == "Europe/Berlin"
    # the same lines with ISO-8601 stamps that carry their zone: tz is not needed
    text = K39.read_text()
    iso = re.sub(r"^\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d),(\d{3})\]", r"\1T\2.\3+01:00", text, flags=re.M)
    (tmp_path / "iso.log").write_text(iso)
    zulu = re.sub(r"^\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d),(\d{3})\]", r"\1T\2.\3Z", text, flags=re.M)
    (tmp_path / "zulu.log").write_text(zulu)
    assert [r["wall_ms"] for r in parse_broker_logs([tmp_path / "iso.log"])[0]] == [r["wall_ms"] for r in local]
    assert [_key(r) for r in parse_broker_logs([tmp_path / "zulu.log"], tz=berlin)[0]] == [_key(r) for r in utc]


def test_several_brokers_merge_in_time_order():
    records, stats = parse_broker_logs([K44, K39])
    assert [r["wall_ms"] for r in records] == sorted(r["wall_ms"] for r in records)
    assert {r["broker_log"]["file"] for r in records} == {"server-4.4.0.log", "server-3.9.1.log"}
    assert len(stats["files"]) == 2 and stats["events"] == len(records)


def test_the_analysis_folds_broker_log_events_like_kshims_own():
    records, _ = parse_broker_logs([K44])
    rounds, _, changes = fold_group("v440-classic", _group(records, "v440-classic"))
    assert [(r["generation"], r["members"]) for r in rounds] == [(1, 1), (2, 2), (3, 1), (4, 0)]
    assert rounds[2]["reason"].startswith("explicit `LeaveGroup` request")
    assert [c["kind"] for c in changes] == ["joined", "joined"]
    _, _, crounds = fold_consumer_group("v440-consumer-timeout", _group(records, "v440-consumer-timeout"))
    assert [r["generation"] for r in crounds] == [2, 3, 4, 5, 6, 7, 8, 9]
    causes = fold_causes("v440-consumer", _group(records, "v440-consumer"))
    assert [(c["generation"], c["member"]) for c in causes] == [
        (2, "N+8ynWxvRnWmbxHIQKyctg"), (3, "wYRNzOSgRVWTIj0gNx8NFA"), (4, "N+8ynWxvRnWmbxHIQKyctg"),
        (5, "wYRNzOSgRVWTIj0gNx8NFA")]
