"""FindCoordinator for group keys (key type 0), answered by kshim (spec §F: the coordinator of a
group is the owner of its state partition). v0-3 carry one key, v4+ a batch with an entry per key.
The node id is the one kshim uses for its coordinator (the lowest broker id); host and port are those
of the kshim instance that serves the group, on its port for that node, so a client that updates
that node's address from this answer (librdkafka) still reaches the same broker through that
instance. No known owner: COORDINATOR_NOT_AVAILABLE (node -1), as a broker answers while the
partition has no leader.

Error messages as the broker's `KafkaApis.handleFindCoordinatorRequest` sends them: v1-3 carry
`Errors.message()` ("NONE" on success); v4+ entries never set one, so each carries the field's
default, an empty string (not null), whatever their error code."""

from __future__ import annotations

from typing import Callable

from kcodec.generated.find_coordinator import Coordinator, FindCoordinatorResponse

COORDINATOR_NOT_AVAILABLE = 15
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
                entries.append(Coordinator(key=key, node_id=node, host=where[0], port=where[1], error_code=0,
                                           error_message=""))
        return FindCoordinatorResponse(coordinators=entries)
    where = locate(req.key)
    if where is None:
        return FindCoordinatorResponse(error_code=COORDINATOR_NOT_AVAILABLE,
                                       error_message=NOT_AVAILABLE_MESSAGE if version >= 1 else "",
                                       node_id=-1, host="", port=-1)
    return FindCoordinatorResponse(error_code=0, error_message=NONE_MESSAGE if version >= 1 else "",
                                   node_id=node, host=where[0], port=where[1])
