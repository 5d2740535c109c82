"""The wire tester without a broker: seeds reproduce, scenarios round-trip as JSON, requests build
at any version from one portable body, symbols resolve per target, answers normalise and compare."""

from __future__ import annotations

import json

from kcodec import api
from shim.compat.wirediff.build import build, resolve
from shim.compat.wirediff.command import parse_seeds
from shim.compat.wirediff.compare import Difference, diff
from shim.compat.wirediff.generate import CG_HEARTBEAT, JOIN, OFFSET_COMMIT, Scenario, generate


def test_a_seed_always_gives_the_same_scenario_and_seeds_differ():
    assert generate(7).to_json() == generate(7).to_json()
    assert generate(7).to_json() != generate(8).to_json()
    sc = generate(7)
    assert Scenario.from_json(json.loads(json.dumps(sc.to_json()))).to_json() == sc.to_json()


def test_scenarios_cover_every_api_and_both_protocols_over_many_seeds():
    apis, kinds, versions = set(), set(), set()
    for seed in range(300):
        sc = generate(seed)
        kinds |= {m["kind"] for m in sc.members.values()}
        for s in sc.steps:
            if "api" in s:
                apis.add(s["api"])
                versions.add((s["api"], s["v"]))
    assert apis == {8, 9, 10, 11, 12, 13, 14, 15, 16, 22, 25, 26, 28, 42, 47, 68, 69, 76, 77, 88, 89}
    assert kinds == {"classic", "consumer", "share", "streams"}
    assert {v for a, v in versions if a == JOIN} == set(range(0, 10))
    assert {v for a, v in versions if a == OFFSET_COMMIT} == set(range(2, 11))


def test_versions_follow_the_ranges_both_targets_offer():
    narrow = {k: (0, 0) if k == JOIN else (lo, hi) for k, (lo, hi) in
              __import__("shim.compat.wirediff.generate", fromlist=["x"]).DEFAULT_RANGES.items()}
    for seed in range(50):
        assert all(s["v"] == 0 for s in generate(seed, narrow).steps if s.get("api") == JOIN)


def test_one_portable_body_builds_at_every_version():
    body = {"groupId": "g", "generationIdOrMemberEpoch": 3, "memberId": "m", "groupInstanceId": None,
            "retentionTimeMs": -1, "topics": [{"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
                                              "partitions": [{"partitionIndex": 0, "committedOffset": 5,
                                                              "committedLeaderEpoch": -1, "committedMetadata": None}]}]}
    for v in range(2, 11):
        req = build(OFFSET_COMMIT, v, body)
        again = api.REQUESTS[OFFSET_COMMIT].decode(req.encode(v), v)
        assert again.topics[0].partitions[0].committed_offset == 5
        assert (again.topics[0].name == "t") == (v < 10)          # v10 names topics by id


def test_symbols_resolve_through_the_targets_lookup():
    seen = []

    def lookup(kind, arg):
        seen.append((kind, arg))
        return {"mid": "member-7", "gen": 4}[kind]
    out = resolve({"memberId": "$mid:m1", "generationId": "$gen:m1", "x": ["plain", "$mid:m2"]}, lookup)
    assert out == {"memberId": "member-7", "generationId": 4, "x": ["plain", "member-7"]}
    assert seen == [("mid", "m1"), ("gen", "m1"), ("mid", "m2")]


def test_consumer_heartbeat_without_a_regex_field_at_v0_drops_it():
    req = build(CG_HEARTBEAT, 0, {"groupId": "g", "memberId": "m", "memberEpoch": 0, "rebalanceTimeoutMs": 5,
                                  "subscribedTopicNames": ["a"], "subscribedTopicRegex": "a.*",
                                  "topicPartitions": []})
    assert req.subscribed_topic_regex is None and req.subscribed_topic_names == ["a"]


