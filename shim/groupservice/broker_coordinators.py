"""Routing to the broker's group coordinators, for the groups kshim passes through (broker_groups.py):
each group's coordinator is found with FindCoordinator (key type GROUP) and cached; requests go on
kshim's own pipelined connection to that broker (shim/kafkaclient/pipelined.py), one per broker.
NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE answers (the group's __consumer_offsets partition moved)
are retried on the new coordinator for up to RETRY_S."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from kcodec import api
from kcodec.generated.find_coordinator import FindCoordinatorRequest
from kcodec.protocol import ApiKey, Error, error_name

from ..kafkaclient.pipelined import PipelinedConnection
from .bodies import read_response
from .batches import needs_retry

if TYPE_CHECKING:
    from .host import Host

FIND_COORDINATOR = ApiKey.FIND_COORDINATOR
GROUP_KEY = 0
RETRY_S = 10.0                 # how long a request waits for its group's coordinator to be known
BACKOFF_S = (0.05, 0.1, 0.2, 0.5)


class BrokerUnavailable(Exception):
    pass


class BrokerCoordinators:
    def __init__(self, proxy: "Host"):
        self.proxy = proxy
        self._coordinators: dict[str, int] = {}    # group id -> node id of its broker coordinator
        self._conns: dict[int, PipelinedConnection] = {}
        self._opening: dict[int, asyncio.Future] = {}

    @property
    def topology(self):
        return self.proxy.topology

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    async def ask(self, gids: list[str], frame, api_key: int, version: int):
        """(answer frame, decoded answer) from the coordinator of `gids` (one), retrying moved ones."""
        deadline = time.monotonic() + RETRY_S
        attempt = 0
        while True:
            node = await self.node_for(gids[0], deadline)
            try:
                conn = await self.conn(node)
                answer = await conn.send(frame)
            except (OSError, ConnectionError, asyncio.TimeoutError) as e:
                self._coordinators.pop(gids[0], None)
                if time.monotonic() > deadline:
                    raise BrokerUnavailable(f"broker {node}: {e}") from e
            else:
                msg = read_response(answer, api_key, version)
                if not needs_retry(msg) or time.monotonic() > deadline:
                    return answer, msg
                for g in gids:
                    self._coordinators.pop(g, None)
            await asyncio.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
            attempt += 1

    async def node_for(self, group_id: str, deadline: float | None = None) -> int:
        node = self._coordinators.get(group_id)
        if node is not None:
            return node
        if not self.topology.brokers:
            raise BrokerUnavailable("no broker is known")
        deadline = deadline if deadline is not None else time.monotonic() + RETRY_S
        attempt, why = 0, "no broker"
        while time.monotonic() <= deadline:
            brokers = sorted(self.topology.brokers)
            if brokers:
                ask = brokers[attempt % len(brokers)]
                try:
                    node, error = await self._find(ask, group_id)
                    if error == Error.NONE and node in self.topology.brokers:
                        self._coordinators[group_id] = node
                        return node
                    why = f"FindCoordinator answered {error_name(error)}"
                except (OSError, ConnectionError, asyncio.TimeoutError) as e:
                    why = f"broker {ask}: {e}"
            await asyncio.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
            attempt += 1
        raise BrokerUnavailable(f"no coordinator for group {group_id!r} ({why})")

    async def _find(self, node: int, group_id: str) -> tuple[int, int]:
        conn = await self.conn(node)
        v = min(conn.versions.get(FIND_COORDINATOR, (0, 4))[1], 4)
        if v >= 4:
            resp = await request(conn, FIND_COORDINATOR, v, FindCoordinatorRequest(
                key_type=GROUP_KEY, coordinator_keys=[group_id]))
            c = resp.coordinators[0]
            return c.node_id, c.error_code
        resp = await request(conn, FIND_COORDINATOR, v, FindCoordinatorRequest(key=group_id, key_type=GROUP_KEY))
        return resp.node_id, resp.error_code

    async def conn(self, node: int) -> PipelinedConnection:
        conn = self._conns.get(node)
        if conn is not None and not conn.closed:
            return conn
        opening = self._opening.get(node)
        if opening is None:
            broker = self.topology.brokers.get(node)
            if broker is None:
                raise ConnectionError(f"broker {node} is not in the cluster")
            opening = asyncio.ensure_future(PipelinedConnection.connect(self.proxy.cfg, broker.host, broker.port))
            self._opening[node] = opening
            opening.add_done_callback(lambda _f: self._opening.pop(node, None))
        conn = await asyncio.shield(opening)
        self._conns[node] = conn
        return conn


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None, body) -> bytes:
    hv = api.request_header_version(api_key, version)
    return api.RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=correlation_id,
                             client_id=client_id).encode(hv) + body.encode(version)


async def request(conn: PipelinedConnection, api_key: int, version: int, body):
    """kshim's own request on a pipelined connection, decoded."""
    answer = await conn.send(encode_request(api_key, version, 0, "kshim", body))
    return read_response(answer, api_key, version)
