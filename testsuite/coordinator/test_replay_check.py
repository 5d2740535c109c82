"""The replay check of the fuzzers and simulations (replay_check.py): it agrees on states the two
routes really share, it leaves out what is not durable by design, and it catches a live change that
no record carries and a record that replay loses."""

from __future__ import annotations

import dataclasses

import pytest

from testsuite.coordinator import sim_consumer
from testsuite.coordinator.harness import DELAY, Harness, subscription
from testsuite.coordinator.replay_check import (ReplayMismatch, assert_replay_agrees, check_replay,
                                                durable_snapshot, replayed)
from testsuite.coordinator.sim import Mix, Sim


def _stable_classic() -> Harness:
    h = Harness({"foo": 4})
    a, ta = h.join_dynamic("g")
    tb = h.join("g", instance="ib")                   # static: no MEMBER_ID_REQUIRED round
    h.advance(2 * DELAY)                              # the initial rebalance delay
    gen, b = h.answer(ta).generation_id, h.answer(tb).member_id
    h.sync("g", a, gen, assignments={a: b"A", b: b"B"})
    h.sync("g", b, gen, instance="ib")
    h.commit("g", {("foo", 0): 10, ("foo", 1): 11}, generation=gen, member_id=a)
    return h


def test_a_stable_group_is_compared_in_full_and_agrees():
    h = _stable_classic()
    snap = durable_snapshot(h.c)
    g = snap["classic"]["g"]
    assert g["state"] == "Stable" and len(g["members"]) == 2 and set(g["static_members"]) == {"ib"}
    assert {m["assignment"] for m in g["members"].values()} == {b"A", b"B"}
    assert len(snap["offsets"]["g"]) == 2
    assert check_replay(h.c, h.c.written) == []


def test_a_change_no_record_carries_is_caught():
    h = _stable_classic()
    mid = next(iter(h.group("g").members))
    h.group("g").members[mid].assignment = b"changed behind the records"
    diffs = check_replay(h.c, h.c.written)
    assert diffs and diffs[0].startswith(f"/classic/g/members/{mid}/assignment: live ")
    with pytest.raises(ReplayMismatch, match="assignment"):
        assert_replay_agrees(h.c, h.c.written, "here")


def test_a_lost_record_is_caught():
    h = _stable_classic()
    offsets = [r for r in h.c.written if type(r).__name__ == "OffsetRecord"]
    log = [r for r in h.c.written if r is not offsets[-1]]
    assert check_replay(h.c, log) == [f"/offsets/g/('foo', 1): only live: {offsets[-1]!r}"]
    changed = [dataclasses.replace(r, offset=99) if r is offsets[0] else r for r in h.c.written]
    assert "/offsets/g/('foo', 0)" in check_replay(h.c, changed)[0]


def test_what_is_not_durable_is_left_out():
    """Parked joins, pending members and timers differ after a replay; a rebalance under way is
    compared only as far as the records carry it."""
    h = _stable_classic()
    newcomer = h.answered(h.join("g", protocols=[("range", subscription("foo"))]))   # pending member
    assert h.group("g").pending_members == {newcomer.member_id}
    assert check_replay(h.c, h.c.written) == []
    h.join("g", newcomer.member_id)                   # parked: the group prepares a rebalance
    assert h.group("g").state == "PreparingRebalance"
    snap = durable_snapshot(h.c)["classic"]["g"]
    assert set(snap) == {"compared", "generation"}
    assert check_replay(h.c, h.c.written) == []
    fresh = replayed(h.c, h.c.written)
    assert fresh.groups["g"].state == "Stable" and not fresh.groups["g"].pending_members


def test_consumer_group_fields_are_compared():
    sim = sim_consumer.ConsumerSim(6, seed=2)
    sim.run_to_convergence()                          # checks at every step on the way
    g = sim.c.consumer_groups[sim_consumer.GID]
    snap = durable_snapshot(sim.c)["consumer"][sim_consumer.GID]
    assert len(snap["members"]) == 6 and snap["owners"]
    m = next(iter(g.members.values()))
    m.previous_member_epoch += 5
    assert check_replay(sim.c, sim.c.written) == [
        f"/consumer/{sim_consumer.GID}/members/{m.member_id}/previous_member_epoch: "
        f"live {m.previous_member_epoch} != replayed {m.previous_member_epoch - 5}"]


def test_the_classic_simulation_checks_replay(monkeypatch):
    """Sim runs the check every `replay_every` steps and at the end; a replay that loses the
    assignments is reported with the seed."""
    from shim.coordinator import GroupCoordinator
    real = GroupCoordinator.replay

    def lossy(self, record, now_ms=None):
        if type(record).__name__ == "GroupMetadataRecord" and record.members:
            record = dataclasses.replace(record, members=tuple(
                dataclasses.replace(m, assignment=b"") for m in record.members))
        real(self, record, now_ms)
    monkeypatch.setattr(GroupCoordinator, "replay", lossy)
    with pytest.raises(ReplayMismatch, match=r"seed 1 .*\n  /classic/group-0/members/.*/assignment"):
        Sim(Mix(members=20), 1, replay_every=50).run()


def test_the_fuzz_target_checks_replay(monkeypatch):
    from testsuite.hardening import coordinator_fuzz as cf
    monkeypatch.setattr(cf, "check_replay", lambda c, log: ["/classic/g0/generation: live 1 != replayed 0"])
    with pytest.raises(cf.Finding, match="replaying the 0 records written differs"):
        cf.Program(b"\x01" * 40).run()
