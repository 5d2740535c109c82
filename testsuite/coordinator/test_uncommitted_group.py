"""A simple OffsetCommit on a missing group whose every partition is refused (metadata too large)
writes no record, yet the broker creates the group in its latest (uncommitted) state: later writes
(OffsetDelete, DeleteGroups) find it, reads (DescribeGroups, ListGroups) do not, until some record
reaches the group's __consumer_offsets partition (seed 6323 of the wire tester: OffsetDelete answered
NONE by the broker 4.3.1, GROUP_ID_NOT_FOUND by kshim)."""

from __future__ import annotations

from shim.coordinator import errors as E
from shim.coordinator.uncommitted import offsets_partition

from .harness import Harness

BIG = "x" * 4097


def refused_commit(h: Harness, gid: str = "g") -> None:
    assert h.commit(gid, {("t1", 0): 5}, metadata=BIG) == {("t1", 0): E.OFFSET_METADATA_TOO_LARGE}


def described_state(h: Harness, gid: str) -> tuple[int, str]:
    (d,) = h.describe(gid).groups
    return d.error_code, d.group_state


def listed(h: Harness) -> set[str]:
    return {g.group_id for g in h.list_groups().groups}


def test_offset_delete_finds_the_group_that_reads_do_not_see():
    h = Harness({"t1": 3})
    refused_commit(h)
    assert described_state(h, "g") == (E.GROUP_ID_NOT_FOUND, "Dead")
    assert "g" not in listed(h)
    assert h.offset_delete("g", {"t1": [0, 1]}) == (E.NONE, {("t1", 0): E.NONE, ("t1", 1): E.NONE})
    assert described_state(h, "g") == (E.GROUP_ID_NOT_FOUND, "Dead")     # OffsetDelete wrote nothing


def test_delete_groups_deletes_the_uncommitted_group():
    h = Harness({"t1": 3})
    refused_commit(h)
    (r,) = h.delete("g").results
    assert r.error_code == E.NONE
    (r,) = h.delete("g").results
    assert r.error_code == E.GROUP_ID_NOT_FOUND


def test_a_record_on_the_same_offsets_partition_makes_it_visible():
    # GroupCoordinatorService.partitionFor: Utils.abs(hashCode) % partitions ("polygenelubricants"
    # hashes to Integer.MIN_VALUE, whose Utils.abs is 0)
    assert offsets_partition("polygenelubricants", 50) == 0 and offsets_partition("g", 50) == ord("g") % 50
    h = Harness({"t1": 3, "__consumer_offsets": 50})
    same = next(f"o{i}" for i in range(1000) if offsets_partition(f"o{i}", 50) == offsets_partition("g", 50))
    other = next(f"o{i}" for i in range(1000) if offsets_partition(f"o{i}", 50) != offsets_partition("g", 50))
    refused_commit(h)
    assert h.commit(other, {("t1", 0): 1}) == {("t1", 0): E.NONE}
    assert described_state(h, "g") == (E.GROUP_ID_NOT_FOUND, "Dead")
    assert h.commit(same, {("t1", 0): 1}) == {("t1", 0): E.NONE}
    assert described_state(h, "g") == (E.NONE, "Empty")
    assert "g" in listed(h)


def test_without_the_partition_count_only_its_own_record_makes_it_visible():
    h = Harness({"t1": 3})
    refused_commit(h)
    assert h.commit("h", {("t1", 0): 1}) == {("t1", 0): E.NONE}
    assert described_state(h, "g") == (E.GROUP_ID_NOT_FOUND, "Dead")
    assert h.offset_delete("g", {"t1": [0]}) == (E.NONE, {("t1", 0): E.NONE})
    assert h.commit("g", {("t1", 1): 1}) == {("t1", 1): E.NONE}
    assert described_state(h, "g") == (E.NONE, "Empty")

