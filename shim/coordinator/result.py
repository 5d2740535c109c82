"""What goes into and comes out of one coordinator call: the request's context (`Ctx`), one
response (`Respond`) and the call's `CoordinatorResult` (Kafka's CoordinatorResult: the responses
and the records the call wrote)."""

from __future__ import annotations

from collections.abc import Iterator
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
    # offsets were enlisted (the transaction's markers come after it: shim/proxy/txn_markers.py); -1
    marker_floor: int = -1


@dataclass
class Respond:
    token: object
    body: object


@dataclass
class CoordinatorResult:
    """The responses ready after one call (possibly for requests parked earlier) and the state
    records that call appended to `GroupCoordinator.records`, in order.

    It also reads as the list of responses, the shape `handle()` and `tick()` returned before it
    existed: iterating, indexing, `len()`, truthiness and `== [...]` see `responses`."""
    responses: list[Respond] = field(default_factory=list)
    records: list = field(default_factory=list)

    def __iter__(self) -> Iterator[Respond]:
        return iter(self.responses)

    def __len__(self) -> int:
        return len(self.responses)

    def __getitem__(self, i):
        return self.responses[i]

    def __bool__(self) -> bool:
        return bool(self.responses)

    def __eq__(self, other) -> bool:
        if isinstance(other, CoordinatorResult):
            return self.responses == other.responses and self.records == other.records
        if isinstance(other, list):
            return self.responses == other
        return NotImplemented

    def __add__(self, other) -> list[Respond]:
        return self.responses + list(other)

    def __radd__(self, other) -> list[Respond]:
        return list(other) + self.responses
