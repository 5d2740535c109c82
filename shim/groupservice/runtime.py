"""The group coordinator's runtime: kshim's sans-IO `GroupCoordinator` stepped on the event loop (one
actor, no locks), its clock, and the way out for everything it answers.

**Append before answer.** A coordinator step (`handle`, `tick`, `end_transaction`, `unload`, ...)
returns a `CoordinatorResult`: its responses and the state records behind them. With a state topic
(shim/state/log.py), `deliver` hands those records to `StateLog.append` and holds the step's
responses in `_held` until that append completed; `_release` lets steps leave strictly in order (a
step with no records still waits behind an earlier one), and a failed append answers the step's
responses with the mapped coordinator error (`append_failed`, shim/error_answers.py) instead of
success. So a client never hears of a state change that is not durable - as the broker's
CoordinatorRuntime completes a write's response future only once its records are committed.
Every coordinator output goes through `deliver`; nothing else may complete a coordinator answer.

The clock: epoch milliseconds that never go backwards within the process (`now_ms`), fed to the
coordinator, and one loop timer at its next deadline (`_rearm`, `_tick`).

Public interface (the request path, FindCoordinator, transactions, scale-out, authorization):
`handle`, `deliver`, `answer`, `amend` (the one way to change an answer), `replay`, `unload`,
`group_ids`, `now`.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import TYPE_CHECKING, Callable

from kcodec import api

from ..coordinator import CoordinatorConfig, CoordinatorResult, GroupCoordinator
from ..coordinator.metadata import TopicCatalog
from ..error_answers import append_failed, coordinator_error

if TYPE_CHECKING:
    from .host import Connection, Slot
    from ..state.log import StateLog

log = logging.getLogger("kshim.coordinator")

_WALL0, _MONO0 = int(time.time() * 1000), time.monotonic()


def now_ms() -> int:
    """Wall-clock milliseconds that never go backwards within this process: the coordinator's
    timestamps (commit times, state times) are stored in the state topic and compared by other
    kshim processes and after restarts, so they must be epoch-based, as the broker's are."""
    return _WALL0 + int((time.monotonic() - _MONO0) * 1000)


