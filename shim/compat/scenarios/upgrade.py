"""Online upgrade from the classic protocol to the consumer protocol (KIP-848 migration, policy
`bidirectional`, Kafka's default): Java members restarted one by one with group.protocol=consumer;
the mixed group keeps every partition assigned and becomes a consumer group."""

from __future__ import annotations

from ..context import Ctx, start_member, wait
from ..javahelpers import admin


def classic_to_consumer(ctx: Ctx, client: str, protocol: str) -> dict:
    topic, group = ctx.topic("upgrade", 4), ctx.name("g", "upgrade")
    members = [start_member(ctx, client, topic, group, name=f"{group}-a")]
    facts = {}
    try:
        wait(lambda: len(members[0].current) == 4, 60, "a owns all")
        members.append(start_member(ctx, client, topic, group, name=f"{group}-b"))
        wait(lambda: [len(m.current) for m in members] == [2, 2], 60, "a and b share")
        facts["classic"] = admin(ctx.java.kafka, "describe", ctx.bootstrap, group)
        for i, label in ((1, "mixed"), (0, "consumer")):          # b first, then a
            members[i].close()
            members[i] = start_member(ctx, client, topic, group, protocol="consumer", name=f"{group}-{i}-new")
            wait(lambda: [len(m.current) for m in members] == [2, 2], 90, f"a {label} group sharing 4 partitions")
            facts[label] = admin(ctx.java.kafka, "describe", ctx.bootstrap, group)
        return facts
    finally:
        for m in members:
            m.close()
