"""Python clients (confluent-kafka, aiokafka, kafka-python) behind one small produce/consume API,
so scenarios can run the same steps with each client and compare."""

from __future__ import annotations

import asyncio
import time


# ---------------------------------------------------------------------- confluent-kafka
def ck_produce(bootstrap: str, topic: str, values: list[bytes], spread: int = 0, **conf) -> None:
    """Produce `values` with confluent-kafka; `spread` > 0 sends value i to partition i % spread (else the
    client's sticky partitioner decides, which may leave a partition empty)."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    errors = []
    for i, v in enumerate(values):
        extra = {"partition": i % spread} if spread else {}
        p.produce(topic, v, on_delivery=lambda err, msg: errors.append(err) if err else None, **extra)
        p.poll(0)
    left = p.flush(30)
    assert left == 0 and not errors, f"confluent-kafka produce: {left} undelivered, errors {errors[:3]}"


def ck_consume(bootstrap: str, topic: str, group: str, count: int, timeout: float = 60.0, **conf) -> list[bytes]:
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, **conf})
    c.subscribe([topic])
    out: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count and time.monotonic() < deadline:
            for m in c.consume(num_messages=500, timeout=0.5):
                if m.error():
                    raise AssertionError(f"confluent-kafka consume error: {m.error()}")
                out.append(m.value())
        if out:
            c.commit(asynchronous=False)
    finally:
        c.close()
    return out


# ---------------------------------------------------------------------- aiokafka
def aio_produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    async def go():
        from aiokafka import AIOKafkaProducer
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        await p.start()
        try:
            futs = [await p.send(topic, v) for v in values]
            await asyncio.gather(*futs)
        finally:
            await p.stop()
    asyncio.run(go())


def aio_consume(bootstrap: str, topic: str, group: str, count: int, timeout: float = 60.0, **conf) -> list[bytes]:
    async def go():
        from aiokafka import AIOKafkaConsumer
        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, **conf)
        await c.start()
        out: list[bytes] = []
        try:
            deadline = time.monotonic() + timeout
            while len(out) < count and time.monotonic() < deadline:
                batch = await c.getmany(timeout_ms=500)
                for msgs in batch.values():
                    out.extend(m.value for m in msgs)
            if out:
                await c.commit()
        finally:
            await c.stop()
        return out
    return asyncio.run(go())


# ---------------------------------------------------------------------- kafka-python
def kp_produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        futs = [p.send(topic, v) for v in values]
        p.flush(30)
        for f in futs:
            f.get(timeout=30)
    finally:
        p.close(timeout=10)


def kp_consume(bootstrap: str, topic: str, group: str, count: int, timeout: float = 60.0, **conf) -> list[bytes]:
    from kafka import KafkaConsumer
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, **conf)
    out: list[bytes] = []
    try:
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            for msgs in c.poll(timeout_ms=500).values():
                out.extend(m.value for m in msgs)
        if out:
            c.commit()
    finally:
        c.close()
    return out


CLIENTS = {
    "confluent-kafka": (ck_produce, ck_consume),
    "aiokafka": (aio_produce, aio_consume),
    "kafka-python": (kp_produce, kp_consume),
}
