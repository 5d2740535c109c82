"""Online migration between classic and consumer groups (KIP-848; after cases of Kafka's
GroupMetadataManagerTest and ConsumerProtocolMigrationTest): upgrade allowed/refused per policy and
condition, classic members joining/syncing/heartbeating inside a consumer group, their timers,
downgrade, and replay of classic members."""

from __future__ import annotations

import struct

import pytest

from kcodec.generated.consumer_protocol_assignment import ConsumerProtocolAssignment
from kcodec.generated.consumer_protocol_assignment import TopicPartition as ATP
from kcodec.generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from kcodec.generated.consumer_protocol_subscription import TopicPartition as STP
from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup
from shim.coordinator import CoordinatorConfig, GroupCoordinator
from shim.coordinator import errors as E
from shim.coordinator.consumer.consumer_group import UNREVOKED
from shim.state import format as F
from testsuite.coordinator.consumer.harness import Client, ConsumerHarness
from testsuite.coordinator.harness import FETCH

SESSION, REBALANCE = 10_000, 30_000


def meta(*topics: str, owned: dict | None = None, version: int = 1) -> bytes:
    sub = ConsumerProtocolSubscription(topics=list(topics), user_data=None, owned_partitions=[
        STP(topic=t, partitions=sorted(ps)) for t, ps in (owned or {}).items()])
    return struct.pack(">h", version) + sub.encode(version)


def assignment(parts: dict, user_data: bytes | None = None, version: int = 1) -> bytes:
    a = ConsumerProtocolAssignment(assigned_partitions=[ATP(topic=t, partitions=sorted(ps)) for t, ps in parts.items()],
                                   user_data=user_data)
    return struct.pack(">h", version) + a.encode(version)


def decoded(data: bytes) -> dict:
    version = struct.unpack(">h", data[:2])[0]
    a = ConsumerProtocolAssignment.decode(data[2:], version)
    return {tp.topic: sorted(tp.partitions) for tp in a.assigned_partitions}


def harness(**cfg) -> ConsumerHarness:
    return ConsumerHarness({"foo": 6, "bar": 2}, **cfg)


def classic_group(h: ConsumerHarness, ptype: str = "consumer", protocol: str = "range", assign=None):
    """Two classic members (m[0] leader) Stable at generation 1: foo 0-2 and 3-5."""
    assign = assign or (lambda i: assignment({"foo": range(3 * i, 3 * i + 3)}))
    ids: list[str] = []
    order = {}

    def by_member(mid):
        if mid not in order:
            order[mid] = len(order)
        return assign(order[mid])
    ids, gen = h.stable_group("g", 2, protocols=((protocol, meta("foo")),), session=SESSION, rebalance=REBALANCE,
                              assign=by_member) if ptype == "consumer" else _other_type(h)
    h.advance(5000)
    return ids, gen


def _other_type(h):
    tokens = [h.join_dynamic("g", ptype="other", protocols=(("p", b"x"),))[1] for _ in range(2)]
    h.advance(6000)
    joins = [h.answered(t) for t in tokens]
    ids = [j.member_id for j in joins]
    for mid in ids:
        h.sync("g", mid, 1, ptype="other", pname="p", assignments={i: b"" for i in ids} if mid == joins[0].leader
               else None)
    return ids, 1


class Classic:
    """A classic consumer inside the group: rejoins with its owned partitions (cooperative) and syncs."""

    def __init__(self, h: ConsumerHarness, member_id: str, generation: int, owned: dict, protocol: str = "range",
                 cooperative: bool = True):
        self.h, self.member_id, self.generation, self.owned = h, member_id, generation, owned
        self.protocol, self.cooperative = protocol, cooperative

    def join(self, v: int = 9):
        owned = self.owned if self.cooperative else {}
        r = self.h.answered(self.h.join("g", self.member_id, v=v, protocols=((self.protocol, meta("foo", owned=owned)),),
                                        session=SESSION, rebalance=REBALANCE))
        if r.error_code == 0:
            self.generation = r.generation_id
        return r

    def sync(self):
        r = self.h.answered(self.h.sync("g", self.member_id, self.generation, pname=self.protocol))
        if r.error_code == 0:
            self.owned = decoded(r.assignment)
        return r

    def heartbeat(self):
        return self.h.heartbeat("g", self.member_id, self.generation).error_code


