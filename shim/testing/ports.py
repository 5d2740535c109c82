"""Free port ranges on 127.0.0.1 for test clusters (so a user's own Kafka on 19092 is left alone).

Blocks are always taken below the kernel's ephemeral port range (ip_local_port_range, usually
32768-60999): a listener opened there can collide with the local port of some client socket
("address already in use" when kshim is restarted on its old port)."""

from __future__ import annotations

from shim.localkafka.cluster import port_in_use

LOWEST = 10000


def ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port_block(size: int, start: int = 29100, stop: int = 60000, step: int = 20) -> int:
    top = min(stop, ephemeral_low()) - size
    span = top - LOWEST
    if start >= top:  # fold requests into the range below the ephemeral ports, keeping them apart
        start = LOWEST + (start - LOWEST) % span
    for base in list(range(start, top, step)) + list(range(LOWEST, start, step)):
        if not any(port_in_use(p) for p in range(base, base + size)):
            return base
    raise RuntimeError(f"no block of {size} free ports below {top + size}")
