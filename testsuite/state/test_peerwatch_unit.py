"""PeerWatch (shim/state/peerwatch.py) on real local sockets: a peer whose listener goes away is down
at once (connection refused), back up when it listens again; a peer that accepts and closes at once
is not down and is not reconnected in a busy loop; an address no longer watched is forgotten."""

from __future__ import annotations

import asyncio
import socket

from shim.state.peerwatch import PeerWatch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _until(pred, timeout: float = 5.0) -> float:
    loop = asyncio.get_running_loop()
    start = loop.time()
    while not pred():
        assert loop.time() - start < timeout, "condition not reached"
        await asyncio.sleep(0.01)
    return loop.time() - start


def test_a_peer_that_stops_listening_is_down_at_once_and_up_again_when_it_returns():
    async def run():
        port = _free_port()
        held: list[asyncio.StreamWriter] = []

        async def accept(reader, writer):
            held.append(writer)
        server = await asyncio.start_server(accept, "127.0.0.1", port)
        watch = PeerWatch(retry_s=0.1)
        watch.watch({("127.0.0.1", port)})
        await _until(lambda: len(held) == 1)
        assert not watch.is_down("127.0.0.1", port)
        # the process dies: listener and its connections close together
        server.close()
        for w in held:
            w.transport.abort()
        await server.wait_closed()
        took = await _until(lambda: watch.is_down("127.0.0.1", port))
        assert took < 0.5
        server = await asyncio.start_server(accept, "127.0.0.1", port)
        await _until(lambda: not watch.is_down("127.0.0.1", port))
        watch.watch(set())
        assert not watch._tasks and not watch.down
        server.close()
        await server.wait_closed()
    asyncio.run(run())


def test_a_peer_that_closes_each_connection_is_not_down_and_not_hammered():
    async def run():
        port = _free_port()
        accepted = 0

        async def accept(reader, writer):
            nonlocal accepted
            accepted += 1
            writer.close()
        server = await asyncio.start_server(accept, "127.0.0.1", port)
        watch = PeerWatch(retry_s=0.2)
        watch.watch({("127.0.0.1", port)})
        await asyncio.sleep(1.0)
        assert not watch.is_down("127.0.0.1", port)
        assert 2 <= accepted <= 7, accepted        # about one connection per retry_s
        watch.stop()
        server.close()
        await server.wait_closed()
    asyncio.run(run())


def test_an_unreachable_peer_is_not_called_down():
    async def run():
        watch = PeerWatch(retry_s=0.1)
        watch.watch({("host.invalid", 9092)})       # name resolution fails: proves nothing
        await asyncio.sleep(0.3)
        assert not watch.is_down("host.invalid", 9092)
        watch.stop()
    asyncio.run(run())
