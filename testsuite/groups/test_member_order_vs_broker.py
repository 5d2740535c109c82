"""A classic group's members iterate in the order of the broker's HashMap (ClassicGroup.members), on
the broker and on kshim: the leader's JoinGroup member list, DescribeGroups, and the leader chosen when
the leader leaves. Member ids are random on each side, so each side is checked against the order its
own ids give (testsuite/coordinator/test_classic_member_order.py has the sans-IO cases)."""

from __future__ import annotations

import asyncio
import struct

from kcodec import api
from kcodec.generated.describe_groups import DescribeGroupsRequest
from kcodec.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from kcodec.generated.leave_group import LeaveGroupRequest, MemberIdentity

from testsuite.coordinator.harness import java_member_order

from .test_offsets_wire import find_coordinator

N = 14          # more than 12: the broker's map has grown to 32 buckets


class _Conn:
    def __init__(self, bootstrap: str):
        self.host, port = bootstrap.rsplit(":", 1)
        self.port, self.corr = int(port), 0

    async def __aenter__(self):
        self.r, self.w = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *exc):
        self.w.close()

    async def call(self, key: int, v: int, req):
        self.corr += 1
        hdr = api.RequestHeader(request_api_key=key, request_api_version=v, correlation_id=self.corr,
                                client_id="order")
        payload = hdr.encode(api.request_header_version(key, v)) + req.encode(v)
        self.w.write(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", await self.r.readexactly(4))[0]
        frame = await self.r.readexactly(size)
        _, pos = api.ResponseHeader.decode_from(frame, 0, api.response_header_version(key, v))
        return api.RESPONSES[key].decode(memoryview(frame)[pos:], v)


def _join(group: str, member_id: str, instance: str) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=20000,
                            member_id=member_id, group_instance_id=instance, protocol_type="consumer",
                            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"m")], reason=None)


async def _scenario(bootstrap: str, group: str) -> None:
    conns = [_Conn(bootstrap) for _ in range(N)]
    for c in conns:
        await c.__aenter__()
    try:
        first = await conns[0].call(11, 5, _join(group, "", "i0"))
        assert first.error_code == 0
        waiting = []
        for i in range(1, N):       # one after the other: ids sharing a bucket iterate in join order
            waiting.append(asyncio.create_task(conns[i].call(11, 5, _join(group, "", f"i{i}"))))
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        lead = await conns[0].call(11, 5, _join(group, first.member_id, "i0"))
        others = await asyncio.gather(*waiting)
        ids = [lead.member_id] + [o.member_id for o in others]
        assert lead.leader == lead.member_id
        listed = [m.member_id for m in lead.members]
        assert listed == java_member_order(ids, table=32)
        assert listed != ids                              # the check means something: not join order
        described = (await conns[0].call(15, 5, DescribeGroupsRequest(groups=[group]))).groups[0]
        assert [m.member_id for m in described.members] == listed
        # the leader leaves: ClassicGroup.remove makes the HashMap's first member the leader, and as it
        # rejoins it stays the leader of the next generation
        left = await conns[0].call(13, 3, LeaveGroupRequest(group_id=group, members=[
            MemberIdentity(member_id=lead.member_id, group_instance_id="i0")]))
        assert left.members[0].error_code == 0
        rest = ids[1:]
        again = await asyncio.gather(*(conns[i].call(11, 5, _join(group, rest[i - 1], f"i{i}"))
                                       for i in range(1, N)))
        assert {a.leader for a in again} == {java_member_order(rest, table=32)[0]}
    finally:
        for c in conns:
            await c.__aexit__()


def test_member_order_as_on_the_broker(kafka, kshim, names):
    for side, bootstrap in (("broker", kafka.bootstrap), ("kshim", kshim.bootstrap)):
        group = names.group(side)
        find_coordinator(bootstrap, group)
        asyncio.run(_scenario(bootstrap, group))
