"""Fault injection: the rules (shim/faultrules.py) applied to client requests - delay, drop, fail
or close them.

Semantics on the wire: `drop` keeps the request's place in the connection's response order and
never answers it (the broker went silent: everything after it on that connection waits too, until
the client times out and reconnects); `delay` holds the request and every later one on the
connection for delay_ms, keeping order; `error` answers at once without forwarding; `close` closes
the client connection. Produce with acks=0 expects no answer: `error` drops it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING

from kcodec import api

from ..faultrules import Rule, parse_rules

if TYPE_CHECKING:
    from .session import Session

log = logging.getLogger("kshim.faults")


class FaultInjector:
    """The proxy's rules; `Session.on_request` asks `intercept` first when any rule is set (or a
    connection is being held by a delay)."""

    def __init__(self, specs=None, metrics=None):
        self.rules: list[Rule] = parse_rules(specs)
        self._next_id = len(self.rules) + 1
        self.held: dict = {}           # session -> deque of frames waiting behind a delay
        self.metrics = metrics

    # ------------------------------------------------------------------ admin
    def add(self, specs) -> list[Rule]:
        new = parse_rules(specs)
        for r in new:
            r.id = self._next_id
            self._next_id += 1
        self.rules.extend(new)
        return new

    def clear(self, rule_id: int | None = None) -> int:
        before = len(self.rules)
        self.rules = [] if rule_id is None else [r for r in self.rules if r.id != rule_id]
        return before - len(self.rules)

    def describe(self) -> list[dict]:
        return [r.describe() for r in self.rules]

    # ------------------------------------------------------------------ request path
    def intercept(self, session: "Session", api_key: int, version: int, frame) -> bool:
        """True when the request was taken (held, dropped, answered or its connection closed)."""
        queue = self.held.get(session)
        if queue is not None:
            queue.append(bytes(frame))
            return True
        for rule in self.rules:
            if rule.matches(api_key, version, session.client_id) and rule.fires():
                if self.metrics is not None:
                    self.metrics.fault(rule.action, api_key)
                return self._apply(rule, session, api_key, version, frame)
        return False

    def _apply(self, rule: Rule, session: "Session", api_key: int, version: int, frame) -> bool:
        from .session import FAULT_DELAY
        from .slot import Slot
        from .versions import PRODUCE
        action = rule.action
        if action == "close":
            log.info("fault: closing client %s at %s v%d", session.peer, api.API_KEYS.get(api_key), version)
            session.close()
            return True
        if action == "delay":
            self.held[session] = deque()
            session.pause_client(FAULT_DELAY)
            asyncio.get_running_loop().call_later(rule.delay_s, self._release, session, bytes(frame))
            return True
        no_answer = api_key == PRODUCE and _acks_zero(frame, version)
        corr = _correlation_id(frame)
        if action == "drop":
            if not no_answer:
                session.pending.append(Slot(api_key, version, corr, False))   # never filled
            return True
        if no_answer:
            return True
        from ..error_answers import error_frame
        try:
            data = error_frame(api_key, version, frame, rule.error)
        except Exception as e:   # a request kshim cannot read, or no error field at this version
            log.warning("fault: cannot build a %s v%d error answer (%s); closing client %s",
                        api.API_KEYS.get(api_key), version, e, session.peer)
            session.close()
            return True
        slot = Slot(api_key, version, corr, False)
        session.pending.append(slot)
        session.complete(slot, data)
        return True

    def _release(self, session: "Session", frame: bytes) -> None:
        queue = self.held.pop(session, deque())
        if session.closed:
            return
        from kcodec.frames import peek_request

        from .session import FAULT_DELAY
        # the delayed request goes on, then the ones that queued behind it (which may meet a rule again:
        # a new delay holds the rest behind it)
        session.dispatch(frame, *peek_request(frame)[:3], faults=False)
        for f in queue:
            if session.closed:
                return
            session.dispatch(f, *peek_request(f)[:3])
        if session not in self.held:
            session.resume_client(FAULT_DELAY)

    def forget(self, session: "Session") -> None:
        self.held.pop(session, None)


def _correlation_id(frame) -> int:
    return int.from_bytes(bytes(frame[4:8]), "big", signed=True)


def _acks_zero(frame, version: int) -> bool:
    from kcodec.frames import produce_acks
    try:
        return produce_acks(frame, version) == 0
    except Exception:
        return False
