"""FindCoordinator (KafkaApis.handleFindCoordinatorRequest): group keys (key type 0) are answered
by kshim, transaction keys are forwarded to the broker (and rewritten: rewrite.py).

kshim is every group's coordinator: any kshim port serves the group APIs. The coordinator of a group
is the owner of its partition (the broker: the leader of its __consumer_offsets partition,
GroupCoordinatorService.partitionFor; kshim with scale_out: the instance owning its state partition,
shim/state/ownership.py). v0-3 carry one key, v4+ a batch with an entry per key. The node id is the
one kshim uses for its coordinator (the lowest broker id: `coordinator_node`); host and port are
those of the kshim instance that serves the group, on its port for that node, so a client that
updates that node's address from this answer (librdkafka) still reaches the same broker through that
instance. No known owner: COORDINATOR_NOT_AVAILABLE (node -1), as a broker answers while the
partition has no leader.

Error messages as the broker's `KafkaApis.handleFindCoordinatorRequest` sends them: v1-3 carry
`Errors.message()` ("NONE" on success); v4+ entries never set one, so each carries the field's
default, an empty string (not null), whatever their error code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kcodec.generated.find_coordinator import Coordinator, FindCoordinatorResponse
from kcodec.protocol import Error

from .bodies import read_or_close

if TYPE_CHECKING:
    from .host import Connection, Host, Slot
    from .runtime import GroupRuntime

COORDINATOR_NOT_AVAILABLE = Error.COORDINATOR_NOT_AVAILABLE
GROUP_KEY = 0
NOT_AVAILABLE_MESSAGE = "The coordinator is not available."
NONE_MESSAGE = "NONE"                  # Errors.NONE.message()


def answer(req, version: int, node: int, locate: Callable[[str], tuple[str, int] | None]) -> FindCoordinatorResponse:
    """`locate(group) -> (host, port)` of the serving instance's port for `node`, or None."""
    if version >= 4:
        entries = []
        for key in req.coordinator_keys:
            where = locate(key)
            if where is None:
                entries.append(Coordinator(key=key, node_id=-1, host="", port=-1, error_code=COORDINATOR_NOT_AVAILABLE,
                                           error_message=""))
            else:
                entries.append(Coordinator(key=key, node_id=node, host=where[0], port=where[1],
                                           error_code=Error.NONE, error_message=""))
        return FindCoordinatorResponse(coordinators=entries)
    where = locate(req.key)
    if where is None:
        return FindCoordinatorResponse(error_code=COORDINATOR_NOT_AVAILABLE,
                                       error_message=NOT_AVAILABLE_MESSAGE if version >= 1 else "",
                                       node_id=-1, host="", port=-1)
    return FindCoordinatorResponse(error_code=Error.NONE, error_message=NONE_MESSAGE if version >= 1 else "",
                                   node_id=node, host=where[0], port=where[1])


def coordinator_node(proxy: "Host") -> int:
    """The node id kshim names as every group's coordinator: the lowest broker id."""
    nodes = sorted(proxy.topology.brokers)
    return nodes[0] if nodes else 0


class FindCoordinator:
    """The FindCoordinator route. `scale` (shim/state/ownership.py's ScaleOut, with scale_out) says
    which instance owns a group; `authz` (authz.py) closes unauthenticated connections and refuses
    groups the caller may not DESCRIBE."""

    def __init__(self, proxy: "Host", runtime: "GroupRuntime", authz=None):
        self.proxy, self.runtime, self.authz = proxy, runtime, authz
        self.scale = None

    def handle(self, session: "Connection", slot: "Slot", frame) -> bool:
        req = read_or_close(session, slot, frame, "FindCoordinator")
        if req is None:
            return True
        if req.key_type != GROUP_KEY:
            return False  # transaction coordinator: the broker's, forwarded and rewritten
        authz = self.authz
        if authz is not None and not authz.admitted(session):
            return True
        node, topo = coordinator_node(self.proxy), self.proxy.topology
        here = (topo.advertised_host, topo.port_for(node))
        scale = self.scale

        def locate(group: str):
            if scale is None:
                return here
            owner = scale.owner_of(group)
            return None if owner is None else here if owner is scale.me else (owner.host, owner.port_for(node))
        body = answer(req, slot.version, node, locate)
        if authz is not None:
            body = authz.find_coordinator(session, slot, req, body)
        self.runtime.answer(session, slot, body)
        return True
