"""One client connection and its dedicated upstream connection.

Each client connection is paired with one upstream connection to one broker (the broker its kshim
port stands for; any live broker for the bootstrap port), so SASL exchanges and KIP-368
re-authentication stay on one broker connection, exactly as if the client talked to it directly.
The upstream connection opens with the first request kshim forwards (until then frames wait in
`early`), so idle connections and ones that only use kshim's coordinator hold no broker connection.

Order: every request that expects a response gets a slot in `pending`, in arrival order. Forwarded
requests also queue in `awaiting` (the broker answers one connection in order); requests the proxy
answers itself (the routing table) fill their slot when done. Slots leave for the client strictly
from the head, so responses go out in request order whoever answered them. Produce with acks=0 has
no response and no slot.

One request at a time, as the broker: its network processor reads a connection's next request only
once the current one is answered (`SocketServer.Processor` mutes the `KafkaChannel` while a request
is in flight). A request of the routing table goes to its handler only when every earlier request
of the connection has been answered, and while such a request is in flight every later one waits
in `waiting` (a LeaveGroup sent behind a parked JoinGroup takes effect after the join is answered,
as on the broker). Forwarded requests with no local one before them are still pipelined to the
broker, which serializes them itself (the Produce/Fetch path does not wait). Past HIGH_WATER bytes
waiting, the client socket is not read until they drain (the broker stops reading too).

Nothing is decoded on this path except the request header peek, and the four responses the
`Rewriter` changes (ApiVersions, Metadata, FindCoordinator, DescribeCluster). The frames of one read
leave in one write; a large answer next in line goes to the client as it arrives (upstream_side.py),
a large request to the broker (request_stream.py); both sides read alike (frame_reader.py). Route
handlers may decline a request but watch its answer (`Slot.watch`: EndTxn and InitProducerId, for
kshim's transactional offsets, shim/groupservice/transactions.py). With `--trace`, each frame in each
direction is also handed to the tracer (a queue append; shim/trace/tracer.py).
"""

from __future__ import annotations

import asyncio
import logging
from time import monotonic_ns
from collections import deque
from typing import TYPE_CHECKING

from kcodec.errors import DecodeError
from kcodec.frames import FrameSplitter, peek_request, peek_response_correlation_id, produce_acks

from .frame_reader import FrameReader
from .request_stream import streamable
from .rewrite import rewritten
from .slot import STREAMED, Prefix, Slot
from .upstream_side import FAULT_DELAY, UPSTREAM_FULL, WAITING, UpstreamSide
from .versions import API_VERSIONS, API_VERSIONS_RANGE, PRODUCE, too_new_api_versions

__all__ = ["Session", "UpstreamSide", "FAULT_DELAY", "UPSTREAM_FULL", "WAITING"]

C2K, K2U, U2K, K2C = 0, 1, 2, 3  # trace directions (shim.trace.records)

if TYPE_CHECKING:
    from .views import ListenerView, ProxyView

log = logging.getLogger("kshim.proxy")

HIGH_WATER = 4 * 1024 * 1024


