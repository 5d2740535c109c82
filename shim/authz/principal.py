"""Who a client connection is, read from its own SASL exchange (which kshim forwards untouched).

Follows the broker's SaslServerAuthenticator with the default principal builder: the principal
is "User:<authorization id>", and for PLAIN and SCRAM that is the user name - PLAIN's from the
token `authzid NUL username NUL password` (an authzid, when given, must equal the user name or the
broker fails the exchange), SCRAM's from the client-first message `n=<name>` with `=2C` and `=3D`
unescaped. The connection is authenticated once the broker answered the mechanism's last
SaslAuthenticate with error 0 (PLAIN: the first, SCRAM: the second). KIP-368 re-authentication runs
the same exchange again on an authenticated connection; the broker refuses a changed principal, so
the connection keeps its principal. Other mechanisms (GSSAPI, OAUTHBEARER) authenticate the
connection but leave the principal unknown (None).
"""

from __future__ import annotations

ANONYMOUS = "User:ANONYMOUS"
_ROUNDS = {"PLAIN": 1, "SCRAM-SHA-256": 2, "SCRAM-SHA-512": 2}


def plain_username(token: bytes) -> str | None:
    parts = bytes(token).split(b"\0")
    if len(parts) != 3:
        return None
    authzid, user = parts[0].decode(errors="replace"), parts[1].decode(errors="replace")
    return user if not authzid or authzid == user else None


def scram_username(client_first: bytes) -> str | None:
    try:
        text = bytes(client_first).decode()
    except UnicodeDecodeError:
        return None
    # gs2 header "n,," / "y,," / "n,a=authzid," then "n=<saslname>,r=<nonce>[,...]"
    fields = text.split(",")
    for f in fields[2:]:
        if f.startswith("n="):
            return f[2:].replace("=2C", ",").replace("=3D", "=")
    return None


class SaslState:
    """One connection's SASL progress, fed from the requests and answers kshim forwards."""

    __slots__ = ("mechanism", "rounds_ok", "candidate", "authenticated", "principal")

    def __init__(self) -> None:
        self.mechanism = ""
        self.rounds_ok = 0
        self.candidate: str | None = None
        self.authenticated = False
        self.principal: str | None = None

    def handshake(self, mechanism: str) -> None:
        """SaslHandshake (first or KIP-368 re-authentication)."""
        self.mechanism = (mechanism or "").upper()
        self.rounds_ok = 0
        self.candidate = None

    def token(self, auth_bytes: bytes) -> None:
        """A SaslAuthenticate request: the first one carries the user name."""
        if self.rounds_ok or self.candidate is not None:
            return
        if self.mechanism == "PLAIN":
            self.candidate = plain_username(auth_bytes)
        elif self.mechanism.startswith("SCRAM-"):
            self.candidate = scram_username(auth_bytes)

    def answered(self, error_code: int) -> None:
        """The broker's SaslAuthenticate answer (a failure closes the connection broker-side)."""
        if error_code:
            return
        self.rounds_ok += 1
        if self.rounds_ok >= _ROUNDS.get(self.mechanism, 1):
            if not self.authenticated:
                self.principal = None if self.candidate is None else f"User:{self.candidate}"
            self.authenticated = True
