"""Eager versus cooperative rebalancing (KIP-429): when a second member joins, an eager member
(range) gives up everything and gets half back; a cooperative-sticky member gives up only the half
that moves. Observed per protocol: what the first member revoked, the final split, and after a clean
leave (LeaveGroup) who owns what."""

from __future__ import annotations

from ..context import COOPERATIVE, Ctx, start_member, wait


def _revoked(member) -> int:
    if member.client == "java":
        return sum(len(e.get("partitions", [])) for e in member.impl.named("partitions_revoked"))
    return member.revocations


def _join_leave(ctx: Ctx, client: str, assignor: str | None, tag: str) -> dict:
    topic, group = ctx.topic(tag, 4), ctx.name("g", tag)
    a = start_member(ctx, client, topic, group, assignor=assignor, name=f"{group}-a")
    b = None
    try:
        wait(lambda: len(a.current) == 4, 60, "a owns all")
        before = _revoked(a)
        b = start_member(ctx, client, topic, group, assignor=assignor, name=f"{group}-b")
        wait(lambda: len(a.current) == 2 and len(b.current) == 2, 60, "a and b share")
        revoked_on_join = _revoked(a) - before
        kept = len(a.current)
        b.close()                                          # clean close: LeaveGroup
        wait(lambda: len(a.current) == 4, 60, "a owns all after the leave")
        return {"a_revoked_on_join": revoked_on_join, "a_kept": kept, "a_after_leave": len(a.current)}
    finally:
        a.close()
        if b is not None:
            b.close()


def eager_vs_cooperative(ctx: Ctx, client: str, protocol: str) -> dict:
    return {"eager": _join_leave(ctx, client, None, "eager"),
            "cooperative": _join_leave(ctx, client, COOPERATIVE, "cooperative")}
