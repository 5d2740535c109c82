"""SASL for kshim's own upstream connections: PLAIN and SCRAM-SHA-256/512 (RFC 5802, RFC 7677),
over SaslHandshake v1 + SaslAuthenticate (KIP-152). Clients' own SASL exchanges never come here:
they are forwarded byte for byte on their dedicated upstream connection."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from typing import Protocol

from kcodec import api
from kcodec.protocol import ApiKey

SASL_HANDSHAKE, SASL_AUTHENTICATE = ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE


class SaslError(ConnectionError):
    pass


class Requester(Protocol):
    """What authentication needs of a connection (client.py's `UpstreamClient`, before it is handed out)."""

    def version_for(self, api_key: int, wanted: int) -> int: ...

    async def request(self, api_key: int, version: int, body, timeout: float = 10.0): ...


async def authenticate(client: Requester, cfg) -> None:
    mech = cfg.upstream_sasl_mechanism.upper()
    hs = await client.request(SASL_HANDSHAKE, 1, api.REQUESTS[SASL_HANDSHAKE](mechanism=mech))
    if hs.error_code:
        raise SaslError(f"upstream refused SASL mechanism {mech} (error {hs.error_code}); "
                        f"it offers {hs.mechanisms}")
    if mech == "PLAIN":
        token = b"\0" + cfg.upstream_sasl_username.encode() + b"\0" + cfg.upstream_sasl_password.encode()
        await _step(client, token)
        return
    scram = ScramClient(mech, cfg.upstream_sasl_username, cfg.upstream_sasl_password)
    server_first = await _step(client, scram.client_first())
    server_final = await _step(client, scram.client_final(server_first))
    scram.verify(server_final)


async def _step(client: Requester, token: bytes) -> bytes:
    v = client.version_for(SASL_AUTHENTICATE, 2)
    resp = await client.request(SASL_AUTHENTICATE, v, api.REQUESTS[SASL_AUTHENTICATE](auth_bytes=token))
    if resp.error_code:
        raise SaslError(f"upstream SASL authentication failed: {resp.error_message or resp.error_code}")
    return resp.auth_bytes


class ScramClient:
    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None):
        self.hash = hashlib.sha256 if mechanism.endswith("256") else hashlib.sha512
        self.username = username.replace("=", "=3D").replace(",", "=2C")
        self.password = password.encode()
        self.nonce = nonce or base64.b64encode(os.urandom(24)).decode()
        self.first_bare = f"n={self.username},r={self.nonce}"
        self.server_signature = b""

    def client_first(self) -> bytes:
        return f"n,,{self.first_bare}".encode()

    def client_final(self, server_first: bytes) -> bytes:
        attrs = dict(item.split("=", 1) for item in server_first.decode().split(","))
        nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        if not nonce.startswith(self.nonce):
            raise SaslError("SCRAM server nonce does not extend ours")
        salted = hashlib.pbkdf2_hmac(self.hash().name, self.password, salt, iterations)
        client_key = hmac.new(salted, b"Client Key", self.hash).digest()
        stored_key = self.hash(client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(stored_key, auth_message, self.hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        server_key = hmac.new(salted, b"Server Key", self.hash).digest()
        self.server_signature = hmac.new(server_key, auth_message, self.hash).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attrs = dict(item.split("=", 1) for item in server_final.decode().split(","))
        if "e" in attrs:
            raise SaslError(f"SCRAM server error: {attrs['e']}")
        if not hmac.compare_digest(base64.b64decode(attrs.get("v", "")), self.server_signature):
            raise SaslError("SCRAM server signature does not verify")