class Session(FrameReader):
    """The client side of one connection (an asyncio Protocol); owns the upstream side."""

    def __init__(self, proxy: ProxyView, listener: ListenerView):
        self.proxy, self.listener = proxy, listener
        self.splitter = FrameSplitter(proxy.cfg.max_frame_bytes)
        self.pending: deque[Slot] = deque()
        self.awaiting: deque[Slot] = deque()
        self.local: Slot | None = None  # the locally answered request in flight (at most one)
        self.waiting: deque = deque()   # (frame, api_key, version, corr, faults) behind it, in order
        self.waiting_bytes = 0
        self._draining = False
        self._paused = 0                # UPSTREAM_FULL | FAULT_DELAY | WAITING
        self.early: list = []           # frames received before the upstream connection is up
        # writes gathered while one read's frames are handled, sent with one writelines (a syscall)
        # after it: None when not gathering
        self.up_out: list | None = None
        self.passing = 0                # bytes of a request streamed to the broker still to pass on
        self.client_out: list | None = None
        self.transport: asyncio.Transport | None = None
        self.upstream: asyncio.Transport | None = None
        self.upstream_proto: "UpstreamSide | None" = None
        self.peer = "?"
        self.peer_host = ""
        self.client_id: str | None = None
        self.auth = None                # shim.groupservice.authz.ConnAuth once SASL or the authorizer sees it
        self.closed = False
        self.connecting = False
        self.tracer = proxy.tracer
        self.conn_id = self.tracer.new_conn() if self.tracer is not None else 0
        # traced frames passed on as they arrive: [api_key, version, corr, client_id, parts] (else None)
        self.traced_request: list | None = None
        self.traced_answer: list | None = None

    # ------------------------------------------------------------------ client side
    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.peer_host = f"/{peer[0]}" if peer else ""
        self.proxy.sessions.add(self)
        if self.tracer is not None:
            self.tracer.conn_open(self.conn_id, self.peer, self.listener.name)

    def _start_upstream(self) -> None:
        """The upstream connection opens with the first request that needs it: a connection that only
        idles or talks to kshim's coordinator costs the broker nothing (scripts/bench-connections)."""
        self.connecting = True
        asyncio.get_running_loop().create_task(self._connect_upstream())

    async def _connect_upstream(self) -> None:
        try:
            broker = self.listener.upstream_for_new_connection()
            transport, proto = await self.proxy.open_upstream(broker, lambda: UpstreamSide(self))
        except Exception as e:  # broker down, refused, TLS failure
            log.warning("client %s on %s: upstream unavailable (%s); closing", self.peer, self.listener.name, e)
            self.close()
            return
        if self.closed:
            transport.close()
            return
        self.upstream, self.upstream_proto = transport, proto
        if self.tracer is not None:
            self.tracer.upstream_open(self.conn_id, f"{broker.host}:{broker.port}")
        if self.early:
            for frame in self.early:
                self._write_upstream(frame)
            self.early = []

    # the client's reads (FrameReader.data_received): requests, a large one streamed to the broker
    def gather(self) -> None:
        self.up_out = []                     # several requests in one read: one write upstream

    def flush_upstream(self) -> None:
        out, self.up_out = self.up_out, None
        if out and self.upstream is not None:
            self.upstream.writelines(out)

    flush = flush_upstream

    def bad_stream(self, err: DecodeError) -> None:
        self.bad_input(str(err))

    def may_stream(self, _size: int, body) -> bool:
        return streamable(self, body)

    def stream_head(self, size: int, body) -> None:
        self.upstream.writelines((Prefix.of(size), body))
        if self.traced_request is not None:
            self.traced_request[4].append(body)

    def stream_more(self, data, last: bool) -> None:
        if not self.closed:
            self.upstream.write(data)
        traced = self.traced_request
        if traced is not None:
            traced[4].append(data)
            if last:
                self.traced_request = None
                self.tracer.streamed(self.conn_id, (C2K, K2U), *traced)

    def flush_client(self) -> None:
        out, self.client_out = self.client_out, None
        if out and self.transport is not None:
            self.transport.writelines(out)

    def on_request(self, frame) -> None:
        if self.closed:                      # closed by an earlier request of the same read
            return
        try:
            api_key, version, corr, client_id = peek_request(frame)
        except DecodeError as e:
            self.bad_input(f"unreadable request header: {e}")
            return
        if client_id is not None:
            self.client_id = client_id
        tracer = self.tracer
        if tracer is not None:
            tracer.frame(self.conn_id, C2K, api_key, version, corr, frame, client_id)
        allowed = self.proxy.allowed.get(api_key)
        if api_key != API_VERSIONS:
            if allowed is None:
                self.bad_input(f"api key {api_key} is not supported through kshim")
                return
            if not allowed[0] <= version <= allowed[1]:
                self.bad_input(f"api key {api_key} version {version} is outside the advertised "
                               f"range {allowed[0]}-{allowed[1]}")
                return
        if self.proxy.metrics is not None:
            self.proxy.metrics.request(api_key, version)
        self.dispatch(frame, api_key, version, corr)

    on_frame = on_request

    def dispatch(self, frame, api_key: int, version: int, corr: int, faults: bool = True) -> None:
        """A checked request goes on now, or waits its turn (one request at a time: a request of the
        routing table once every earlier one is answered, any request while a local one is in flight).
        A request released after a fault delay comes back with faults=False."""
        if self.local is not None or self.waiting or (self.pending and api_key in self.proxy.routes):
            frame = bytes(frame)
            self.waiting.append((frame, api_key, version, corr, faults))
            self.waiting_bytes += len(frame)
            if self.waiting_bytes > HIGH_WATER:
                self.pause_client(WAITING)
            return
        self._route(frame, api_key, version, corr, faults)

    def _drain(self) -> None:
        """Route the waiting requests whose turn has come (called when a slot completes)."""
        if self._draining:                   # a handler answering at once: the loop below goes on
            return
        self._draining = True
        waiting, routes = self.waiting, self.proxy.routes
        try:
            while waiting and self.local is None and not self.closed:
                frame, api_key, version, corr, faults = waiting[0]
                if self.pending and api_key in routes:
                    break
                waiting.popleft()
                self.waiting_bytes -= len(frame)
                self._route(frame, api_key, version, corr, faults)
        finally:
            self._draining = False
        if self._paused & WAITING and self.waiting_bytes <= HIGH_WATER // 2:
            self.resume_client(WAITING)

    def _route(self, frame, api_key: int, version: int, corr: int, faults: bool) -> None:
        """Fault injection first (shim/proxy/faults.py), then the routing table or the broker."""
        injector = self.proxy.faults
        if faults and (injector.rules or injector.held) and injector.intercept(self, api_key, version, frame):
            return
        tracer = self.tracer
        if api_key == API_VERSIONS and version > self.proxy.allowed.get(API_VERSIONS, API_VERSIONS_RANGE)[1]:
            slot = Slot(API_VERSIONS, version, corr, False)    # answered here, in order (versions.py)
            self.pending.append(slot)
            self.complete(slot, too_new_api_versions(corr, self.proxy.allowed))
            return
        handler = self.proxy.routes.get(api_key)
        if handler is not None:
            slot = Slot(api_key, version, corr, False)
            self.pending.append(slot)
            if handler(self, slot, frame):   # taken: the handler completes the slot, now or later
                if slot.data is None and not self.closed:
                    self.local = slot        # later requests wait until it is answered
                return
            self.pending.pop()               # declined (e.g. a transaction-key FindCoordinator)
            if slot.watch is not None:       # forwarded, answer watched (EndTxn)
                slot.rewrite = True
                self.pending.append(slot)
                self.awaiting.append(slot)
                if tracer is not None:
                    tracer.frame(self.conn_id, K2U, api_key, version, corr, frame)
                self._forward(frame)
                return
        if api_key == PRODUCE:
            try:
                acks = produce_acks(frame, version)
            except DecodeError as e:
                self.bad_input(f"unreadable Produce request: {e}")
                return
            if acks == 0:
                if tracer is not None:
                    tracer.frame(self.conn_id, K2U, api_key, version, corr, frame)
                self._forward(frame)
                return
        self.take_slot(api_key, version, corr, rewritten(api_key, version))
        if tracer is not None:
            tracer.frame(self.conn_id, K2U, api_key, version, corr, frame)
        self._forward(frame)

    def take_slot(self, api_key: int, version: int, corr: int, rewrite: bool) -> None:
        """The response slot of a request forwarded to the broker, in arrival order."""
        slot = Slot(api_key, version, corr, rewrite)
        if self.proxy.metrics is not None:
            slot.sent = self.proxy.metrics.clock()
        self.pending.append(slot)
        self.awaiting.append(slot)

    def _forward(self, frame) -> None:
        if self.upstream is None:
            self.early.append(bytes(frame))
            if not self.connecting:
                self._start_upstream()
        else:
            self._write_upstream(frame)

    def _write_upstream(self, frame) -> None:
        out = self.up_out
        if out is None:
            self.upstream.writelines((Prefix.of(len(frame)), frame))
        else:
            out += (Prefix.of(len(frame)), frame)

    def complete(self, slot: Slot, data) -> None:
        """Fill a slot (from a local handler or an upstream answer) and send what is in order."""
        slot.data = data
        if slot is self.local:
            self.local = None
        pending = self.pending
        transport = self.transport
        tracer = self.tracer
        metrics = self.proxy.metrics
        while pending and pending[0].data is not None:
            done = pending.popleft()
            out = done.data
            if metrics is not None:
                metrics.response(done, out)
            if not self.closed and out is not STREAMED:
                ts = monotonic_ns() if tracer is not None else None   # before the write: see Tracer.frame
                gathered = self.client_out
                if gathered is None:
                    transport.writelines((Prefix.of(len(out)), out))
                else:
                    gathered += (Prefix.of(len(out)), out)
                if tracer is not None:
                    tracer.frame(self.conn_id, K2C, done.api_key, done.version, done.correlation_id, out, ts=ts)
        if self.waiting:
            self._drain()

    def bad_input(self, reason: str) -> None:
        log.warning("closing client %s (client id %r) on %s: %s", self.peer, self.client_id,
                    self.listener.name, reason)
        self.proxy.stats["bad_input"] += 1
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.waiting.clear()                 # requests not yet handled go with the connection
        self.waiting_bytes = 0
        if self.proxy.faults.held:
            self.proxy.faults.forget(self)
        self.flush_client()                  # what was answered before the close still goes out
        self.flush_upstream()
        if self.tracer is not None:
            self.tracer.conn_close(self.conn_id)
        if self.transport is not None:
            self.transport.close()
        if self.upstream is not None:
            self.upstream.close()
        self.proxy.sessions.discard(self)

    def connection_lost(self, exc) -> None:
        self.close()

    # flow control: a slow client pauses the broker side, a slow broker pauses the client side
    def pause_client(self, reason: int) -> None:
        """Stop reading the client socket for `reason` (reading resumes when no reason is left)."""
        if not self._paused and self.transport is not None and not self.closed:
            self.transport.pause_reading()
        self._paused |= reason

    def resume_client(self, reason: int) -> None:
        if self._paused & reason:
            self._paused &= ~reason
            if not self._paused and self.transport is not None and not self.closed:
                self.transport.resume_reading()

    def pause_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None and not self.closed:
            self.upstream.resume_reading()

    # ------------------------------------------------------------------ upstream side
    def on_response(self, frame) -> None:
        if not self.awaiting:
            log.warning("broker sent an unexpected response on %s's connection; closing", self.peer)
            self.close()
            return
        slot = self.awaiting.popleft()
        try:
            corr = peek_response_correlation_id(frame)
        except DecodeError:
            corr = None
        if corr != slot.correlation_id:
            log.warning("broker response correlation id %s, expected %s (client %s); closing",
                        corr, slot.correlation_id, self.peer)
            self.close()
            return
        if self.tracer is not None:
            self.tracer.frame(self.conn_id, U2K, slot.api_key, slot.version, corr, frame)
        if slot.sent:
            self.proxy.metrics.upstream_latency(slot.api_key, slot.sent)
        if not slot.rewrite:
            self.complete(slot, frame)
            return
        watch = slot.watch
        if watch is not None:
            watch(self, slot, frame)
            return
        try:
            result = self.proxy.rewriter.rewrite(slot.api_key, slot.version, frame)
        except Exception as e:  # a response kshim cannot read: the connection cannot go on safely
            log.error("cannot rewrite api key %s v%s response for %s: %s; closing",
                      slot.api_key, slot.version, self.peer, e)
            self.close()
            return
        if result.learned:
            task = asyncio.get_running_loop().create_task(self.proxy.ensure_listeners(result.learned))
            task.add_done_callback(lambda _t: self.complete(slot, result.frame))
        else:
            self.complete(slot, result.frame)

    def start_stream(self, size: int, corr: int) -> bool:
        """Pass the broker's answer now arriving (`size` bytes, correlation id `corr`) on to the
        client as its bytes come (UpstreamSide.data_received), instead of holding it whole first: only
        when it is next out to the client, is forwarded unchanged, and metrics do not want the whole
        frame. A large Fetch answer then reaches the client while it still arrives; the tracer gets
        its parts once it is through (Tracer.streamed)."""
        awaiting, pending = self.awaiting, self.pending
        if self.closed or not awaiting or self.proxy.metrics is not None:
            return False
        slot = awaiting[0]
        if slot.rewrite or slot.correlation_id != corr or pending[0] is not slot:
            return False
        awaiting.popleft()
        self.transport.write(Prefix.of(size))
        if self.tracer is not None:
            self.traced_answer = [slot.api_key, slot.version, corr, None, []]
        return True

    def pass_on(self, data, last: bool) -> None:
        """Bytes of the answer being streamed; `last`: its end (the slot completes, later ones follow)."""
        if self.closed:
            return
        self.transport.write(data)
        traced = self.traced_answer
        if traced is not None:
            traced[4].append(data)
        if last:
            if traced is not None:
                self.traced_answer = None
                self.tracer.streamed(self.conn_id, (U2K, K2C), *traced)
            self.complete(self.pending[0], STREAMED)

    def upstream_lost(self, exc) -> None:
        if not self.closed:
            log.info("upstream connection of client %s on %s closed (%s); closing the client",
                     self.peer, self.listener.name, exc or "EOF")
        self.close()