# ---------------------------------------------------------------------------------- upgrade
@pytest.mark.parametrize("policy", ["bidirectional", "upgrade"])
def test_upgrade_keeps_classic_members_and_their_assignments(policy):
    h = harness(consumer_migration_policy=policy)
    ids, gen = classic_group(h)
    records_before = len(h.c.written)
    r = h.cgh("g", "new", topics=["foo"])
    assert r.error_code == 0
    assert h.group("g") is None
    g = h.cg()
    assert g.group_epoch == gen + 1 and g.assignment_epoch == gen + 1      # the new member's epoch bump
    for i, mid in enumerate(ids):
        m = g.members[mid]
        assert m.classic is not None and m.classic.session_timeout_ms == SESSION
        assert m.member_epoch == gen and m.subscribed_topic_names == ("foo",)
        assert {h.topics.topic(t).name: sorted(ps) for t, ps in m.assigned.items()} == {"foo": [3 * i, 3 * i + 1,
                                                                                                3 * i + 2]}
    assert r.member_epoch == gen + 1 and h.names(r.assignment) == {}        # everything still owned by others
    kinds = [type(rec).__name__ for rec in h.c.written[records_before:]]
    assert kinds[0] == "GroupTombstone" and "ConsumerGroupRecord" in kinds
    (d,) = h.describe_cg("g").groups
    assert {m.member_id: m.member_type for m in d.members} == {ids[0]: 0, ids[1]: 0, "new": 1}


@pytest.mark.parametrize("policy", ["downgrade", "disabled"])
def test_upgrade_refused_by_policy(policy):
    h = harness(consumer_migration_policy=policy)
    classic_group(h)
    r = h.cgh("g", "new")
    assert r.error_code == E.GROUP_ID_NOT_FOUND and "online upgrade is disabled" in r.error_message
    assert h.cg() is None and h.group("g").state == "Stable"


@pytest.mark.parametrize("case, words", [
    ("type", "does not use the consumer embedded protocol"),
    ("size", "exceeds the consumer group maximum size"),
    ("user_data", "custom assignor"),
    ("malformed", "malformed"),
])
def test_upgrade_refused_by_condition(case, words):
    h = harness(consumer_max_size=1 if case == "size" else 2**31 - 1)
    if case == "type":
        classic_group(h, ptype="other")
    elif case == "user_data":
        classic_group(h, assign=lambda i: assignment({"foo": [i]}, user_data=b"sticky", version=1))
    elif case == "malformed":
        classic_group(h, assign=lambda i: b"\x00\x01garbage")
    else:
        classic_group(h)
    r = h.cgh("g", "new")
    assert r.error_code == E.GROUP_ID_NOT_FOUND and words in r.error_message
    assert h.cg() is None and h.group("g") is not None


def test_upgrade_answers_parked_join_and_sync_rebalance_in_progress():
    h = harness()
    ids, gen = classic_group(h)
    parked = h.join("g", ids[0], protocols=(("range", meta("foo")),), session=SESSION, rebalance=REBALANCE)
    assert h.answer(parked) is None and h.group("g").state == "PreparingRebalance"
    assert h.cgh("g", "new").error_code == 0
    assert h.answered(parked).error_code == E.REBALANCE_IN_PROGRESS
    assert h.c.timers.deadline(("join", "g")) is None


# ---------------------------------------------------------------------------------- classic members
def upgraded(h, cooperative=True):
    ids, gen = classic_group(h)
    new = Client(h, "new")
    new.beat()
    owned = [h.c.consumer_groups["g"].members[mid] for mid in ids]
    members = [Classic(h, mid, gen, {"foo": sorted(p for ps in m.assigned.values() for p in ps)},
                       cooperative=cooperative) for mid, m in zip(ids, owned)]
    return new, members


