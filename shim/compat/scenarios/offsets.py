"""Committed offsets (KIP-211/496): commit with metadata and fetch back (client and wire), commits
refused by membership checks, reset with kafka-consumer-groups --reset-offsets, OffsetDelete while
the group subscribes to the topic (GROUP_SUBSCRIBED_TO_TOPIC) and after, and group deletion."""

from __future__ import annotations

from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)
from kcodec.generated.offset_delete import (OffsetDeleteRequest, OffsetDeleteRequestPartition,
                                            OffsetDeleteRequestTopic)
from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kcodec.protocol import ApiKey, error_name

from ..context import Ctx, start_member, wait


def _produce(bootstrap: str, topic: str, per_partition: int, partitions: int) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap})
    for part in range(partitions):
        for i in range(per_partition):
            p.produce(topic, b"v%d" % i, partition=part)
    assert p.flush(30) == 0


def _wire_commit(ctx: Ctx, group: str, topic: str, generation: int, member: str, offsets: dict[int, int]) -> list:
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member, topics=[
        OffsetCommitRequestTopic(name=topic, partitions=[
            OffsetCommitRequestPartition(partition_index=p, committed_offset=o, committed_metadata="wire")
            for p, o in sorted(offsets.items())])])
    resp = ctx.call(group, ApiKey.OFFSET_COMMIT, 8, req)
    return sorted({error_name(p.error_code) for t in resp.topics for p in t.partitions})


def _wire_fetch(ctx: Ctx, group: str, topic: str, partitions: int) -> dict:
    req = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=[
        OffsetFetchRequestTopics(name=topic, partition_indexes=list(range(partitions)))])])
    (g,) = ctx.call(group, ApiKey.OFFSET_FETCH, 8, req).groups
    return {"error": error_name(g.error_code),
            "offsets": {p.partition_index: [p.committed_offset, p.metadata, error_name(p.error_code)]
                        for t in g.topics for p in t.partitions}}


def _wire_offset_delete(ctx: Ctx, group: str, topic: str, partitions: list[int]) -> dict:
    req = OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequestTopic(
        name=topic, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in partitions])])
    resp = ctx.call(group, ApiKey.OFFSET_DELETE, 0, req)
    return {"error": error_name(resp.error_code),
            "partitions": sorted({error_name(p.error_code) for t in resp.topics for p in t.partitions})}


def _client_committed(ctx: Ctx, group: str, topic: str, partitions: int) -> dict:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": ctx.bootstrap, "group.id": group})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        c.close()
    return {tp.partition: tp.offset for tp in got}


def offsets(ctx: Ctx, client: str, protocol: str) -> dict:
    from confluent_kafka import Consumer, TopicPartition
    topic, group = ctx.topic("offsets", 3), ctx.name("g", "offsets")
    _produce(ctx.bootstrap, topic, 10, 3)
    facts: dict = {}
    c = Consumer({"bootstrap.servers": ctx.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:                                                   # a simple (non-member) commit through the client
        c.commit(offsets=[TopicPartition(topic, 0, 5, metadata="m0"), TopicPartition(topic, 1, 7)], asynchronous=False)
    finally:
        c.close()
    facts["client_committed"] = _client_committed(ctx, group, topic, 3)
    facts["fetch"] = _wire_fetch(ctx, group, topic, 3)
    facts["commit_unknown_member_empty_group"] = _wire_commit(ctx, group, topic, 3, "nobody", {2: 1})
    facts["fetch_unknown_group"] = _wire_fetch(ctx, ctx.name("g", "never"), topic, 1)
    ctx.java.bootstrap = ctx.bootstrap
    reset = ctx.java.run("kafka-consumer-groups", ["--group", group, "--topic", f"{topic}:0,1", "--reset-offsets",
                                                   "--to-latest", "--execute"], check=False)
    facts["reset_exit"] = reset.returncode
    facts["after_reset_to_latest"] = _client_committed(ctx, group, topic, 3)
    member = start_member(ctx, "java", topic, group, name=f"{group}-member")
    try:
        wait(lambda: len(member.current) == 3, 60, "the member assigned")
        facts["simple_commit_to_active_group"] = _wire_commit(ctx, group, topic, -1, "", {2: 2})
        facts["commit_stale_generation"] = _wire_commit(ctx, group, topic, 999, "nobody", {2: 2})
        facts["delete_while_subscribed"] = _wire_offset_delete(ctx, group, topic, [0])
        facts["reset_while_active_exit"] = ctx.java.run(
            "kafka-consumer-groups", ["--group", group, "--topic", topic, "--reset-offsets", "--to-earliest",
                                      "--execute"], check=False).returncode
    finally:
        member.close()
    facts["delete_after_leave"] = _wire_offset_delete(ctx, group, topic, [0])
    facts["after_delete"] = _client_committed(ctx, group, topic, 3)
    deleted = ctx.java.run("kafka-consumer-groups", ["--group", group, "--delete-offsets", "--topic", topic],
                           check=False)
    facts["cli_delete_offsets_exit"] = deleted.returncode
    facts["delete_offsets_unknown_group"] = _wire_offset_delete(ctx, ctx.name("g", "never"), topic, [0])
    return facts
