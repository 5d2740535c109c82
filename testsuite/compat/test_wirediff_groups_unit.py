"""The wire tester's share-group (KIP-932) and streams-group (KIP-1071) members (groups_gen.py) without
a broker: they come at a modest rate from their own random stream (a seed's classic and consumer
steps are those it had before), their joins pass the broker's request checks
(GroupCoordinatorService.throwIf{Share,Streams}GroupHeartbeatRequestIsInvalid) unless meant not to,
their client-generated member ids are UUID strings derived from the seed, and they meet the seed's
classic/consumer groups (the wrong-type answers)."""

from __future__ import annotations

import json
import uuid

from kcodec import api
from kcodec.protocol import Error
from shim.compat.wirediff.build import build, resolve
from shim.compat.wirediff.driver import Side
from shim.compat.wirediff.generate import DEFAULT_RANGES, generate
from shim.compat.wirediff.groups_gen import SG_DESCRIBE, SG_HEARTBEAT, ST_DESCRIBE, ST_HEARTBEAT, client_uuid
from shim.compat.wirediff.known import open_issue, reason
from shim.compat.wirediff.txn_gen import RANGES as TXN_RANGES
from shim.compat.wirediff.target import Target

NEW_APIS = {SG_HEARTBEAT, SG_DESCRIBE, ST_HEARTBEAT, ST_DESCRIBE}
NO_TXN = {k: r for k, r in DEFAULT_RANGES.items() if k not in TXN_RANGES}      # (txn_gen.py: its own test)
WITHOUT = {k: r for k, r in NO_TXN.items() if k not in NEW_APIS}
SEEDS = range(300)


def _new_members(sc) -> dict:
    return {n: m for n, m in sc.members.items() if m["kind"] in ("share", "streams")}


def test_share_and_streams_members_come_at_a_modest_rate_in_both_kinds():
    with_new = [s for s in SEEDS if _new_members(generate(s))]
    assert 0.15 * len(SEEDS) < len(with_new) < 0.4 * len(SEEDS)
    kinds = {m["kind"] for s in with_new for m in _new_members(generate(s)).values()}
    assert kinds == {"share", "streams"}


def test_a_seeds_classic_and_consumer_steps_are_kept_in_order():
    for seed in SEEDS:
        old, new = generate(seed, WITHOUT).to_json(), generate(seed, NO_TXN).to_json()
        assert {n: new["members"][n] for n in old["members"]} == old["members"]
        it = iter(new["steps"])
        assert all(any(x == y for y in it) for x in old["steps"]), seed      # a subsequence
        added = len(new["steps"]) - len(old["steps"])
        assert (added > 0) == bool(_new_members(generate(seed)))


def test_without_the_apis_on_both_targets_no_share_or_streams_member_is_drawn():
    assert not any(_new_members(generate(s, WITHOUT)) for s in SEEDS)


def _steps(api_key):
    for seed in SEEDS:
        sc = generate(seed)
        for s in sc.steps:
            if s.get("api") == api_key:
                yield sc, s


def test_share_joins_name_topics_and_epochs_include_wrong_ones():
    joins = [s for _, s in _steps(SG_HEARTBEAT) if s["body"]["memberEpoch"] == 0]
    assert joins and sum(bool(s["body"]["subscribedTopicNames"]) for s in joins) > 0.7 * len(joins)
    epochs = {str(s["body"]["memberEpoch"]).split(":")[0] for _, s in _steps(SG_HEARTBEAT)}
    assert {"0", "-1", "$epoch", "$epoch+1", "$epoch-1", "-2"} <= epochs


