"""One captured Kafka connection: its two reassembled directions, its requests waiting for an answer,
and its frames as kshim trace records (the fields `kshim run --trace` writes, shim/trace/records.py).

Directions are named for what was captured: `client->broker` and `broker->client` (kshim's own traces
have four hops; a capture taken on kshim's client port has these two). A response's API and version
come from its request, matched by correlation id on the connection (answers come in request order,
so requests passed over by an answer got none: Produce with acks=0, or lost in a hole).
"""

from __future__ import annotations

import struct
from collections import OrderedDict

from kcodec import api
from kcodec.errors import DecodeError
from kcodec.frames import produce_acks
from kcodec.protocol import ApiKey

from .. import records as R
from .framing import Framer
from .streams import HalfStream

C2B, B2C = "client->broker", "broker->client"
PRODUCE = int(ApiKey.PRODUCE)
MAX_PENDING = 4096


def _wall(ts: float) -> tuple[int, int]:
    ns = int(round(ts * 1e9))
    return ns, ns // 1_000_000


def _acks(frame: bytes) -> int | None:
    try:
        return produce_acks(frame)
    except DecodeError:
        return None


class Connection:
    def __init__(self, cid: int, client: tuple, server: tuple, emit, bodies: bool, opened_by_syn: bool):
        self.id = cid
        self.client, self.server = client, server
        self.peer, self.listener = f"{client[0]}:{client[1]}", f"{server[0]}:{server[1]}"
        self.emit = emit
        self.bodies = bodies
        self.opened_by_syn = opened_by_syn
        self.pending: OrderedDict[int, tuple] = OrderedDict()   # corr -> (api key, version, ts)
        self.context: dict[int, dict] = {}                       # corr -> a request's group fields
        self.last_corr: int | None = None
        self.client_id: str | None = None
        self.client_sw: tuple | None = None
        self.unanswered = 0              # requests an answer passed over
        self.unmatched = 0               # answers to no request seen
        self.undecoded = 0
        self.closed = False
        self.closing_at: float | None = None       # capture time of its RST / last FIN
        self.saw_data = False            # the client's first bytes seen (TLS is told from them)
        self.early: dict[int, tuple] = {}          # corr -> (frame, ts) of answers seen before their request
        self.fins: set = set()           # the directions that sent a FIN
        self.up = HalfStream(Framer(True, self, self._request))
        self.down = HalfStream(Framer(False, self, self._response))

    def framers(self) -> tuple[Framer, Framer]:
        return self.up.sink, self.down.sink

    def _base(self, ts: float, d: str) -> dict:
        ns, ms = _wall(ts)
        rec = {"type": "frame", "ts_ns": ns, "wall_ms": ms, "conn": self.id, "dir": d, "peer": self.peer,
               "listener": self.listener}
        if self.client_id is not None:
            rec["client_id"] = self.client_id
        if self.client_sw:
            rec["client_sw"], rec["client_sw_version"] = self.client_sw
        return rec

    def _request(self, frame: bytes, ts: float) -> None:
        try:
            key, version = struct.unpack_from(">hh", frame, 0)
            header, pos = api.RequestHeader.decode_from(frame, 0, api.request_header_version(key, version))
        except Exception:
            self.undecoded += 1
            return
        corr = header.correlation_id
        self.last_corr = corr
        if header.client_id is not None:
            self.client_id = header.client_id
        expects = not (key == PRODUCE and _acks(frame) == 0)
        if expects:
            self.pending[corr] = (key, version, ts)
            if len(self.pending) > MAX_PENDING:
                self.pending.popitem(last=False)
        rec = self._base(ts, C2B)
        rec.update(api_key=key, api=R.api_name(key), api_version=version, corr=corr, size=len(frame))
        if R.wants_frame(key, True, self.bodies):
            desc = R.describe(key, version, frame, True, self.bodies)
            if "client_sw" in desc:
                self.client_sw = (desc["client_sw"], desc.get("client_sw_version"))
                rec["client_sw"], rec["client_sw_version"] = self.client_sw
            rec.update(desc)
            if "group" in rec:
                self.context[corr] = {k: rec[k] for k in ("group", "instance", "member", "generation") if k in rec}
                if len(self.context) > MAX_PENDING:
                    del self.context[next(iter(self.context))]
        self.emit(rec)
        early = self.early.pop(corr, None)
        if early is not None and corr in self.pending:
            self._response(early[0], max(early[1], ts))
        elif expects:
            self.down.sink.retry()        # its answer may be among bytes kept out of step

    def _response(self, frame: bytes, ts: float) -> None:
        if len(frame) < 4:
            self.undecoded += 1
            return
        corr = struct.unpack_from(">i", frame, 0)[0]
        if corr not in self.pending and self.up.give_up_holes(ts) and corr in self.pending:
            pass                          # its request was held behind a hole the capture missed
        elif corr not in self.pending:
            # its request may be captured after it (the two directions' packets reordered by the
            # capture): held until that request comes, counted as unmatched if it never does
            self.early[corr] = (frame, ts)
            if len(self.early) > 64:
                del self.early[next(iter(self.early))]
                self.unmatched += 1
            return
        while next(iter(self.pending)) != corr:     # asked before it, in request order: never answered
            self.pending.popitem(last=False)
            self.unanswered += 1
        key, version, asked = self.pending.pop(corr)
        rec = self._base(max(ts, asked), B2C)     # an answer captured before its request: not before it
        rec.update(api_key=key, api=R.api_name(key), api_version=version, corr=corr, size=len(frame))
        if R.wants_frame(key, False, self.bodies):
            rec.update(R.describe(key, version, frame, False, self.bodies))
        ctx = self.context.pop(corr, None)
        if ctx:
            for k, v in ctx.items():
                rec.setdefault(k, v)
        self.emit(rec)

    def record(self, kind: str, ts: float) -> dict:
        ns, ms = _wall(ts)
        rec = {"type": kind, "ts_ns": ns, "wall_ms": ms, "conn": self.id, "peer": self.peer,
               "listener": self.listener}
        if kind == "conn_close" and self.client_id is not None:
            rec["client_id"] = self.client_id
        return rec

    def stats(self) -> dict:
        up, down = self.framers()
        return {"conn": self.id, "peer": self.peer, "listener": self.listener, "client_id": self.client_id,
                "handshake_seen": self.opened_by_syn, "requests": up.frames, "responses": down.frames,
                # frames cut by a hole, answers whose request was lost, requests whose answer was lost
                # (a request and its answer both lost leave only the hole's size: gap_bytes)
                "lost_frames": up.lost + down.lost + self.unmatched + len(self.early) + self.unanswered,
                "resyncs": up.resyncs + down.resyncs,
                "skipped_bytes": up.skipped_bytes + down.skipped_bytes,
                "gap_bytes": self.up.gap_bytes + self.down.gap_bytes,
                "duplicate_bytes": self.up.duplicate_bytes + self.down.duplicate_bytes,
                "unanswered": self.unanswered, "pending_at_end": len(self.pending),
                "unmatched_responses": self.unmatched + len(self.early),
                "undecoded": self.undecoded}
