"""Transactional offsets (KIP-98/447): sendOffsetsToTransaction from a consume-transform-produce
loop (librdkafka). An aborted transaction leaves the committed offsets as they were; a committed one
applies them; a read_committed reader downstream sees each output once."""

from __future__ import annotations

import time

from ..context import Ctx
from .offsets import _client_committed, _produce

INPUTS = 20


def _poll(consumer, want: int, timeout: float = 60.0) -> list:
    out: list = []
    deadline = time.monotonic() + timeout
    while len(out) < want and time.monotonic() < deadline:
        out += [m for m in consumer.consume(num_messages=want - len(out), timeout=0.5) if not m.error()]
    return out


def _transaction(producer, consumer, out_topic: str, msgs: list, commit: bool) -> None:
    producer.begin_transaction()
    for m in msgs:
        producer.produce(out_topic, b"out:" + m.value())
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata(), 60)
    producer.commit_transaction(60) if commit else producer.abort_transaction(60)


def txn_offsets(ctx: Ctx, client: str, protocol: str) -> dict:
    from confluent_kafka import Consumer, Producer
    src, dst, group = ctx.topic("txn-src", 2), ctx.topic("txn-dst", 2), ctx.name("g", "txn")
    _produce(ctx.bootstrap, src, INPUTS // 2, 2)
    conf = {"bootstrap.servers": ctx.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "isolation.level": "read_committed"}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    consumer = Consumer(conf)
    producer = Producer({"bootstrap.servers": ctx.bootstrap, "transactional.id": ctx.name("tx", "txn")})
    facts = {}
    try:
        producer.init_transactions(60)
        consumer.subscribe([src])
        first = _poll(consumer, INPUTS)
        facts["consumed"] = len(first)
        _transaction(producer, consumer, dst, first, commit=False)
        facts["committed_after_abort"] = _client_committed(ctx, group, src, 2)
        _transaction(producer, consumer, dst, first, commit=True)
        facts["committed_after_commit"] = _client_committed(ctx, group, src, 2)
    finally:
        consumer.close()
        producer.flush(10)
    reader = Consumer({"bootstrap.servers": ctx.bootstrap, "group.id": ctx.name("g", "txn-reader"),
                       "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    try:
        reader.subscribe([dst])
        out = _poll(reader, INPUTS, 60)
        out += _poll(reader, 1, 2)                       # anything more would be an aborted or duplicate record
        facts["downstream_read_committed"] = len(out)
    finally:
        reader.close()
    return facts
