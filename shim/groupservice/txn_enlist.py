"""TxnOffsetCommit v5+ (KIP-890 transactions v2): the transaction learns about the offsets from the
group coordinator, not from the client.

A transactions-v2 client (the Java client 4.x, franz-go) sends no AddOffsetsToTxn: the broker's group
coordinator, handed TxnOffsetCommit v5+, first adds its offsets partition to the producer's
transaction at the transaction coordinator (and fails the commit with that coordinator's error).
kshim answers TxnOffsetCommit itself, so it does that step too: AddOffsetsToTxn(transactional id,
producer id and epoch, group) to the real transaction coordinator, which enlists the group's
`__consumer_offsets` partition as for a v1 client. Without it a transaction holding only offsets
has nothing enlisted and its EndTxn(commit) fails with INVALID_TXN_STATE (franz-go's TestTxnEtl
through kshim). The commit/abort itself is learned from the client's EndTxn or the markers
(coordinator/txn_offsets.py, txn_markers.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from kcodec import api
from kcodec.protocol import ApiKey, Error

from ..kafkaclient.client import UpstreamClient

if TYPE_CHECKING:
    from .host import Host

log = logging.getLogger("kshim.proxy")

ADD_OFFSETS_TO_TXN, FIND_COORDINATOR = ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.FIND_COORDINATOR
TXN_KEY = 1
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE = Error.NOT_COORDINATOR, Error.COORDINATOR_NOT_AVAILABLE
COORDINATOR_LOAD_IN_PROGRESS = Error.COORDINATOR_LOAD_IN_PROGRESS
CONCURRENT_TRANSACTIONS = Error.CONCURRENT_TRANSACTIONS
MOVED = (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS)
ENLIST_MIN_VERSION = 5           # TxnOffsetCommit v5+: the client did not send AddOffsetsToTxn
ATTEMPTS = 5
MAX_REMEMBERED = 10_000


class TxnEnlister:
    def __init__(self, proxy: "Host"):
        self.proxy = proxy
        self._coordinator: dict[str, int] = {}           # transactional id -> node id
        self._conns: dict[int, UpstreamClient] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    async def enlist(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> int:
        """AddOffsetsToTxn at the transaction coordinator: its error code (0 = enlisted)."""
        code = COORDINATOR_NOT_AVAILABLE
        for attempt in range(ATTEMPTS):
            try:
                node = await self._coordinator_of(transactional_id)
                if node is not None:
                    body = api.REQUESTS[ADD_OFFSETS_TO_TXN](
                        transactional_id=transactional_id, producer_id=producer_id,
                        producer_epoch=producer_epoch, group_id=group_id)
                    resp = await self.call(node, ADD_OFFSETS_TO_TXN,
                                            lambda conn: (conn.version_for(ADD_OFFSETS_TO_TXN, 4), body))
                    code = resp.error_code
                    if code not in MOVED and code != CONCURRENT_TRANSACTIONS:
                        return code
            except (OSError, ConnectionError, asyncio.TimeoutError) as e:
                log.info("AddOffsetsToTxn for %s: %s", transactional_id, e)
                code = COORDINATOR_NOT_AVAILABLE
            if code in MOVED:
                self._coordinator.pop(transactional_id, None)
            await asyncio.sleep(0.02 * (attempt + 1))    # the previous transaction still completing
        return code

    async def _coordinator_of(self, transactional_id: str) -> int | None:
        node = self._coordinator.get(transactional_id)
        if node is not None:
            return node
        brokers = sorted(self.proxy.topology.brokers)
        if not brokers:
            return None
        via = brokers[hash(transactional_id) % len(brokers)]
        used = []

        def find(conn):
            v = conn.version_for(FIND_COORDINATOR, 4)
            used.append(v)
            req = api.REQUESTS[FIND_COORDINATOR](key_type=TXN_KEY)
            if v >= 4:
                req.coordinator_keys = [transactional_id]
            else:
                req.key = transactional_id
            return v, req
        resp = await self.call(via, FIND_COORDINATOR, find)
        err, node = ((resp.coordinators[0].error_code, resp.coordinators[0].node_id) if used[0] >= 4
                     else (resp.error_code, resp.node_id))
        if err or node < 0:
            return None
        if len(self._coordinator) >= MAX_REMEMBERED:
            self._coordinator.clear()
        self._coordinator[transactional_id] = node
        return node

    async def _conn(self, node: int) -> UpstreamClient:
        conn = self._conns.get(node)
        if conn is None:
            broker = self.proxy.topology.upstream_of(node)
            if broker is None:
                raise ConnectionError(f"broker {node} is not known")
            conn = self._conns[node] = await UpstreamClient.connect(self.proxy.cfg, broker.host, broker.port)
        return conn

    async def call(self, node: int, api_key: int, build):
        """build(connection) -> (version, request body); one request in flight per connection."""
        lock = self._locks.setdefault(node, asyncio.Lock())
        async with lock:
            conn = await self._conn(node)
            try:
                version, body = build(conn)
                return await conn.request(api_key, version, body)
            except BaseException:
                self._conns.pop(node, None)
                conn.close()
                raise

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
