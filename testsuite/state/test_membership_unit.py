"""Scale-out without sockets: the membership state machine (shim/state/membership.py) driven against
kshim's own sans-IO classic coordinator (the same protocol the broker's coordinator speaks), the
sticky assignor, the replay fence of ownership markers, the not-owner answers and
GroupCoordinator.unload."""

from __future__ import annotations

import asyncio

from kcodec import api
from kcodec.generated.find_coordinator import Coordinator, FindCoordinatorResponse
from kcodec.records import decode_batch
from shim import error_answers
from shim.coordinator import errors as E
from shim.coordinator.state_records import OffsetRecord
from shim.state import format as fmt
from shim.state.batch import encode_batch
from shim.state.membership import FIND_COORDINATOR, STABLE, WANTED, Membership, Peer, assign
from testsuite.coordinator.harness import COMMIT, FETCH, Harness

PARTS = 8


def test_assign_is_even_sticky_and_resolves_double_claims():
    fresh = assign(PARTS, {"b": (-1, []), "a": (-1, [])})
    assert fresh == {"a": [0, 1, 2, 3], "b": [4, 5, 6, 7]}
    # a third member arrives: a and b keep what they can, the newcomer gets the rest
    three = assign(PARTS, {"a": (3, [0, 1, 2, 3]), "b": (3, [4, 5, 6, 7]), "c": (-1, [])})
    assert sorted(len(v) for v in three.values()) == [2, 3, 3]
    assert set(three["a"]) <= {0, 1, 2, 3} and set(three["b"]) <= {4, 5, 6, 7}
    assert sorted(p for v in three.values() for p in v) == list(range(PARTS))
    # b is gone: a keeps its partitions and takes b's
    assert assign(PARTS, {"a": (4, three["a"])})["a"] == list(range(PARTS))
    # a stale claim (older generation) loses a partition claimed by a newer one
    both = assign(4, {"a": (2, [0, 1]), "b": (5, [1, 2])})
    assert 1 in both["b"] and sorted(both["a"] + both["b"]) == [0, 1, 2, 3]


class Broker:
    """Membership machines talking to a sans-IO classic coordinator (the broker's protocol)."""

    def __init__(self) -> None:
        self.h = Harness(initial_rebalance_delay_ms=0)
        self.parked: dict[int, tuple[Membership, int]] = {}

    def step(self, machines: list[Membership]) -> None:
        for sm in machines:
            req = sm.next_request(self.h.now)
            if req is None:
                continue
            for v in range(api.VERSIONS[req.api_key][0], WANTED[req.api_key] + 1):
                req.build(v).encode(v)           # valid at every version the driver may negotiate
            if req.api_key == FIND_COORDINATOR:
                sm.on_response(FindCoordinatorResponse(coordinators=[Coordinator(
                    key=sm.group, node_id=1, host="b", port=1, error_code=0)]), self.h.now)
                continue
            version = {11: 9, 14: 5, 12: 4, 13: 5}[req.api_key]
            token = self.h.send(req.api_key, version, req.build(version))
            self.parked[token] = (sm, token)
        self.deliver()

    def deliver(self) -> None:
        for token in list(self.parked):
            body = self.h.answer(token)
            if body is not None:
                sm, _ = self.parked.pop(token)
                sm.on_response(body, self.h.now)

    def run(self, machines: list[Membership], until_ms: int, every_ms: int = 100) -> None:
        while self.h.now < until_ms:
            self.step(machines)
            self.h.advance(every_ms)
            self.deliver()


def _peer(n: int) -> Peer:
    return Peer(f"host{n}", 9000 + n * 10, 9001 + n * 10, ((1, 9002 + n * 10),))


def test_two_instances_split_the_partitions_and_the_survivor_takes_over():
    broker = Broker()
    a = Membership("state.owners", PARTS, _peer(1), session_timeout_ms=6000)
    b = Membership("state.owners", PARTS, _peer(2), session_timeout_ms=6000)
    broker.run([a, b], 2000)
    assert a.state == b.state == STABLE and a.generation == b.generation
    ta, tb = a.take_assignment(), b.take_assignment()
    assert len(ta.mine) == len(tb.mine) == PARTS // 2 and not ta.mine & tb.mine
    # every member knows every owner, with the addresses clients use
    assert ta.owners == tb.owners and set(ta.owners) == set(range(PARTS))
    assert {ta.owners[p] for p in tb.mine} == {_peer(2)} and ta.owners[min(ta.mine)].port_for(1) == 9012
    # b stops answering (SIGKILL): after its session timeout the broker removes it, a rejoins alone
    broker.run([a], 2000 + 6000 + 4000)
    after = a.take_assignment()
    assert after is not None and after.mine == frozenset(range(PARTS)) and a.generation > ta.generation
    # a keeps its own partitions in place (sticky): nothing of a's moved
    assert ta.mine <= after.mine
    # b wakes up: its heartbeat is refused, it drops its partitions at once and rejoins
    broker.run([a, b], broker.h.now + 3000)
    lost = b.take_assignment()
    assert lost is not None
    broker.run([a, b], broker.h.now + 4000)
    final_a, final_b = a.owned, b.owned
    assert len(final_a) == len(final_b) == PARTS // 2 and not final_a & final_b


def test_an_instance_cut_off_from_the_broker_stops_serving_after_its_session_timeout():
    broker = Broker()
    a = Membership("state.owners", 4, _peer(1), session_timeout_ms=6000)
    broker.run([a], 1000)
    assert a.take_assignment().mine == frozenset(range(4))
    t = broker.h.now
    a.next_request(t + 2000)                    # a heartbeat goes out and is lost
    a.on_failure(t + 2100)
    assert a.take_assignment() is None          # within the session timeout: still serving
    assert a.deadline() <= t + 6000
    a.next_request(t + 6500)
    dropped = a.take_assignment()
    assert dropped is not None and dropped.mine == frozenset()


