"""What the group service needs of the proxy it plugs into, declared here so that it depends on no
module of shim/proxy/ (the proxy, shim/proxy/server.py, and its connections, shim/proxy/session.py,
provide these; the runner joins the two). Types only: nothing here runs.

The route contract (`Route`): the proxy calls `route(connection, slot, frame)` for a request of an
API the service registered, once every earlier request of the connection was answered. It returns
True when it takes the request: the slot is then completed exactly once, now or later, by
`connection.complete(slot, response_frame)` or by the connection closing. It returns False to
decline: the request goes to the broker as if no route existed; before declining, a route may set
`slot.watch` to a callable(connection, slot, broker_frame) that then receives the broker's answer
and must complete the slot itself (EndTxn and InitProducerId, transactions.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from ..config import Config
    from ..kafkaclient.client import Broker


class Slot(Protocol):
    """One request's place in its connection's answer order."""
    api_key: int
    version: int
    correlation_id: int
    watch: "Callable[[Connection, Slot, memoryview], None] | None"


class Connection(Protocol):
    """One client connection."""
    client_id: str | None
    peer: str                    # "host:port", for logs
    peer_host: str               # "/host", as the broker names a client's host
    closed: bool
    auth: Any                    # authz.ConnAuth once SASL or the authorizer saw the connection
    listener: Any                # .node_id: the broker this port stands for (None: bootstrap)

    def complete(self, slot: Slot, data: bytes) -> None: ...
    def close(self) -> None: ...
    def bad_input(self, why: str) -> None: ...


Route = Callable[[Connection, Slot, memoryview], bool]


class Topology(Protocol):
    brokers: "dict[int, Broker]"

    def upstream_of(self, node_id: int) -> "Broker | None": ...


class Host(Protocol):
    """The proxy, as the group service sees it."""
    cfg: "Config"
    topology: Topology
    routes: dict[int, Route]

    def register(self, api_key: int, route: Route, versions: tuple[int, int]) -> None: ...
    def trace_event(self, ev: dict) -> None: ...
