"""Partitions pending revocation keep the epoch they were assigned at (Kafka 4.3.1's
ConsumerGroupMember.partitionsPendingRevocation, CurrentAssignmentBuilder.computeNextAssignment), and
an OffsetCommit with an older member epoch is checked against it (ConsumerGroup
.createAssignmentEpochValidator, KIP-1251): older than the partition's assignment epoch is
STALE_MEMBER_EPOCH, as for assigned partitions. The epochs survive the state topic (key 8 value v2)."""

from __future__ import annotations

import uuid

import pytest

from shim.coordinator import errors as E
from shim.coordinator.state_records import ConsumerCurrentRecord
from shim.state import format as fmt

from .harness import Client, ConsumerHarness
from .test_state_and_sim import restart


@pytest.fixture
def h():
    return ConsumerHarness({"foo": 4})


def _a_with_pending(h):
    """a alone (foo 0-3 at epoch 2); b joins (a keeps 0-1); b leaves (a takes 2-3 back at epoch 4);
    c joins and a heartbeats once: a stays at epoch 4, UNREVOKED, with 2-3 pending revocation."""
    a, b = Client(h, "a"), Client(h, "b")
    a.beat()
    h.advance(1000)
    for _ in range(3):
        b.beat()
        a.beat()
        h.advance(1000)
    h.cgh(member_id="b", epoch=-1, topics=None, owned=None)          # b leaves
    h.advance(1000)
    for _ in range(2):
        a.beat()
        h.advance(1000)
    Client(h, "c").beat()
    h.advance(1000)
    a.beat()
    return h.cg().members["a"]


def test_pending_partitions_keep_their_assignment_epochs(h):
    m = _a_with_pending(h)
    tid = h.tid("foo")
    assert (m.member_epoch, m.state) == (4, 1)
    assert m.assigned == {tid: {0: 2, 1: 2}} and m.pending_revocation == {tid: {2: 4, 3: 4}}


def test_commit_with_an_epoch_older_than_a_pending_partitions_assignment_is_stale(h):
    _a_with_pending(h)
    assert h.commit("g", {("foo", 2): 1}, generation=3, member_id="a") == {("foo", 2): E.STALE_MEMBER_EPOCH}
    assert h.commit("g", {("foo", 0): 1, ("foo", 3): 1}, generation=3, member_id="a") == {
        ("foo", 0): E.STALE_MEMBER_EPOCH, ("foo", 3): E.STALE_MEMBER_EPOCH}
    assert h.commit("g", {("foo", 0): 1}, generation=3, member_id="a") == {("foo", 0): E.NONE}
    assert h.commit("g", {("foo", 2): 1}, generation=4, member_id="a") == {("foo", 2): E.NONE}


def test_pending_epochs_survive_a_restart(h):
    _a_with_pending(h)
    c2 = restart(h)
    assert c2.consumer_groups["g"].members["a"].pending_revocation == {h.tid("foo"): {2: 4, 3: 4}}


def test_state_topic_keeps_pending_epochs_and_reads_v1_records():
    t = uuid.UUID(int=7)
    rec = ConsumerCurrentRecord("g", "m", 5, 4, 1, ((t, ((0, 2), (1, 5))),), ((t, ((2, 3), (3, 1))),))
    key, value = fmt.encode(rec)
    assert value[:2] == b"\x00\x02" and fmt.decode(key, value) == rec
    # a v1 value (pending partitions without epochs): they get the member epoch
    v1 = bytearray(value[:2 + 4 + 4 + 2])
    v1[:2] = b"\x00\x01"
    body = value[12:]
    assigned_len = 4 + 16 + 4 + 2 * 8
    v1 += body[:assigned_len] + (1).to_bytes(4, "big") + t.bytes + (2).to_bytes(4, "big") + \
        (2).to_bytes(4, "big") + (3).to_bytes(4, "big")
    assert fmt.decode(key, bytes(v1)).pending_revocation == ((t, ((2, 5), (3, 5))),)
