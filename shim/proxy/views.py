"""What a connection (session.py's Session) sees of the port it came in on and of its proxy: the
parts of server.py's Listener and Proxy it uses, as typing Protocols."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import collections

    from ..config import Config
    from ..kafkaclient.client import Broker
    from .rewrite import Rewriter


class ListenerView(Protocol):
    """The port a connection came in on (server.py's Listener)."""
    name: str
    node_id: int | None                 # None: the bootstrap port

    def upstream_for_new_connection(self) -> "Broker": ...


class ProxyView(Protocol):
    """What a connection uses of its proxy (server.py's Proxy, which creates the sessions)."""
    cfg: "Config"
    routes: dict                        # api key -> handler(session, slot, frame) -> taken?
    allowed: dict[int, tuple[int, int]]
    sessions: set
    stats: "collections.Counter"
    rewriter: "Rewriter"
    faults: object                      # faults.py's FaultInjector (asked first: intercept)
    tracer: object                      # shim.trace.tracer.Tracer or None
    metrics: object                     # shim.metrics.Metrics or None

    async def open_upstream(self, broker: "Broker", factory): ...

    async def ensure_listeners(self, brokers: list) -> None: ...
