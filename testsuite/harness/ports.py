"""Free port ranges on 127.0.0.1 for test clusters (so a user's own Kafka on 19092 is left alone)."""

from __future__ import annotations

from shim.localkafka.cluster import port_in_use


def free_port_block(size: int, start: int = 29100, stop: int = 60000, step: int = 20) -> int:
    for base in range(start, stop, step):
        if not any(port_in_use(p) for p in range(base, base + size)):
            return base
    raise RuntimeError(f"no block of {size} free ports between {start} and {stop}")