def reconciled(h):
    """upgraded(), then both (eager) classic members rejoin and sync once."""
    new, (a, b) = upgraded(h, cooperative=False)
    for cl in (a, b):
        cl.join()
        cl.sync()
    return new, (a, b)


def test_classic_members_rejoin_and_revoke_cooperatively():
    h = harness()
    new, (a, b) = upgraded(h)
    epoch = h.cg().assignment_epoch
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS                  # behind the assignment epoch
    r = a.join()
    assert (r.error_code, r.generation_id, r.leader, r.protocol_name, r.protocol_type, r.members) == \
        (0, epoch - 1, "", "range", "consumer", [])                   # must revoke first: epoch unchanged
    assert h.cg().members[a.member_id].state == UNREVOKED
    assert a.sync().error_code == 0 and sum(map(len, a.owned.values())) == 2
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS                  # revocation pending: rejoin
    r = a.join()
    assert r.generation_id == epoch
    assert a.sync().error_code == 0 and a.heartbeat() == E.NONE
    for _ in range(2):
        b.heartbeat()
        b.join()
        b.sync()
    for _ in range(3):
        new.beat()
    assert h.cg().state == "Stable"
    owned = sorted(p for cl in (a, b) for p in cl.owned["foo"]) + new.owned["foo"]
    assert sorted(owned) == list(range(6)) and len(new.owned["foo"]) == 2


def test_eager_classic_member_gets_its_partitions_at_once():
    h = harness()
    new, (a, b) = upgraded(h, cooperative=False)
    epoch = h.cg().assignment_epoch
    r = a.join()                                      # owns nothing (eager): straight to the new epoch
    assert r.generation_id == epoch and a.sync().error_code == 0
    assert len(a.owned["foo"]) == 2


def test_classic_join_into_consumer_group():
    h = harness()
    new = Client(h, "new")
    new.beat()
    first = h.answered(h.join("g", protocols=(("range", meta("foo")), ("roundrobin", meta("foo"))),
                              session=SESSION))
    assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id
    assert first.member_id not in h.cg().members
    r = h.answered(h.join("g", first.member_id, protocols=(("range", meta("foo")), ("roundrobin", meta("foo"))),
                          session=SESSION))
    assert (r.error_code, r.leader, r.protocol_name) == (0, "", "range")
    assert r.generation_id == h.cg().members[first.member_id].member_epoch
    # another classic member must offer a protocol every classic member supports
    bad = h.answered(h.join("g", "x", protocols=(("sticky", meta("foo")),)))
    assert bad.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    wrong_type = h.answered(h.join("g", "x", ptype="connect", protocols=(("range", meta("foo")),)))
    assert wrong_type.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    v3 = h.answered(h.join("g", v=3, protocols=(("roundrobin", meta("foo")),)))   # no MEMBER_ID_REQUIRED
    assert v3.error_code == 0 and v3.member_id in h.cg().members


def test_classic_join_refused_when_migration_disabled():
    h = harness(consumer_migration_policy="disabled")
    Client(h, "new").beat()
    assert h.answered(h.join("g")).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_sync_and_heartbeat_errors():
    h = harness()
    new, (a, b) = upgraded(h)
    assert h.answered(h.sync("g", "nobody", 1)).error_code == E.UNKNOWN_MEMBER_ID
    assert h.answered(h.sync("g", "new", new.epoch)).error_code == E.UNKNOWN_MEMBER_ID    # consumer protocol
    assert h.answered(h.sync("g", a.member_id, 7)).error_code == E.ILLEGAL_GENERATION
    assert h.answered(h.sync("g", a.member_id, a.generation, pname="roundrobin")).error_code == \
        E.INCONSISTENT_GROUP_PROTOCOL
    # behind the assignment epoch and nothing to revoke yet: rejoin first
    assert h.answered(h.sync("g", a.member_id, a.generation)).error_code == E.REBALANCE_IN_PROGRESS
    assert h.c.timers.active(("cg-join", "g", a.member_id))
    assert h.heartbeat("g", a.member_id, 9).error_code == E.ILLEGAL_GENERATION
    assert h.heartbeat("g", "new", new.epoch).error_code == E.UNKNOWN_MEMBER_ID


