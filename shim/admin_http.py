"""The admin HTTP endpoint (`--admin-port`, on 127.0.0.1 only): fault rules and metrics.

    GET    /metrics          Prometheus text format (shim/metrics.py)
    GET    /faults           {"rules": [...]} with each rule's id and matched/applied counters
    POST   /faults           a rule object or a list of them (JSON, fields as in shim/faultrules.py);
                             adds them, answers {"added": [...]} (400 with the reason when invalid)
    DELETE /faults           removes every rule; DELETE /faults/<id> removes one
A minimal HTTP/1.1 server on asyncio (one request per connection, `Connection: close`).
"""

from __future__ import annotations

import asyncio
import json
import logging

log = logging.getLogger("kshim.admin")

MAX_BODY = 1 << 20
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 413: "Payload Too Large"}


class AdminServer:
    def __init__(self, proxy, port: int, host: str = "127.0.0.1"):
        self.proxy, self.port, self.host = proxy, port, host
        self.server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self.server.sockets[0].getsockname()[1]
        log.info("admin endpoint on http://%s:%s (/metrics, /faults)", self.host, self.port)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, ctype, body = await asyncio.wait_for(self._request(reader), 10)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.LimitOverrunError):
            status, ctype, body = 400, "text/plain", b"bad request\n"
        head = (f"HTTP/1.1 {status} {REASONS.get(status, '')}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        try:
            writer.write(head + body)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _request(self, reader: asyncio.StreamReader) -> tuple[int, str, bytes]:
        line = (await reader.readline()).decode("latin-1").strip()
        parts = line.split()
        if len(parts) != 3:
            raise ValueError(line)
        method, target = parts[0].upper(), parts[1].split("?", 1)[0]
        length = 0
        while True:
            h = (await reader.readline()).decode("latin-1").strip()
            if not h:
                break
            name, _, value = h.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if length > MAX_BODY:
            return 413, "text/plain", b"body too large\n"
        body = await reader.readexactly(length) if length else b""
        return self.route(method, target, body)

    def route(self, method: str, target: str, body: bytes) -> tuple[int, str, bytes]:
        faults = self.proxy.faults
        if target == "/metrics":
            if method != "GET":
                return 405, "text/plain", b"GET only\n"
            text = self.proxy.metrics.render(self.proxy) if self.proxy.metrics is not None else ""
            return 200, "text/plain; version=0.0.4; charset=utf-8", text.encode()
        if target == "/faults" or target.startswith("/faults/"):
            from .faultrules import FaultError
            if method == "GET":
                return _json(200, {"rules": faults.describe()})
            if method == "POST" and target == "/faults":
                try:
                    added = faults.add(json.loads(body or b"null"))
                except (FaultError, ValueError) as e:
                    return _json(400, {"error": str(e)})
                log.info("fault rules added: %s", [r.describe() for r in added])
                return _json(200, {"added": [r.describe() for r in added]})
            if method == "DELETE":
                rid = target[len("/faults/"):] if target.startswith("/faults/") else ""
                if rid and not rid.isdigit():
                    return _json(404, {"error": f"no rule {rid!r}"})
                removed = faults.clear(int(rid) if rid else None)
                log.info("fault rules removed: %d", removed)
                return _json(200, {"removed": removed})
            return 405, "text/plain", b"GET, POST or DELETE\n"
        return 404, "text/plain", b"try /metrics or /faults\n"


def _json(status: int, obj) -> tuple[int, str, bytes]:
    return status, "application/json", (json.dumps(obj) + "\n").encode()