def test_streams_joins_carry_a_minimal_valid_topology_mostly():
    joins = [s["body"] for _, s in _steps(ST_HEARTBEAT) if s["body"]["memberEpoch"] == 0]
    assert joins
    valid = [b for b in joins if b["rebalanceTimeoutMs"] != -1]
    assert len(valid) > 0.8 * len(joins)
    for b in joins:
        (sub,) = b["topology"]["subtopologies"]
        assert sub["subtopologyId"] == "0" and sub["sourceTopics"]
        assert b["activeTasks"] == b["standbyTasks"] == b["warmupTasks"] == []
    later = [s["body"] for _, s in _steps(ST_HEARTBEAT) if s["body"]["memberEpoch"] != 0]
    assert later and all(b["topology"] is None for b in later)


def test_cross_type_steps_and_admin_steps_name_the_new_groups():
    crossed = describe = listed = 0
    for seed in SEEDS:
        sc = generate(seed)
        classic = {m["group"] for m in sc.members.values() if m["kind"] in ("classic", "consumer")}
        crossed += any(m["group"] in classic for m in _new_members(sc).values())
        for s in sc.steps:
            if s.get("conn") == "adm" and s["api"] in (SG_DESCRIBE, ST_DESCRIBE):
                describe += 1
            if s.get("conn") == "adm" and s["api"] == 16 and set(s["body"]["typesFilter"]) & {"share", "streams"}:
                listed += 1
    assert crossed >= 10 and describe >= 10 and listed >= 3


def test_member_ids_are_uuid_strings_from_the_seed_and_resolve_per_side():
    a = client_uuid(4, "m5")
    assert a == client_uuid(4, "m5") and str(uuid.UUID(a)) == a
    assert len({a, client_uuid(5, "m5"), client_uuid(4, "m6"), client_uuid(4, "m5", "process")}) == 4
    seed = next(s for s in SEEDS if any(m["kind"] == "streams" for m in _new_members(generate(s)).values()))
    sc = generate(seed)
    side = Side(Target("a", "127.0.0.1:1", "kwrun"), sc)
    name = next(n for n, m in _new_members(sc).items() if m["kind"] == "streams")
    assert side.ids[client_uuid(seed, name)] == name
    for idx, s in enumerate(sc.steps):
        if s.get("conn") == name and s["api"] == ST_HEARTBEAT:
            body = resolve(s["body"], side.lookup)
            assert body["memberId"] == client_uuid(seed, name) and body["groupId"].startswith("kwrun-a-")
            req = build(s["api"], s["v"], body)
            again = api.REQUESTS[s["api"]].decode(req.encode(s["v"]), s["v"])
            assert again.member_id == client_uuid(seed, name)


def test_heartbeat_answers_teach_the_side_epochs_and_tasks():
    seed = next(s for s in SEEDS if any(m["kind"] == "streams" for m in _new_members(generate(s)).values()))
    sc = generate(seed)
    side = Side(Target("a", "127.0.0.1:1", "kwrun"), sc)
    name = next(n for n, m in _new_members(sc).items() if m["kind"] == "streams")
    step = {"conn": name, "api": ST_HEARTBEAT}
    tasks = [{"subtopologyId": "0", "partitions": [0, 1]}]
    side.learn(side.state[name], step, {"errorCode": 0, "memberEpoch": 3, "activeTasks": tasks})
    assert side.lookup("epoch", name) == 3 and side.lookup("tasks", name) == tasks
    side.learn(side.state[name], step, {"errorCode": Error.UNKNOWN_MEMBER_ID, "memberEpoch": 0})
    assert side.lookup("epoch", name) == 0 and side.lookup("tasks", name) == []


def test_scenarios_with_new_members_round_trip_as_json():
    seed = next(s for s in SEEDS if _new_members(generate(s)))
    sc = generate(seed)
    assert json.loads(json.dumps(sc.to_json())) == sc.to_json()


def test_no_open_kshim_differences_are_left():
    """The classes the share/streams members found are fixed (their replays run as plain checks)."""
    kind = "ShareGroupHeartbeat v1 errorCode: 'INVALID_REQUEST' vs 'GROUP_ID_NOT_FOUND'"
    assert open_issue(kind) is None and reason(kind) is None
