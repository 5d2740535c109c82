"""The coordinator's clock and outputs, apart from any group state: the injected clock, the keyed
timers and their firing, the outbox of responses, the current call's records, events and member ids.
(Kafka's CoordinatorRuntime, which appends a call's records before answering, is
shim/groupservice/runtime.py; this is what the shard owns: its Time and CoordinatorTimer.)

Time only moves when the caller passes `now_ms` (`advance`); timers due by then fire one deadline
at a time, each with the clock at its own deadline, as the broker's timer wheel runs each expired
operation. Nothing here touches a socket, a thread or the wall clock.
"""

from __future__ import annotations

import uuid
from typing import Callable

from .result import CoordinatorResult, Respond
from .timers import Timers


class ShardClock:
    def __init__(self, now_ms: int = 0, new_uuid: Callable[[], str] | None = None,
                 on_event: Callable[[dict], None] | None = None):
        self.now = now_ms
        self.timers = Timers()
        self.records: list = []                  # the current call's records; its result takes them
        self.out: list[Respond] = []
        self._uuid = new_uuid or (lambda: str(uuid.uuid4()))
        self.on_event = on_event

    # ------------------------------------------------------------------ clock and timers
    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def advance(self, now_ms: int, after_each: Callable[[], None]) -> None:
        """Fire the timers due by `now_ms` one deadline at a time (the clock at each deadline),
        calling `after_each` after each; then the clock reads `now_ms` (it never goes back)."""
        while True:
            nxt = self.timers.next_deadline()
            if nxt is None or nxt > now_ms:
                break
            self.now = max(self.now, nxt)
            self.timers.fire_due(nxt)
            after_each()
        self.now = max(self.now, now_ms)

    # ------------------------------------------------------------------ outputs
    def respond(self, token, body) -> None:
        self.out.append(Respond(token, body))

    def event(self, kind: str, group: str, **fields) -> None:
        if self.on_event is not None:
            self.on_event({"event": kind, "group": group, "ts": self.now, **fields})

    def new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{self._uuid()}"

    def result(self) -> CoordinatorResult:
        """The call's result: the responses ready so far and the records written since the last one."""
        out, self.out = self.out, []
        records, self.records = self.records, []
        return CoordinatorResult(out, records)
