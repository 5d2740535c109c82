"""The asyncio driver of membership.py: sends its requests over kshim's own upstream connections
(shim/kafkaclient/: TLS and SASL as configured), one at a time, and hands every new
assignment to `on_assignment`. A lost connection is a failure the state machine handles
(rediscover the coordinator, rejoin)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from ..config import Config
from ..kafkaclient.client import UpstreamClient
from .membership import WANTED, Assignment, Membership, Request

log = logging.getLogger("kshim.scaleout")
IO_ERRORS = (OSError, ConnectionError, asyncio.TimeoutError, EOFError)


def now_ms() -> int:
    return int(time.monotonic() * 1000)


class MemberClient:
    def __init__(self, cfg: Config, sm: Membership, addresses: Callable[[], list[tuple[str, int]]],
                 on_assignment: Callable[[Assignment], None]):
        self.cfg, self.sm, self._addresses, self._on_assignment = cfg, sm, addresses, on_assignment
        self._any: UpstreamClient | None = None
        self._coord: UpstreamClient | None = None
        self._coord_at: tuple[int, str, int] | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            req = self.sm.next_request(now_ms())
            self._emit()
            if req is None:
                deadline = self.sm.deadline()
                delay = 1.0 if deadline is None else max(deadline - now_ms(), 0) / 1000
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), min(delay, 1.0) or 0.001)
                except asyncio.TimeoutError:
                    pass
                continue
            try:
                resp = await self._send(req)
            except asyncio.CancelledError:
                raise
            except IO_ERRORS as e:
                log.info("kshim membership: request %d failed: %s", req.api_key, e or type(e).__name__)
                self._close()
                self.sm.on_failure(now_ms())
            except Exception:
                log.exception("kshim membership: unexpected error")
                self._close()
                self.sm.on_failure(now_ms())
            else:
                self.sm.on_response(resp, now_ms())
            self._emit()

    def _emit(self) -> None:
        a = self.sm.take_assignment()
        if a is not None:
            self._on_assignment(a)

    async def _connection(self, to_coordinator: bool) -> UpstreamClient:
        if not to_coordinator:
            if self._any is None:
                last: Exception | None = None
                for host, port in self._addresses():
                    try:
                        self._any = await UpstreamClient.connect(self.cfg, host, port)
                        break
                    except IO_ERRORS as e:
                        last = e
                else:
                    raise ConnectionError(f"no upstream broker answered: {last}")
            return self._any
        at = self.sm.coordinator
        if at is None:
            raise ConnectionError("no coordinator known")
        if self._coord is None or self._coord_at != at:
            if self._coord is not None:
                self._coord.close()
            self._coord = await UpstreamClient.connect(self.cfg, at[1], at[2])
            self._coord_at = at
        return self._coord

    async def _send(self, req: Request):
        client = await self._connection(req.to_coordinator)
        v = client.version_for(req.api_key, WANTED[req.api_key])
        return await client.request(req.api_key, v, req.build(v), timeout=req.timeout_s)

    def _close(self) -> None:
        for c in (self._any, self._coord):
            if c is not None:
                c.close()
        self._any = self._coord = None
        self._coord_at = None

    async def stop(self) -> None:
        """Leave the group (so the others take over at once, not after a session timeout)."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        self._close()                  # a cancelled request may have left an answer unread
        leave = self.sm.leave_request()
        if leave is not None:
            try:
                await asyncio.wait_for(self._send(leave), 5.0)
            except (*IO_ERRORS, Exception) as e:
                log.info("kshim membership: LeaveGroup failed: %s", e)
        self._close()