class GroupRuntime:
    now = staticmethod(now_ms)

    def __init__(self, config: CoordinatorConfig, on_event: Callable[[dict], None]):
        self.topics = TopicCatalog()
        self.coordinator = GroupCoordinator(config, now_ms=now_ms(), topics=self.topics, on_event=on_event)
        self.state: "StateLog | None" = None   # set once replayed: appends before answers from then on
        self._amends: dict = {}             # slot -> (changes, last changes): see `amend`
        self._held: collections.deque = collections.deque()   # (append future | None, responses, relayed)
        self._waiting_on = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None

    # ------------------------------------------------------------------ coordinator steps
    def handle(self, session: "Connection", slot: "Slot", req,
               topic_filter: Callable[[str], bool] | None = None, marker_floor: int = -1) -> None:
        """One request into the coordinator; its answer comes now or later (a parked join) through
        `deliver`."""
        self.deliver(self.coordinator.handle(slot.api_key, slot.version, req, (session, slot),
                                             client_id=session.client_id or "", client_host=session.peer_host,
                                             now_ms=now_ms(), topic_filter=topic_filter, marker_floor=marker_floor))

    def amend(self, slot: "Slot", change: Callable, last: bool = False) -> None:
        """The one way to change an answer of kshim's before it is encoded, whoever makes it and
        whenever: `change(body)` edits the body in place or returns its replacement. Changes apply in
        the order given, those marked `last` after the others (authorization: the entries it refused
        are put back into the finished answer, as KafkaApis merges them into the coordinator's)."""
        changes = self._amends.get(slot)
        if changes is None:
            changes = self._amends[slot] = ([], [])
        changes[last].append(change)

    def forget(self, slot: "Slot") -> None:
        """Drop the changes of a slot nothing will answer (its connection closed while it waited)."""
        self._amends.pop(slot, None)

    def replay(self, records) -> None:
        """State records read back from the state topic, into the coordinator (nothing to append)."""
        now = now_ms()
        for rec in records:
            self.coordinator.replay(rec, now_ms=now)
        self._rearm()

    def unload(self, group_ids: list[str]) -> None:
        """Forget groups served elsewhere now (scale-out); their parked requests are answered."""
        self.deliver(self.coordinator.unload(group_ids))

    def group_ids(self) -> set[str]:
        """Every group id the coordinator holds state of (groups, offsets, pending transactional offsets)."""
        c = self.coordinator
        return {*c.groups, *c.consumer_groups, *c.offsets.by_group, *c.txns.by_group}

    def has_group(self, group_id: str) -> bool:
        """A classic or consumer group `group_id` in the coordinator's latest state."""
        c = self.coordinator
        return group_id in c.groups or group_id in c.consumer_groups

    def holds(self, group_id: str) -> bool:
        """`group_id in group_ids()`, without building the set."""
        c = self.coordinator
        return any(group_id in d for d in (c.groups, c.consumer_groups, c.offsets.by_group, c.txns.by_group))

    def metadata_updated(self) -> None:
        self.deliver(self.coordinator.metadata_updated(now_ms()))

    def adopt(self, group_id: str, offsets: list) -> None:
        """The broker's committed offsets of a group become kshim's (coordinator/adoption.py), durably
        before any later answer (steps leave in order)."""
        self.deliver(self.coordinator.adopt_offsets(group_id, offsets, now_ms()))

    async def hand_over(self, group_id: str) -> int:
        """Forget an Empty classic group the broker takes over; waits until its records are durable
        (0, or the append's error code)."""
        records = self.coordinator.hand_over(group_id, now_ms()).records
        self._rearm()
        if self.state is None or not records:
            return 0
        return await self.state.append(records)

    def expire_offsets(self) -> None:
        self.deliver(self.coordinator.expire_offsets(now_ms()))

    # ------------------------------------------------------------------ append before answer
    def deliver(self, out: CoordinatorResult, relayed: tuple = ()) -> None:
        """One coordinator step's result: its records appended, then its responses sent; `relayed`,
        (session, slot, frame) answers of the broker that this step follows (EndTxn, InitProducerId),
        are sent with them."""
        records = out.records
        if self.state is None:               # memory only: nothing to wait for
            self._send(out.responses, relayed, 0)
        elif records or self._held:          # append before answer, and after every earlier step
            self._held.append((self.state.append(records) if records else None, out.responses, relayed))
            self._release()
        else:
            self._send(out.responses, relayed, 0)
        self._rearm()

    def _release(self, _=None) -> None:
        """Send held responses in step order, each once its own append is done."""
        held = self._held
        while held:
            fut, responses, relayed = held[0]
            if fut is not None and not fut.done():
                if self._waiting_on is not fut:
                    self._waiting_on = fut
                    fut.add_done_callback(self._release)
                return
            held.popleft()
            self._send(responses, relayed, fut.result() if fut is not None else 0)

    def _send(self, responses: list, relayed: tuple, append_error: int) -> None:
        for r in responses:
            session, slot = r.token
            body = r.body if not append_error else append_failed(slot.api_key, r.body,
                                                                  coordinator_error(append_error))
            self.answer(session, slot, body)
        if relayed and append_error:
            log.warning("transaction end not durable (append error %d); served from memory", append_error)
        for session, slot, frame in relayed:
            session.complete(slot, frame)

    def answer(self, session: "Connection", slot: "Slot", body) -> None:
        """Encode one answer (after its `amend` changes) and complete its slot. Answers of coordinator
        steps come here through `deliver`; answers made without the coordinator (refusals) directly."""
        changes = self._amends.pop(slot, None) if self._amends else None
        if changes is not None:
            for change in (*changes[0], *changes[1]):
                changed = change(body)
                if changed is not None:
                    body = changed
        try:
            data = api.encode_response(slot.api_key, slot.version, slot.correlation_id, body)
        except Exception:
            log.exception("cannot encode %s v%s response", api.API_KEYS.get(slot.api_key), slot.version)
            session.close()
            return
        session.complete(slot, data)

    # ------------------------------------------------------------------ clock
    def _rearm(self) -> None:
        deadline = self.coordinator.next_deadline()
        if deadline is None or deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        delay = max(deadline - now_ms(), 0) / 1000.0
        self._timer_at = deadline
        self._timer = loop.call_later(delay, self._tick)

    def _tick(self) -> None:
        self._timer = self._timer_at = None
        self.deliver(self.coordinator.tick(now_ms()))

