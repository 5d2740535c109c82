"""A raw Kafka wire client (used by `kshim compat` and the tests): send hand-picked requests (encoded
with kcodec), pipelined or not, and read the answers (or the connection closing)."""

from __future__ import annotations

import socket
import struct

from kcodec import api
from kcodec.protocol import ApiKey


class Wire:
    def __init__(self, bootstrap: str, timeout: float = 10.0):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation = 0

    def frame(self, api_key: int, version: int, body, correlation_id: int | None = None,
              client_id: str = "kshim-test", header_version: int | None = None) -> tuple[int, bytes]:
        if correlation_id is None:
            self.correlation += 1
            correlation_id = self.correlation
        hv = api.request_header_version(api_key, version) if header_version is None else header_version
        hdr = api.RequestHeader(request_api_key=api_key, request_api_version=version,
                                correlation_id=correlation_id, client_id=client_id)
        payload = hdr.encode(hv) + (body if isinstance(body, (bytes, bytearray)) else body.encode(version))
        return correlation_id, struct.pack(">i", len(payload)) + payload

    def send(self, api_key: int, version: int, body, **kw) -> int:
        corr, data = self.frame(api_key, version, body, **kw)
        self.sock.sendall(data)
        return corr

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._exact(4))[0]
        return self._exact(size)

    def read_response(self, api_key: int, version: int, body_version: int | None = None):
        frame = self.read_frame()
        rhv = 0 if api_key == ApiKey.API_VERSIONS else api.response_header_version(api_key, version)
        hdr, pos = api.ResponseHeader.decode_from(frame, 0, rhv)
        return hdr.correlation_id, api.RESPONSES[api_key].decode(memoryview(frame)[pos:],
                                                                  version if body_version is None else body_version)

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by peer")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
