"""CoordinatorResult: each input returns the responses it made ready and the records it wrote; it is
the coordinator's only output (Kafka's CoordinatorResult)."""

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
    second = _commit(c, "t2", 10)
    assert [type(r) for r in second.records] == [OffsetRecord]    # only this call's record
    assert c.tick(11) == CoordinatorResult([], [])                 # nothing is carried over


def test_the_result_is_not_a_list():
    out = _commit(_coordinator(), "t1", 0)
    assert isinstance(out.responses[0], Respond)
    for as_list in (lambda: len(out), lambda: out[0], lambda: list(out)):
        try:
            as_list()
        except TypeError:
            continue
        raise AssertionError("a CoordinatorResult read as a list")


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
    assert [r.token for r in completed.responses] == ["j"] and completed.records == []
    expired = c.tick(20_000)          # no SyncGroup within the rebalance timeout: the member goes, group Empty
    assert expired.responses == []
    assert [(type(r), r.generation_id, r.members) for r in expired.records] == [(GroupMetadataRecord, 2, ())]


def test_every_answered_api_has_an_entry_point():
    assert set(HANDLERS) == set(VERSIONS)
