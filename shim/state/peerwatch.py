"""Scale-out: notice at once that another kshim instance is gone (docs/state-topic.md, "What clients
see"), so FindCoordinator stops naming it before the broker expires its membership.

FindCoordinator names the owner's address for node id = the lowest broker id, and librdkafka
rewrites that node's address from the answer. If a survivor still names a dead owner (the broker
keeps the dead member for one session timeout), a librdkafka client whose only remaining broker
address is that node ends up pointed at the dead instance and stops there (measured with librdkafka
2.16: it re-bootstraps only right after losing its brokers, not again). So each instance holds one
idle TCP connection to every other owner's bootstrap port; when it closes, the instance reconnects
at once, and a refused connection (nothing listens there: the process is gone) marks the peer down
until a connection succeeds again. Any other failure (timeout, TLS, unreachable host) proves
nothing and leaves the peer as it was. `ScaleOut.owner_of` answers "no owner known" for a peer that
is down: FindCoordinator says COORDINATOR_NOT_AVAILABLE (node -1, no address to rewrite) until this
instance, or another, takes the partition over."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger("kshim.scaleout")

RETRY_S = 0.5
CONNECT_TIMEOUT_S = 5.0


class PeerWatch:
    def __init__(self, retry_s: float = RETRY_S):
        self.down: set[tuple[str, int]] = set()
        self.retry_s = retry_s
        self._tasks: dict[tuple[str, int], asyncio.Task] = {}

    def is_down(self, host: str, port: int) -> bool:
        return (host, port) in self.down

    def watch(self, addresses: set[tuple[str, int]]) -> None:
        """Watch exactly these (host, bootstrap port) addresses from now on."""
        for addr in set(self._tasks) - addresses:
            self._tasks.pop(addr).cancel()
            self.down.discard(addr)
        for addr in addresses - set(self._tasks):
            self._tasks[addr] = asyncio.get_running_loop().create_task(self._watch(*addr))

    def stop(self) -> None:
        self.watch(set())

    async def _watch(self, host: str, port: int) -> None:
        addr = (host, port)
        while True:
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT_S)
            except ConnectionRefusedError:
                if addr not in self.down:
                    log.warning("scale-out: kshim %s:%d refuses connections; not naming it as coordinator",
                                host, port)
                    self.down.add(addr)
                await asyncio.sleep(self.retry_s)
                continue
            except (OSError, asyncio.TimeoutError):
                await asyncio.sleep(self.retry_s)       # proves nothing either way
                continue
            if addr in self.down:
                log.info("scale-out: kshim %s:%d accepts connections again", host, port)
                self.down.discard(addr)
            opened = asyncio.get_running_loop().time()
            try:
                while await reader.read(1 << 16):       # idle: the peer sends nothing; b"" = closed
                    pass
            except OSError:
                pass
            finally:
                writer.close()
            if asyncio.get_running_loop().time() - opened < self.retry_s:
                await asyncio.sleep(self.retry_s)       # a peer that closes at once: no busy loop
