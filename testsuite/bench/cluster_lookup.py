"""What the commit benchmarks ask a cluster before they measure (commit_bench.py, commit_floor_py.py):
a group's coordinator (FindCoordinator) and a topic's partition leaders (Metadata), each asked again
every 0.2 s until the cluster can answer (a topic just created may have no leader yet)."""

from __future__ import annotations

import asyncio
import time

from kcodec import api
from kcodec.generated.metadata import MetadataRequestTopic
from kcodec.protocol import ApiKey
from shim.config import Config
from shim.kafkaclient.client import UpstreamClient

FIND_COORDINATOR, METADATA = ApiKey.FIND_COORDINATOR, ApiKey.METADATA


async def ask_until(bootstrap: str, ask, what: str, timeout: float = 30.0):
    """`await ask(client)` on a connection to the first bootstrap address, every 0.2 s until it
    returns something other than None (or `timeout` passes: ConnectionError naming `what`)."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    client = await UpstreamClient.connect(Config(), host, int(port))
    deadline = time.monotonic() + timeout
    try:
        while True:
            got = await ask(client)
            if got is not None:
                return got
            if time.monotonic() > deadline:
                raise ConnectionError(f"{what} via {bootstrap}: no answer in {timeout:.0f}s")
            await asyncio.sleep(0.2)
    finally:
        client.close()


async def coordinator_of(bootstrap: str, group: str, timeout: float = 30.0) -> tuple[str, int]:
    """The group's coordinator as a client finds it (FindCoordinator through `bootstrap`)."""
    async def ask(client):
        v = client.version_for(FIND_COORDINATOR, 4)
        req = api.REQUESTS[FIND_COORDINATOR](key_type=0)
        if v >= 4:
            req.coordinator_keys = [group]
        else:
            req.key = group
        resp = await client.request(FIND_COORDINATOR, v, req)
        found = resp.coordinators[0] if v >= 4 else resp
        return (found.host, found.port) if found.error_code == 0 else None
    return await ask_until(bootstrap, ask, f"FindCoordinator {group}", timeout)


async def partition_leaders(bootstrap: str, topic: str) -> dict[int, tuple[str, int]]:
    """partition -> its leader's (host, port), once every partition of `topic` has one."""
    async def ask(client):
        v = client.version_for(METADATA, 12)
        req = api.REQUESTS[METADATA](topics=[MetadataRequestTopic(name=topic)])
        if v >= 4:
            req.allow_auto_topic_creation = False
        resp = await client.request(METADATA, v, req)
        brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
        found = next((t for t in resp.topics if t.name == topic and t.error_code == 0), None)
        if found is None or not found.partitions or any(p.leader_id not in brokers for p in found.partitions):
            return None
        return {p.partition_index: brokers[p.leader_id] for p in found.partitions}
    return await ask_until(bootstrap, ask, f"leaders of {topic}")
