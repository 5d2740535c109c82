"""Authentication and authorization for the group APIs kshim answers itself (the adapter between the
proxy and shim/authz; the request path, request_path.py, and find_coordinator.py call it; refusals
and patched answers go out through the runtime's public `answer`, runtime.py).

- SASL listener (kshim's upstream needs SASL): each connection's SaslHandshake and SaslAuthenticate
  are still forwarded untouched, but watched (`Slot.watch`) to learn the mechanism, the user name
  and the broker's verdict (shim/authz/principal.py). A group request (or FindCoordinator) before
  the broker accepted the exchange closes the connection, as the broker's SaslServerAuthenticator
  does with any request but ApiVersions/SaslHandshake/SaslAuthenticate before authentication.
- `authorizer = true`: the broker's ACLs are read with DescribeAcls on kshim's own upstream
  connection at start (kshim does not start without them) and every `authorizer_refresh_ms` (a
  failed refresh keeps the last ACLs), and every group request is authorized as KafkaApis does
  (shim/authz/apis.py) for the connection's principal ("User:<name>"; "User:ANONYMOUS" on a listener
  without SASL) from the client's IP address. Super users and allow.everyone.if.no.acl.found are
  kshim settings that must mirror the broker's (`authorizer_super_users`, ...).
Per connection state lives in `Connection.auth` (a `ConnAuth`), so it goes with the connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from typing import TYPE_CHECKING, Callable

from kcodec import api
from kcodec.errors import DecodeError
from kcodec.protocol import ApiKey

from ..authz import apis
from ..authz.acl import DESCRIBE, GROUP, TOPIC, Authorizer, Caller, parse_super_users
from ..authz.cache import DESCRIBE_ACLS, AclReadError, acls_from_response, describe_all_request
from ..authz.principal import ANONYMOUS, SaslState
from .bodies import read_request, read_response
from .periodic import every
from ..kafkaclient.client import KeptConnection

if TYPE_CHECKING:
    from .host import Connection, Host, Slot

log = logging.getLogger("kshim.authz")

SASL_HANDSHAKE = ApiKey.SASL_HANDSHAKE
SASL_AUTHENTICATE, LIST_GROUPS = ApiKey.SASL_AUTHENTICATE, ApiKey.LIST_GROUPS


class ConnAuth:
    """One client connection: its SASL progress and the caller its ACLs are checked for."""
    __slots__ = ("sasl", "caller")

    def __init__(self) -> None:
        self.sasl = SaslState()
        self.caller: Caller | None = None


def java_host(peer_host: str) -> str:
    """The client address as the broker's ACL host check sees it (InetAddress.getHostAddress:
    IPv6 in full, without zero compression)."""
    host = peer_host.lstrip("/")
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if ip.version == 6:
        return ":".join(f"{int(g, 16):x}" for g in ip.exploded.split(":"))
    return host


class AuthzService:
    def __init__(self, proxy: "Host", answer: Callable, amend: Callable):
        cfg = proxy.cfg
        self.proxy, self._answer, self._amend = proxy, answer, amend
        self.sasl = bool(cfg.upstream_sasl_mechanism)          # the listener clients reach is SASL
        self.authorizer: Authorizer | None = None
        if cfg.authorizer:
            self.authorizer = Authorizer(super_users=parse_super_users(cfg.authorizer_super_users),
                                         allow_if_no_acls=cfg.authorizer_allow_everyone_if_no_acl_found)
        self._client = KeptConnection(cfg, lambda: [(b.host, b.port) for b in proxy.topology.brokers.values()]
                                      + cfg.upstream_addresses())
        self._refresher: asyncio.Task | None = None

    def install(self) -> None:
        if self.sasl:
            self.proxy.routes[SASL_HANDSHAKE] = self._watch_handshake
            self.proxy.routes[SASL_AUTHENTICATE] = self._watch_authenticate

    # ------------------------------------------------------------------ SASL watching
    @staticmethod
    def _conn(session: "Connection") -> ConnAuth:
        auth = session.auth
        if auth is None:
            auth = session.auth = ConnAuth()
        return auth

    def _watch_handshake(self, session: "Connection", slot: "Slot", frame) -> bool:
        try:
            self._conn(session).sasl.handshake(read_request(frame, slot.api_key, slot.version).mechanism)
        except DecodeError:
            pass                                     # the broker judges it
        return False

    def _watch_authenticate(self, session: "Connection", slot: "Slot", frame) -> bool:
        auth = self._conn(session)
        try:
            auth.sasl.token(read_request(frame, slot.api_key, slot.version).auth_bytes)
        except DecodeError:
            return False

        def answered(session: "Connection", slot: "Slot", frame) -> None:
            try:
                auth.sasl.answered(read_response(frame, slot.api_key, slot.version).error_code)
            except DecodeError:
                pass
            auth.caller = None
            session.complete(slot, bytes(frame))
        slot.watch = answered
        return False

    # ------------------------------------------------------------------ per request
    def admitted(self, session: "Connection") -> bool:
        """False (and the connection closed) for a group request before SASL authentication."""
        if self.sasl:
            auth = session.auth
            if auth is None or not auth.sasl.authenticated:
                session.bad_input("group request before SASL authentication (the broker closes the connection)")
                return False
        return True

    def caller(self, session: "Connection") -> Caller:
        auth = self._conn(session)
        if auth.caller is None:
            principal = auth.sasl.principal if self.sasl else ANONYMOUS
            # a mechanism whose principal kshim cannot read (GSSAPI, OAUTHBEARER) matches no ACL
            auth.caller = Caller(principal or "User:<unknown>", java_host(session.peer_host))
        return auth.caller

    def gate(self, session: "Connection", slot: "Slot", req, topic_name) -> object | None:
        """The request to feed the coordinator (maybe narrowed), or None when answered here."""
        if self.authorizer is None:
            return req
        caller = self.caller(session)
        verdict = apis.gate(self.authorizer, caller, slot.api_key, slot.version, req, topic_name)
        if verdict.answer is not None:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("refused %s v%s for %s from %s", api.API_KEYS.get(slot.api_key), slot.version,
                          caller.principal, caller.host)
            self._answer(session, slot, verdict.answer)
            return None
        if verdict.patch is not None:
            self._amend(slot, verdict.patch, last=True)
        return verdict.request

    def allows_group(self, session: "Connection", operation: int, group_id: str) -> bool:
        """The caller's right `operation` on GROUP `group_id` (the broker's groups: broker_groups.py)."""
        return self.authorizer is None or self.authorizer.allowed(self.caller(session), operation, GROUP, group_id)

    def topic_filter(self, session: "Connection") -> Callable[[str], bool] | None:
        """The caller's TOPIC DESCRIBE right (live ACLs), for the coordinator's regex resolution."""
        if self.authorizer is None:
            return None
        authorizer, caller = self.authorizer, self.caller(session)
        return lambda name: authorizer.allowed(caller, DESCRIBE, TOPIC, name)

    def find_coordinator(self, session: "Connection", slot: "Slot", req, body):
        if self.authorizer is None:
            return body
        return apis.find_coordinator(self.authorizer, self.caller(session), slot.version, req, body)

    # ------------------------------------------------------------------ ACLs from the broker
    async def start(self) -> None:
        if self.authorizer is None:
            return
        await self.refresh()
        log.info("authorizer: %d ACLs read from the broker (refreshed every %d ms)",
                 self.authorizer.count, self.proxy.cfg.authorizer_refresh_ms)
        self._refresher = asyncio.get_running_loop().create_task(every(
            self.proxy.cfg.authorizer_refresh_ms / 1000.0, self.refresh, lambda e: log.warning(
                "ACL refresh failed (keeping the last %d ACLs): %s", self.authorizer.count, e)))

    async def stop(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
        self._client.close()

    async def refresh(self) -> None:
        def make(v: int):
            if v < 1:
                raise AclReadError("the upstream broker does not support DescribeAcls v1+")
            return describe_all_request()
        resp = await self._client.request(DESCRIBE_ACLS, 3, make, final=(AclReadError,))
        self.authorizer.set_acls(acls_from_response(resp))

