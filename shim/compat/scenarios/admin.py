"""Batch leave (KIP-345): Admin.removeMembersFromConsumerGroup removes static members by instance id
in one LeaveGroup (v3+); the remaining member takes their partitions; an unknown instance id is
answered per member with UNKNOWN_MEMBER_ID."""

from __future__ import annotations

import time

from ..context import Ctx, start_member, wait
from ..javahelpers import admin


def batch_leave(ctx: Ctx, client: str, protocol: str) -> dict:
    topic, group = ctx.topic("batch-leave", 6), ctx.name("g", "batch-leave")
    members = []
    try:
        for i in range(3):
            members.append(start_member(ctx, client, topic, group, instance_id=f"{group}-{i}", protocol=protocol))
            wait(lambda: members[-1].current, 90, f"member {i} assigned")
        wait(lambda: all(len(m.current) == 2 for m in members), 90, "a balanced group")
        # the clients must not rejoin by themselves: stop the two we remove first (static members
        # send no LeaveGroup on close), then remove them and one id that was never a member
        members[1].close()
        members[2].close()
        result = admin(ctx.java.kafka, "remove-members", ctx.bootstrap, group,
                       f"{group}-1,{group}-2,{group}-ghost")
        wait(lambda: len(members[0].current) == 6, 60, "the remaining member owns all")
        time.sleep(1)
        described = admin(ctx.java.kafka, "describe", ctx.bootstrap, group)
        return {"member_errors": {k.rsplit("-", 1)[1]: v for k, v in result["members"].items()},
                "all_error": result["all"], "remaining_owns": len(members[0].current),
                "members_after": described.get("members"), "state_after": described.get("state")}
    finally:
        for m in members:
            m.close()
