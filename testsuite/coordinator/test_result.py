"""CoordinatorResult: each input returns the responses it made ready and the records it wrote, and
still reads as the list of responses callers had before."""

from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)

from shim.coordinator import CoordinatorConfig, CoordinatorResult, GroupCoordinator, Respond
from shim.coordinator.api_keys import JOIN_GROUP, OFFSET_COMMIT
from shim.coordinator.dispatch import HANDLERS, VERSIONS
from shim.coordinator.state_records import GroupMetadataRecord, OffsetRecord


def _coordinator() -> GroupCoordinator:
    return GroupCoordinator(CoordinatorConfig(initial_rebalance_delay_ms=100), topics={"t": 1},
                            new_uuid=lambda: "u1")


def _commit(c: GroupCoordinator, token, now_ms: int) -> CoordinatorResult:
    req = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequestPartition(partition_index=0, committed_offset=5, committed_metadata="")])])
    return c.handle(OFFSET_COMMIT, 8, req, token, now_ms=now_ms)


def test_a_call_returns_its_responses_and_the_records_it_wrote():
    c = _coordinator()
    first = _commit(c, "t1", 0)
    assert [r.token for r in first.responses] == ["t1"]
    assert [type(r).__name__ for r in first.records] == ["GroupMetadataRecord", "OffsetRecord"]
    assert first.records == c.records                      # nothing else was written
    second = _commit(c, "t2", 10)
    assert [type(r) for r in second.records] == [OffsetRecord]    # only this call's record
    assert c.records == first.records + second.records


def test_the_result_reads_as_the_list_of_responses():
    c = _coordinator()
    out = _commit(c, "t1", 0)
    assert len(out) == 1 and out[0].token == "t1" and [r.token for r in out] == ["t1"]
    assert out == out.responses and bool(out)
    assert c.tick(5) == [] and not c.tick(6)
    assert isinstance(out[0], Respond)


def test_a_timer_answer_comes_with_the_tick_that_fired_it():
    c = _coordinator()
    join = JoinGroupRequest(group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=1_000, member_id="",
                            protocol_type="consumer",
                            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"m")])
    joined = c.handle(JOIN_GROUP, 3, join, "j", now_ms=0)      # v3: no MEMBER_ID_REQUIRED; parked
    assert joined.responses == []
    assert [(type(r), r.generation_id) for r in joined.records] == [(GroupMetadataRecord, 0)]   # the new group
    assert c.next_deadline() == 100                             # the initial rebalance delay
    completed = c.tick(100)
    assert [r.token for r in completed] == ["j"] and completed.records == []
    expired = c.tick(20_000)          # no SyncGroup within the rebalance timeout: the member goes, group Empty
    assert expired.responses == []
    assert [(type(r), r.generation_id, r.members) for r in expired.records] == [(GroupMetadataRecord, 2, ())]


def test_every_answered_api_has_an_entry_point():
    assert set(HANDLERS) == set(VERSIONS)
