"""Which upstream brokers exist and which kshim port serves each.

Node n is served on `broker_base + n` for node ids 0..MAX_DIRECT_NODE; larger node ids get the
next free port above that range, first come first served, and keep it for the life of the process
(a client that cached a port must keep reaching the same broker).
"""

from __future__ import annotations

from ..kafkaclient.client import Broker

MAX_DIRECT_NODE = 999


class Topology:
    def __init__(self, broker_base: int, advertised_host: str):
        self.broker_base = broker_base
        self.advertised_host = advertised_host
        self.brokers: dict[int, Broker] = {}
        self._ports: dict[int, int] = {}
        self._next_extra = broker_base + MAX_DIRECT_NODE + 1

    def port_for(self, node_id: int) -> int:
        port = self._ports.get(node_id)
        if port is None:
            if 0 <= node_id <= MAX_DIRECT_NODE:
                port = self.broker_base + node_id
            else:
                port = self._next_extra
                self._next_extra += 1
            self._ports[node_id] = port
        return port

    def update(self, brokers: list[Broker]) -> tuple[list[Broker], list[Broker]]:
        """Replace the broker set; returns (added or moved, removed)."""
        new = {b.node_id: b for b in brokers}
        added = [b for nid, b in new.items() if self.brokers.get(nid) != b]
        removed = [b for nid, b in self.brokers.items() if nid not in new]
        self.brokers = new
        return added, removed

    def learn(self, brokers: list[Broker]) -> list[Broker]:
        """Add or refresh brokers seen in passing (a Metadata answer); never removes."""
        added = [b for b in brokers if self.brokers.get(b.node_id) != b]
        for b in added:
            self.brokers[b.node_id] = b
        return added

    def upstream_of(self, node_id: int) -> Broker | None:
        return self.brokers.get(node_id)