def test_classic_member_commits_with_its_generation():
    h = harness()
    new, (a, b) = upgraded(h)
    assert h.commit("g", {("foo", 3): 1}, generation=b.generation, member_id=b.member_id, v=8) == {("foo", 3): 0}
    assert h.commit("g", {("foo", 3): 1}, generation=b.generation + 5, member_id=b.member_id) == \
        {("foo", 3): E.ILLEGAL_GENERATION}
    req = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id="g", member_id=b.member_id,
                                                             member_epoch=b.generation + 1, topics=None)])
    assert h.immediate(FETCH, 9, req).groups[0].error_code == E.ILLEGAL_GENERATION


# ---------------------------------------------------------------------------------- timers
def test_join_timer_fences_a_member_that_does_not_rejoin():
    h = harness()
    new, (a, b) = upgraded(h)
    epoch = h.cg().group_epoch
    for _ in range(REBALANCE // 5000):
        assert a.member_id in h.cg().members
        assert a.heartbeat() == E.REBALANCE_IN_PROGRESS          # keeps its session, never rejoins
        if b.heartbeat() == E.REBALANCE_IN_PROGRESS:             # b does rejoin
            b.join()
            b.sync()
        new.beat()
        h.advance(5000)
    assert a.member_id not in h.cg().members and h.cg().group_epoch > epoch
    assert b.member_id in h.cg().members


def test_sync_timer_fences_a_member_that_does_not_sync():
    h = harness()
    new, (a, b) = upgraded(h, cooperative=False)
    a.join()
    h.advance(REBALANCE)
    assert a.member_id not in h.cg().members


def test_session_timeout_of_a_classic_member():
    h = harness()
    new, (a, b) = reconciled(h)
    for _ in range(4):
        h.advance(SESSION // 2)
        a.heartbeat()
        new.beat()
    assert a.member_id in h.cg().members and b.member_id not in h.cg().members


def test_leave_group_fences_classic_members_together():
    h = harness()
    new, (a, b) = upgraded(h)
    epoch = h.cg().group_epoch
    r = h.leave("g", (a.member_id, None), ("ghost", None))
    assert [m.error_code for m in r.members] == [0, E.UNKNOWN_MEMBER_ID]
    assert a.member_id not in h.cg().members and h.cg().group_epoch == epoch + 1


# ---------------------------------------------------------------------------------- downgrade
def test_last_consumer_member_leaving_downgrades():
    h = harness()
    new, (a, b) = reconciled(h)
    epoch = h.cg().group_epoch
    targets = {mid: {h.topics.topic(t).name: sorted(ps) for t, ps in m.target.items()}
               for mid, m in h.cg().members.items()}
    r = h.cgh("g", "new", -1, topics=None, owned=None)
    assert (r.error_code, r.member_epoch) == (0, -1)
    assert h.cg() is None
    g = h.group("g")
    assert g.state == "PreparingRebalance" and g.generation_id == epoch and g.protocol_type == "consumer"
    assert set(g.members) == {a.member_id, b.member_id}
    for mid, m in g.members.items():
        assert decoded(m.assignment) == targets[mid]
    assert h.heartbeat("g", a.member_id, epoch).error_code == E.REBALANCE_IN_PROGRESS
    kinds = [type(rec).__name__ for rec in h.c.written[-12:]]
    assert kinds.index("ConsumerGroupTombstone") < kinds.index("GroupMetadataRecord")


def test_no_downgrade_when_policy_forbids_it():
    h = harness(consumer_migration_policy="upgrade")
    new, (a, b) = upgraded(h)
    h.cgh("g", "new", -1, topics=None, owned=None)
    assert h.group("g") is None and set(h.cg().members) == {a.member_id, b.member_id}


def test_session_timeout_of_the_last_consumer_member_downgrades():
    h = harness()
    new, (a, b) = reconciled(h)
    start = h.now
    while h.cg() is not None:
        h.advance(5000)
        if h.cg() is not None:
            assert a.heartbeat() == b.heartbeat() == E.NONE
    assert h.now - start == 45_000                                 # the consumer member's session timeout
    assert h.group("g").state == "PreparingRebalance" and set(h.group("g").members) == {a.member_id, b.member_id}


# ---------------------------------------------------------------------------------- replay
def test_classic_members_survive_a_restart():
    h = harness()
    new, (a, b) = upgraded(h, cooperative=False)
    a.join()
    a.sync()
    c2 = GroupCoordinator(CoordinatorConfig(), now_ms=h.now, topics=h.topics)
    for rec in h.c.written:
        key, value = F.encode(rec)
        assert F.decode(key, value) == rec
        c2.replay(rec, now_ms=h.now)
    g1, g2 = h.cg(), c2.consumer_groups["g"]
    assert c2.groups.get("g") is None
    for mid, m in g1.members.items():
        m2 = g2.members[mid]
        assert m2.classic == m.classic and (m2.member_epoch, m2.assigned) == (m.member_epoch, m.assigned)
    assert g2.members[a.member_id].classic.protocols == (("range", meta("foo")),)
    # the restarted coordinator serves the classic member, and its session timer uses its own timeout
    h.c = c2
    assert a.heartbeat() == E.NONE
    h.advance(SESSION + 1)
    assert b.member_id not in c2.consumer_groups["g"].members


def test_static_classic_member_replacing_the_last_consumer_member_downgrades():
    h = harness()
    ids, gen = classic_group(h)
    static = Client(h, "s", instance="i1")
    static.beat()
    epoch = h.cg().group_epoch
    r = h.answered(h.join("g", instance="i1", protocols=(("range", meta("foo")),), session=SESSION))
    assert r.error_code == 0 and r.leader == "" and r.member_id not in ("s", "")
    assert h.cg() is None
    g = h.group("g")
    assert set(g.members) == {*ids, r.member_id} and g.static_members == {"i1": r.member_id}
    assert g.generation_id == epoch and g.protocol_type == "consumer"


def test_static_classic_member_joins_and_rejoins_a_consumer_group():
    h = harness()
    Client(h, "new").beat()
    r = h.answered(h.join("g", instance="i1", protocols=(("range", meta("foo")),), session=SESSION))
    assert r.error_code == 0 and h.cg().static_members["i1"] == r.member_id       # no MEMBER_ID_REQUIRED
    again = h.answered(h.join("g", r.member_id, instance="i1", protocols=(("range", meta("foo")),)))
    assert again.error_code == 0 and again.member_id == r.member_id
    fenced = h.answered(h.join("g", "other-id", instance="i1", protocols=(("range", meta("foo")),)))
    assert fenced.error_code == E.FENCED_INSTANCE_ID
    assert h.answered(h.join("g", "x", instance="i9")).error_code == E.UNKNOWN_MEMBER_ID


# ---------------------------------------------------------------------------------- simulation
def test_seeded_migration_simulation():
    """sim_migration.py: classic and consumer-protocol clients on one group id, upgrades and
    downgrades back and forth; invariants hold, the group settles, nothing is left unanswered
    (measured: 1500 seeds x 1000 steps without a failure)."""
    from testsuite.coordinator.consumer.sim_migration import simulate
    total = {"upgrades": 0, "downgrades": 0, "classic_joins_in_consumer_group": 0, "stale_protocol_livelock": 0}
    for seed in range(40):
        for k, v in simulate(seed).items():
            total[k] += v
    assert total["upgrades"] > 10 and total["downgrades"] > 10 and total["classic_joins_in_consumer_group"] > 100


def test_unload_drops_consumer_groups_and_their_member_timers():
    h = harness()
    new, (a, b) = upgraded(h)
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS          # arms a join timer too
    h._collect(h.c.unload(["g"]))
    assert h.cg() is None and h.c.next_deadline() is None
