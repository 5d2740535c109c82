"""The group runtime's append-before-answer rule (shim/groupservice/runtime.py), no broker: an answer
leaves only once its step's state append succeeded, steps leave in order, a failed append answers
with the mapped coordinator error."""

from __future__ import annotations

import asyncio

from kcodec import api
from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic, OffsetCommitResponse)
from shim.coordinator import CoordinatorConfig
from shim.groupservice.runtime import GroupRuntime
from shim.proxy.slot import Slot

COMMIT, V = 8, 8
NOT_ENOUGH_REPLICAS, COORDINATOR_NOT_AVAILABLE = 19, 15


class _State:
    """Stands in for StateLog: each append is a future the test completes."""

    def __init__(self) -> None:
        self.appends: list[asyncio.Future] = []

    def append(self, records) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        self.appends.append(fut)
        return fut


class _Session:
    client_id, peer_host = "t", "/127.0.0.1"

    def __init__(self) -> None:
        self.answers: list[tuple[int, list[int]]] = []

    def complete(self, slot: Slot, data: bytes) -> None:
        hdr, pos = api.ResponseHeader.decode_from(data, 0, api.response_header_version(COMMIT, V))
        body = OffsetCommitResponse.decode(data[pos:], V)
        self.answers.append((hdr.correlation_id, [p.error_code for t in body.topics for p in t.partitions]))

    def close(self) -> None:
        raise AssertionError("closed")


def _commit(runtime: GroupRuntime, session: _Session, corr: int, group: str) -> None:
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequestTopic(name="t", partitions=[OffsetCommitRequestPartition(partition_index=0,
                                                                                    committed_offset=corr)])])
    runtime.handle(session, Slot(COMMIT, V, corr, False), req)


def test_answers_wait_for_their_append_and_leave_in_step_order():
    async def run():
        runtime = GroupRuntime(CoordinatorConfig(), lambda ev: None)
        runtime.topics["t"] = 1
        runtime.state = state = _State()
        session = _Session()
        _commit(runtime, session, 1, "a")
        _commit(runtime, session, 2, "b")
        assert len(state.appends) == 2 and session.answers == []       # nothing before its append
        state.appends[1].set_result(0)
        await asyncio.sleep(0)
        assert session.answers == []                                   # the second waits for the first
        state.appends[0].set_result(NOT_ENOUGH_REPLICAS)
        await asyncio.sleep(0)
        # the failed append answers with the mapped error (error_answers.py coordinator_error), then step 2
        assert session.answers == [(1, [COORDINATOR_NOT_AVAILABLE]), (2, [0])]
    asyncio.run(run())


def test_without_a_state_topic_answers_leave_at_once():
    async def run():
        runtime = GroupRuntime(CoordinatorConfig(), lambda ev: None)
        runtime.topics["t"] = 1
        session = _Session()
        _commit(runtime, session, 7, "a")
        assert session.answers == [(7, [0])]
    asyncio.run(run())
