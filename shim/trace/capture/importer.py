"""Captured TCP segments into Kafka connections and their trace records (`kshim trace import`).

Which TCP connections are Kafka: those with an end on one of the `ports` (that end is the broker),
and any other whose client's first bytes are a valid ApiVersions, Metadata or SaslHandshake request
(the first request of every Kafka client). The client is the end that sent the SYN; without a
handshake in the capture, the end that is not on a broker port (or whose bytes parse as a request).
TLS connections (a TLS record where a Kafka frame should start) cannot be decoded: they are counted
and named, never guessed at.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kcodec.protocol import ApiKey

from .connections import Connection
from .framing import request_header_ok
from .packets import ACK, FIN, RST, SYN, Segment

# a connection's RST or last FIN closes it this long (capture time) later: a capture may write the two
# directions' packets out of order, so data sent before the close can come after it in the file
CLOSE_LINGER_S = 1.0
FIRST_REQUESTS = frozenset({int(ApiKey.API_VERSIONS), int(ApiKey.METADATA), int(ApiKey.SASL_HANDSHAKE)})


def looks_like_tls(data: bytes) -> bool:
    """A TLS record header: handshake (22) or application data (23), version 3.x."""
    return len(data) >= 3 and data[0] in (0x14, 0x15, 0x16, 0x17) and data[1] == 3 and data[2] <= 4


@dataclass
class Flow:
    """A TCP connection not known to be Kafka yet (or known not to be)."""
    client: tuple | None = None
    verdict: str | None = None     # None: undecided; "kafka" | "tls" | "other"
    syn_seq: int | None = None     # the client's SYN
    held: list = field(default_factory=list)    # segments seen while undecided
    first: bytes = b""             # the client's first bytes (its first request's header decides)


@dataclass
class ImportStats:
    connections: int = 0
    tls: list = field(default_factory=list)          # "client -> server" of TLS connections
    not_kafka: int = 0
    records: int = 0
    frames: int = 0


class Importer:
    """`feed(segment)` in capture order, then `finish()`; `emit(record)` gets every trace record."""

    def __init__(self, ports: set[int], emit, bodies: bool = False, detect: bool = True):
        self.ports = set(ports)
        self.emit_out = emit
        self.bodies = bodies
        self.detect = detect
        self.conns: dict[tuple, Connection] = {}    # (client, server) -> open connection
        self.flows: dict[tuple, Flow] = {}          # frozenset of ends -> flow verdict
        self.done: list[Connection] = []
        self.closing: deque[Connection] = deque()    # closed by RST / FIN, in the order seen
        self.next_id = 0
        self.stats = ImportStats()
        self.last_ts = 0.0

    def emit(self, rec: dict) -> None:
        self.stats.records += 1
        if rec.get("type") == "frame":
            self.stats.frames += 1
        self.emit_out(rec)

    # -------------------------------------------------------------- segments
    def feed(self, seg: Segment) -> None:
        self.last_ts = seg.ts
        while self.closing and seg.ts - self.closing[0].closing_at > CLOSE_LINGER_S:
            self._close(self.closing.popleft(), seg.ts)
        key = (seg.src, seg.dst)
        conn = self.conns.get(key) or self.conns.get((seg.dst, seg.src))
        if seg.flags & SYN and not seg.flags & ACK:      # a new connection from seg.src
            if conn is not None and not conn.opened_by_syn and not (conn.up.bytes or conn.down.bytes):
                conn.opened_by_syn = True                # its SYN+ACK was captured first
                conn.up.syn(seg.seq)
                return
            if conn is not None:
                self._close(conn, seg.ts)
            flow = self.flows[frozenset(key)] = Flow(client=seg.src, syn_seq=seg.seq)
            if seg.dst[1] in self.ports:
                flow.verdict = "kafka"
                self._open(seg.src, seg.dst, seg.ts, syn=True).up.syn(seg.seq)
            return
        if conn is None:
            self._classify(seg)
            return
        self._feed_conn(conn, seg)

    def _feed_conn(self, conn: Connection, seg: Segment) -> None:
        c2b = seg.src == conn.client
        if c2b and seg.data and not conn.saw_data:
            conn.saw_data = True
            if looks_like_tls(seg.data):       # TLS on a broker port: counted, never decoded
                self.stats.tls.append(f"{conn.peer} -> {conn.listener}")
                self.stats.connections -= 1
                self.flows[frozenset((conn.client, conn.server))] = Flow(client=conn.client, verdict="tls")
                self.conns.pop((conn.client, conn.server), None)
                conn.closed = True
                self.emit(conn.record("conn_close", seg.ts))
                return
        half = conn.up if c2b else conn.down
        if seg.flags & SYN:                              # SYN+ACK from the broker
            half.syn(seg.seq)
            return
        if seg.wire_len:
            half.segment(seg.seq, seg.data, seg.wire_len, seg.ts)
        if seg.flags & RST or seg.flags & FIN and len(conn.fins | {c2b}) == 2:
            if conn.closing_at is None:
                conn.closing_at = seg.ts
                self.closing.append(conn)
        if seg.flags & FIN:
            conn.fins.add(c2b)

    def _classify(self, seg: Segment) -> None:
        """A segment of a connection not known to be Kafka: decided on here (held until the client's
        first request header is whole), then given to the connection with what was held."""
        ends = frozenset((seg.src, seg.dst))
        flow = self.flows.get(ends)
        if flow is None:
            flow = self.flows[ends] = Flow()
        if flow.verdict in ("tls", "other"):
            return
        if flow.client is None:
            if seg.dst[1] in self.ports and seg.src[1] not in self.ports:
                flow.client = seg.src
            elif seg.src[1] in self.ports and seg.dst[1] not in self.ports:
                flow.client = seg.dst
        on_port = flow.client is not None and (seg.dst if flow.client == seg.src else seg.src)[1] in self.ports
        from_client = flow.client == seg.src
        if seg.data and looks_like_tls(seg.data) and (from_client or flow.client is None) and not flow.first:
            flow.verdict = "tls"
            c = flow.client or seg.src
            s = seg.dst if c == seg.src else seg.src
            self.stats.tls.append(f"{c[0]}:{c[1]} -> {s[0]}:{s[1]}")
            return
        flow.held.append(seg)
        if on_port:
            return self._decided(flow, seg)
        if not self.detect or not seg.data:
            return
        if flow.client is None or from_client:
            flow.first += seg.data
            if len(flow.first) < 14:
                return
            if request_header_ok(flow.first, 0) and int.from_bytes(flow.first[4:6], "big") in FIRST_REQUESTS:
                flow.client = flow.client or seg.src
                return self._decided(flow, seg)
        if flow.first or len(flow.held) > 64:
            flow.verdict, flow.held = "other", []
            self.stats.not_kafka += 1

    def _decided(self, flow: Flow, seg: Segment) -> None:
        flow.verdict = "kafka"
        client = flow.client
        server = seg.dst if client == seg.src else seg.src
        conn = self._open(client, server, flow.held[0].ts, syn=flow.syn_seq is not None)
        if flow.syn_seq is not None:
            conn.up.syn(flow.syn_seq)
        held, flow.held = flow.held, []
        for s in held:
            self._feed_conn(conn, s)

    def _open(self, client: tuple, server: tuple, ts: float, syn: bool) -> Connection:
        self.next_id += 1
        self.stats.connections += 1
        conn = Connection(self.next_id, client, server, self.emit, self.bodies, syn)
        self.conns[(client, server)] = conn
        self.emit(conn.record("conn_open", ts))
        return conn

    def _close(self, conn: Connection, ts: float) -> None:
        """Ends a connection: at its RST / last FIN if one was seen (a new SYN on its ends, the
        capture's end or CLOSE_LINGER_S after it), else now."""
        if conn.closed:
            return
        ts = conn.closing_at if conn.closing_at is not None else ts
        conn.closed = True
        conn.up.close(ts)
        conn.down.close(ts)
        self.conns.pop((conn.client, conn.server), None)
        self.done.append(conn)
        self.emit(conn.record("conn_close", ts))

    def finish(self) -> list[dict]:
        """Ends what is still open (without a close record: the capture ended, not the connection);
        returns the per-connection figures."""
        while self.closing:
            self._close(self.closing.popleft(), self.last_ts)
        for conn in list(self.conns.values()):
            conn.up.close(self.last_ts)
            conn.down.close(self.last_ts)
            self.done.append(conn)
        self.conns.clear()
        return [c.stats() for c in sorted(self.done, key=lambda c: c.id)]