def test_diff_reports_paths_and_error_names():
    a = {"groups": [{"errorCode": 0, "state": "Stable"}], "n": 1}
    b = {"groups": [{"errorCode": 25, "state": "Stable"}], "n": 2}
    assert diff(a, b) == [("groups[0].errorCode", "NONE", "UNKNOWN_MEMBER_ID"), ("n", 1, 2)]
    assert diff(a, a) == []
    d = Difference(3, "JoinGroup", 5, "groups[0].errorCode", "NONE", "UNKNOWN_MEMBER_ID")
    assert d.kind == "JoinGroup v5 groups[].errorCode: 'NONE' vs 'UNKNOWN_MEMBER_ID'"
    assert Difference(3, "JoinGroup", 5, "members[2].clientId", "x", "y").kind == "JoinGroup members[].clientId"


def test_seed_ranges_parse():
    assert parse_seeds("0-3,9") == [0, 1, 2, 3, 9]
    assert parse_seeds("5") == [5]


class _FakeTarget:
    run_id, prefix = "kwrun", "kwrun-a"
    topic_ids = {"t1": "AAAAAAAAAAAAAAAAAAAAAQ", "t2": "AAAAAAAAAAAAAAAAAAAAAg"}

    def topic(self, sym):
        return f"kwrun-{sym}"


class _FakeSide:
    def __init__(self):
        self.t = _FakeTarget()
        self.sc = Scenario(5)
        self.tag = "5"
        self.ids = {"kw-m1-1234": "m1"}

    def group_symbol(self, name):
        head = "kwrun-a-5-"
        return name[len(head):] if name.startswith(head) else None


def test_normaliser_replaces_generated_names_and_keeps_everything_else():
    from shim.compat.wirediff.compare import Normaliser
    n = Normaliser(_FakeSide())
    body, messages = n.answer(15, ("ok", {"throttleTimeMs": 7, "groups": [
        {"groupId": "kwrun-a-5-g1", "errorCode": 0, "errorMessage": "Group kwrun-a-5-g1 kw-m1-1234 x",
         "members": [{"memberId": "zz-other"}, {"memberId": "kw-m1-1234", "clientId": "c"}]}]}))
    assert body == {"groups": [{"groupId": "<g1>", "errorCode": 0,
                                "members": [{"memberId": "<m1>", "clientId": "c"}, {"memberId": "<other member>"}]}]}
    assert messages == {"groups[0].errorMessage": "Group <group:g1 <m1> x"}
    listed, _ = n.answer(16, ("ok", {"errorCode": 0, "groups": [{"groupId": "someone-elses"},
                                                               {"groupId": "kwrun-a-5-g2"}]}))
    assert listed["groups"] == [{"groupId": "<g2>"}]
    hb, _ = n.answer(68, ("ok", {"assignment": {"topicPartitions": [
        {"topicId": "AAAAAAAAAAAAAAAAAAAAAg", "partitions": [2, 0]}, {"topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [0]}]}}))
    assert hb["assignment"]["topicPartitions"] == [{"topicId": "<t1>", "partitions": [0]},
                                                   {"topicId": "<t2>", "partitions": [0, 2]}]
    assert n.answer(11, ("closed",)) == ({"answer": "closed"}, {})


def test_known_differences_match_their_classes_only(monkeypatch):
    from shim.compat.wirediff import known
    from shim.compat.wirediff.known import reason
    assert known.KNOWN == {}     # none kept: a broker failing inside is copied, answer and effect
    monkeypatch.setitem(known.KNOWN, r"ConsumerGroupHeartbeat v\d errorCode: 'UNKNOWN_SERVER_ERROR' vs 'GROUP_ID_NOT_FOUND'",
                        "reviewed reason")
    assert reason("ConsumerGroupHeartbeat v0 errorCode: 'UNKNOWN_SERVER_ERROR' vs 'GROUP_ID_NOT_FOUND'") == "reviewed reason"
    assert reason("ConsumerGroupHeartbeat v0 errorCode: 'NONE' vs 'GROUP_ID_NOT_FOUND'") is None
    assert reason("JoinGroup members[].clientId") is None
