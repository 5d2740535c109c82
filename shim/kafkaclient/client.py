"""One connection of kshim's own to an upstream broker: request/response in order, the broker's
ApiVersions read at connect (the version `version_for` picks), TLS (`upstream_tls`) and SASL
(sasl.py) as configured with `upstream_*`.

These are not client connections: every request kshim makes itself (topology Metadata, the state
topic, DescribeAcls, AddOffsetsToTxn, the scale-out membership, ListGroups of peer instances) goes
through an `UpstreamClient`.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
from dataclasses import dataclass
from typing import Callable

from kcodec import api
from kcodec.frames import FrameSplitter
from kcodec.protocol import ApiKey

from ..config import Config
from .sasl import authenticate

API_VERSIONS, METADATA = ApiKey.API_VERSIONS, ApiKey.METADATA


@dataclass(frozen=True)
class Broker:
    """An upstream broker as Metadata names it."""
    node_id: int
    host: str
    port: int
    rack: str | None = None


def upstream_tls(cfg: Config) -> ssl.SSLContext | None:
    if not cfg.upstream_tls:
        return None
    ctx = ssl.create_default_context(cafile=cfg.upstream_tls_ca or None)
    ctx.check_hostname = cfg.upstream_tls_check_hostname
    if not cfg.upstream_tls_check_hostname:
        ctx.verify_mode = ssl.CERT_REQUIRED if cfg.upstream_tls_ca else ssl.CERT_NONE
    if cfg.upstream_tls_cert:
        ctx.load_cert_chain(cfg.upstream_tls_cert, cfg.upstream_tls_key or None)
    return ctx


class UpstreamClient:
    """A minimal request/response client over one connection (kshim's own use only)."""

    client_id = "kshim"

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer
        self.correlation = 0
        self.splitter = FrameSplitter(1 << 30)
        self.frames: list = []
        self.versions: dict[int, tuple[int, int]] = {}

    @classmethod
    async def connect(cls, cfg: Config, host: str, port: int, timeout: float = 10.0) -> "UpstreamClient":
        tls = upstream_tls(cfg)
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=tls, server_hostname=host if tls else None), timeout)
        client = cls(reader, writer)
        try:
            resp = await client.request(API_VERSIONS, 3, api.REQUESTS[API_VERSIONS](
                client_software_name="kshim", client_software_version="0.1.0"), timeout=timeout)
            if resp.error_code:
                raise ConnectionError(f"ApiVersions from {host}:{port}: error {resp.error_code}")
            client.versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            if cfg.upstream_sasl_mechanism:
                await authenticate(client, cfg)
        except BaseException:
            writer.close()
            raise
        return client

    def version_for(self, api_key: int, wanted: int) -> int:
        lo, hi = self.versions.get(api_key, (0, wanted))
        cmin, cmax = api.VERSIONS[api_key]
        v = min(wanted, hi, cmax)
        if v < max(lo, cmin):
            raise ConnectionError(f"upstream supports api {api_key} only in {lo}-{hi}")
        return v

    async def request(self, api_key: int, version: int, body, timeout: float = 10.0):
        self.correlation += 1
        hv = api.request_header_version(api_key, version)
        header = api.RequestHeader(request_api_key=api_key, request_api_version=version,
                                   correlation_id=self.correlation, client_id=self.client_id)
        payload = header.encode(hv) + body.encode(version)
        self.writer.write(struct.pack(">i", len(payload)) + payload)
        await self.writer.drain()
        async with asyncio.timeout(timeout):   # (no task per request, unlike wait_for)
            frame = await self._next_frame()
        rhv = api.response_header_version(api_key, version)
        hdr, pos = api.ResponseHeader.decode_from(frame, 0, rhv)
        if hdr.correlation_id != self.correlation:
            raise ConnectionError(f"correlation id {hdr.correlation_id}, expected {self.correlation}")
        return api.RESPONSES[api_key].decode(memoryview(frame)[pos:], version)

    async def _next_frame(self):
        while not self.frames:
            data = await self.reader.read(1 << 16)
            if not data:
                raise ConnectionError("upstream closed the connection")
            self.frames.extend(self.splitter.feed(data))
        return self.frames.pop(0)

    async def metadata(self) -> tuple[list[Broker], object]:
        v = self.version_for(METADATA, 12)
        req = api.REQUESTS[METADATA](topics=[], allow_auto_topic_creation=False)
        resp = await self.request(METADATA, v, req)
        return [Broker(b.node_id, b.host, b.port, b.rack) for b in resp.brokers], resp

    def close(self) -> None:
        self.writer.close()


IO_ERRORS = (OSError, ConnectionError, asyncio.TimeoutError)


class KeptConnection:
    """kshim's own connection for repeated requests (topic Metadata, DescribeAcls): opened on first use
    to the first of `addresses()` and kept; a request that fails on it (I/O, connection lost, no
    usable version) closes it and is tried once more on a new one, unless the error is one of
    `final` (raised at once)."""

    def __init__(self, cfg: Config, addresses: Callable[[], list[tuple[str, int]]]):
        self.cfg, self.addresses = cfg, addresses
        self.client: UpstreamClient | None = None

    async def request(self, api_key: int, wanted: int, make: Callable[[int], object], final: tuple = ()):
        """`make(version)` builds the request body for the version chosen (`version_for`)."""
        for attempt in range(2):
            try:
                if self.client is None:
                    self.client = await UpstreamClient.connect(self.cfg, *self.addresses()[0])
                v = self.client.version_for(api_key, wanted)
                return await self.client.request(api_key, v, make(v))
            except IO_ERRORS as e:
                self.close()
                if attempt or isinstance(e, final):
                    raise

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        self.client = None
