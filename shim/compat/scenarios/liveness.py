"""Liveness: a member that crashes (no LeaveGroup) is removed when its session times out; a member
that stops polling for longer than max.poll.interval.ms leaves the group and rejoins when it polls
again (KIP-62)."""

from __future__ import annotations

import time

from ..context import Ctx, start_member, wait

CRASH_SESSION_MS = 6000


def session_timeout(ctx: Ctx, client: str, protocol: str) -> dict:
    """Two dynamic members share 4 partitions; one is SIGKILLed; the other gets all of them, not
    before the session timeout (classic: the member's; consumer protocol: the broker's)."""
    topic, group = ctx.topic("session-timeout", 4), ctx.name("g", "session-timeout")
    a = start_member(ctx, client, topic, group, protocol=protocol, session_ms=CRASH_SESSION_MS, name=f"{group}-a")
    wait(lambda: len(a.current) == 4, 60, "a owns all")
    b = start_member(ctx, client, topic, group, protocol=protocol, session_ms=CRASH_SESSION_MS, name=f"{group}-b")
    try:
        wait(lambda: len(a.current) == 2 and len(b.current) == 2, 60, "a and b share")
        shared = sorted([len(a.current), len(b.current)])
        t0 = time.monotonic()
        b.kill()
        still_shared_at_half = True
        deadline = t0 + CRASH_SESSION_MS / 2000
        while time.monotonic() < deadline:
            still_shared_at_half &= len(a.current) == 2
            time.sleep(0.1)
        wait(lambda: len(a.current) == 4, 90, "a owns all after the session timeout")
        return {"shared": shared, "kept_until_half_session": still_shared_at_half, "after_expiry": len(a.current)}
    finally:
        a.close()
        b.close()


def max_poll_interval(ctx: Ctx, client: str, protocol: str) -> dict:
    """librdkafka: a consumer that does not poll for longer than max.poll.interval.ms leaves; the
    steady member takes all partitions; the stalled one sees _MAX_POLL_EXCEEDED and rejoins."""
    from confluent_kafka import Consumer, KafkaError
    topic, group = ctx.topic("max-poll", 2), ctx.name("g", "max-poll")
    steady = start_member(ctx, "librdkafka", topic, group, protocol=protocol, session_ms=6000)
    stalled = None
    try:
        wait(lambda: len(steady.current) == 2, 60, "steady owns all")
        conf = {"bootstrap.servers": ctx.bootstrap, "group.id": group, "max.poll.interval.ms": 7000}
        conf.update({"group.protocol": "consumer"} if protocol == "consumer" else
                    {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        stalled = Consumer(conf)
        stalled.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(steady.current) != 1 and time.monotonic() < deadline:
            stalled.poll(0.2)
        shared = len(steady.current)
        time.sleep(10)                                    # no poll: exceeds max.poll.interval.ms
        wait(lambda: len(steady.current) == 2, 30, "steady owns all after the stall")
        taken_back = len(steady.current)
        errors = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(steady.current) != 1:
            msg = stalled.poll(0.2)
            if msg is not None and msg.error():
                errors.append(msg.error().code() == KafkaError._MAX_POLL_EXCEEDED)
        return {"shared": shared, "steady_after_stall": taken_back, "max_poll_error": any(errors),
                "after_rejoin": len(steady.current)}
    finally:
        if stalled is not None:
            stalled.close()
        steady.close()