def test_fence_ignores_an_old_owners_writes_after_a_newer_marker():
    f = fmt.Fence()
    assert f.keep(None) and f.keep(0)
    f.marker(fmt.OwnerMarker(0, 5, "a", "h", 1))
    assert f.keep(5) and f.keep(6) and f.keep(None) and not f.keep(4)
    f.marker(fmt.OwnerMarker(0, 3, "old", "h", 1))       # an older marker later in the log changes nothing
    assert f.epoch == 5 and f.owner == "a"


def test_marker_and_epoch_header_round_trip_through_a_batch():
    m = fmt.OwnerMarker(3, 7, "member-1", "10.0.0.1", 9092)
    key, value = fmt.encode_marker(m)
    assert fmt.decode_marker(key, value) == m
    assert fmt.decode_marker(*fmt.encode(OffsetRecord("g", "t", 0, 1, -1, "", 0, None))) is None
    rec = fmt.encode(OffsetRecord("g", "t", 0, 1, -1, "", 0, None))
    batch = decode_batch(encode_batch([(key, value), (*rec, [fmt.epoch_header(7)]), rec], 1), verify_crc=True)
    assert [fmt.epoch_of(r.headers) for r in batch.records] == [None, 7, None]
    # readers of the older formats see an ordinary record: the value is unchanged
    assert fmt.decode(batch.records[1].key, batch.records[1].value) == fmt.decode(*rec)


def test_refusals_have_the_brokers_shapes():
    h = Harness(topics={"t": 2})
    join = error_answers.refuse(11, 9, type("R", (), {"member_id": "m-1"})(), E.NOT_COORDINATOR)
    assert (join.error_code, join.member_id, join.generation_id) == (E.NOT_COORDINATOR, "m-1", -1)
    assert error_answers.refuse(12, 4, None, E.COORDINATOR_LOAD_IN_PROGRESS).error_code == 0   # heartbeat while loading
    assert error_answers.refuse(12, 4, None, E.NOT_COORDINATOR).error_code == E.NOT_COORDINATOR
    tok = h.send(COMMIT, 8, h_commit_request())
    commit = error_answers.refuse(8, 8, h_commit_request(), E.NOT_COORDINATOR)
    assert [(p.partition_index, p.error_code) for t in commit.topics for p in t.partitions] == [(0, 16), (1, 16)]
    commit.encode(8)
    assert h.answered(tok).topics[0].partitions[0].error_code == 0
    # batched: the entries of groups served elsewhere carry the error, the others are untouched
    ftok = h.send(FETCH, 8, h_fetch_request(["g", "elsewhere"]))
    body = h.answered(ftok)
    error_answers.refuse_entries(9, body, {"elsewhere": E.NOT_COORDINATOR})
    assert [(g.group_id, g.error_code, len(g.topics)) for g in body.groups] == [("g", 0, 1), ("elsewhere", 16, 0)]
    described = h.describe("g", "x")
    error_answers.refuse_entries(15, described, {"x": E.COORDINATOR_LOAD_IN_PROGRESS})
    assert [(g.group_id, g.error_code, g.group_state) for g in described.groups] == [("g", 0, "Empty"), ("x", 14, "")]
    described.encode(6)


def h_commit_request():
    from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                OffsetCommitRequestTopic)
    return OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequestTopic(name="t", partitions=[OffsetCommitRequestPartition(partition_index=i, committed_offset=5)
                                                       for i in (0, 1)])])


def h_fetch_request(groups):
    from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
    return OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=g, topics=[
        OffsetFetchRequestTopics(name="t", partition_indexes=[0])]) for g in groups])


def test_unload_answers_parked_requests_and_forgets_the_group():
    h = Harness(topics={"t": 1})
    ids, gen = h.stable_group("g", 2)
    h.commit("g", {("t", 0): 7})
    h.stable_group("other", 1)
    tok = h.join("g", ids[0])                    # a rejoin parks while the other member has not rejoined
    assert h.answer(tok) is None
    h._collect(h.c.unload(["g"]))
    assert h.answered(tok).error_code == E.NOT_COORDINATOR
    assert "g" not in h.c.groups and "g" not in h.c.offsets.by_group
    assert not any(isinstance(k, tuple) and "g" in k for k in h.c.timers._live)
    assert "other" in h.c.groups
    h.advance(60_000)                            # no timer of the unloaded group fires


def test_state_log_tags_owned_partitions_and_refuses_others():
    from shim.config import Config
    from shim.state.log import NOT_LEADER_OR_FOLLOWER, StateLog

    async def run():
        log = StateLog(Config(upstream="127.0.0.1:1"), lambda: [])
        p = fmt.partition_for("g", log.partitions)
        log.owned = {p: 9}
        fut = log.append([OffsetRecord("g", "t", 0, 1, -1, "", 0, None)])
        other = next(g for g in (f"g{i}" for i in range(100)) if fmt.partition_for(g, log.partitions) != p)
        refused = log.append([OffsetRecord(other, "t", 0, 1, -1, "", 0, None)])
        assert refused.done() and refused.result() == NOT_LEADER_OR_FOLLOWER
        (entry,) = log._queue
        assert [fmt.epoch_of([type("H", (), {"key": k, "value": v})() for k, v in r[2]]) for r in entry.by_partition[p]] == [9]
        log.release(p)                           # the partition moves away before the round
        await log._round(log._take())
        assert fut.result() == NOT_LEADER_OR_FOLLOWER
    asyncio.run(run())
