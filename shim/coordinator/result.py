"""What goes into and comes out of one coordinator call: the request's context (`Ctx`), one
response (`Respond`) and the call's `CoordinatorResult` (Kafka's CoordinatorResult: the responses
and the records the call wrote)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(slots=True)
class Ctx:
    token: object
    version: int
    client_id: str
    client_host: str
    # the caller's TOPIC DESCRIBE right, when kshim authorizes (None: every topic); regex
    # subscriptions resolve through it, as the broker filters a regex's topics by the member's rights
    topic_filter: Callable[[str], bool] | None = None
    # TxnOffsetCommit: the high watermark of the group's __consumer_offsets partition read after the
    # offsets were enlisted (the transaction's markers come after it: shim/groupservice/txn_markers.py); -1
    marker_floor: int = -1


@dataclass
class Respond:
    token: object
    body: object


@dataclass
class CoordinatorResult:
    """The one output of a coordinator call (Kafka's CoordinatorResult): the responses ready after it
    (possibly for requests parked earlier) and the state records it wrote, in order. Nothing else
    carries a call's records out of the coordinator: the runtime appends `records`, then sends
    `responses`."""
    responses: list[Respond] = field(default_factory=list)
    records: list = field(default_factory=list)
