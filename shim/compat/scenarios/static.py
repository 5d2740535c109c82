"""Static membership (KIP-345, KIP-814): a member restarted with its group.instance.id within the
session timeout gets its partitions back and nobody else rebalances; the leader's rejoin skips the
assignment; a second process with the same instance id fences the first; a rolling bounce of every
member moves nothing."""

from __future__ import annotations

import time

from ..context import Ctx, start_member, wait

PARTITIONS = 6


def _balanced(members, partitions: int) -> bool:
    owned = [m.current for m in members]
    return all(len(o) == partitions // len(members) for o in owned) and len(set().union(*owned)) == partitions


def _static_group(ctx: Ctx, client: str, protocol: str, scenario: str, n: int):
    topic, group = ctx.topic(scenario, PARTITIONS), ctx.name("g", scenario)
    members = []
    for i in range(n):
        members.append(start_member(ctx, client, topic, group, instance_id=f"{group}-{i}", protocol=protocol))
        wait(lambda: members[-1].current, 90, f"member {i} assigned")
    wait(lambda: _balanced(members, PARTITIONS), 90, "a balanced static group")
    time.sleep(2)
    return topic, group, members


def _bounce(ctx, client, protocol, topic, group, members, i):
    """Close member i and start it again with the same instance id; returns the new member."""
    members[i].close()
    again = start_member(ctx, client, topic, group, instance_id=f"{group}-{i}", protocol=protocol,
                         name=f"{group}-{i}-again-{time.monotonic_ns()}")
    wait(lambda: again.current, 90, "the restarted member assigned")
    return again


def static_bounce(ctx: Ctx, client: str, protocol: str, bouncee: int = 1, scenario: str = "static-bounce") -> dict:
    """3 static members on 6 partitions; member `bouncee` stops and restarts within the session timeout."""
    topic, group, members = _static_group(ctx, client, protocol, scenario, 3)
    try:
        before = [m.current for m in members]
        events_before = [m.rebalances() for m in members]
        members[bouncee] = _bounce(ctx, client, protocol, topic, group, members, bouncee)
        time.sleep(4)  # longer than a heartbeat interval: a rebalance would have reached the others
        others = [i for i in range(3) if i != bouncee]
        return {
            "others_saw_rebalance": any(members[i].rebalances() != events_before[i] for i in others),
            "others_kept_partitions": all(members[i].current == before[i] for i in others),
            "restarted_got_old_partitions": members[bouncee].current == before[bouncee],
            "restarted_assign_events": members[bouncee].assign_events,
            "client_errors": sorted({e.split("(")[0] for m in members for e in m.errors()}),
        }
    finally:
        for m in members:
            m.close()


def static_leader_bounce(ctx: Ctx, client: str, protocol: str) -> dict:
    """The same with the group leader (the first member): Kafka answers its rejoin with the old
    assignment and SkipAssignment=true (JoinGroup v9+), so no rebalance follows."""
    return static_bounce(ctx, client, protocol, bouncee=0, scenario="static-leader-bounce")


def duplicate_instance_fencing(ctx: Ctx, client: str, protocol: str) -> dict:
    """A second process with an instance id in use takes over; the first is fenced (FENCED_INSTANCE_ID)."""
    topic, group = ctx.topic("fencing", 2), ctx.name("g", "fencing")
    first = start_member(ctx, client, topic, group, instance_id=f"{group}-dup", protocol=protocol, name=f"{group}-first")
    wait(lambda: first.current, 60, "the first member assigned")
    second = start_member(ctx, client, topic, group, instance_id=f"{group}-dup", protocol=protocol,
                          name=f"{group}-second")
    try:
        wait(lambda: second.current, 60, "the second member assigned")
        wait(lambda: not first.running() or not second.running(), 60, "one of the two to stop")
        time.sleep(3)
        text = first.impl.stderr_tail(200) + second.impl.stderr_tail(200)
        return {"first_stopped": not first.running(), "second_running": second.running(),
                "second_owns_all": len(second.current) == 2,
                "fenced_reported": "FencedInstanceId" in text or "fenced" in text.lower()}
    finally:
        first.close()
        second.close()


def rolling_bounce(ctx: Ctx, client: str, protocol: str, n: int = 3) -> dict:
    """Every member of a static group restarted in turn (a rolling deploy): nothing moves."""
    topic, group, members = _static_group(ctx, client, protocol, "rolling-bounce", n)
    try:
        start = [m.current for m in members]
        for i in range(n):
            members[i] = _bounce(ctx, client, protocol, topic, group, members, i)
        time.sleep(4)
        return {"members": n, "assignment_unchanged": [m.current for m in members] == start,
                "assign_events_per_restarted_member": sorted({m.assign_events for m in members}),
                "revocations": sum(m.revocations for m in members)}
    finally:
        for m in members:
            m.close()
