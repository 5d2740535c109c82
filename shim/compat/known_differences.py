"""The reviewed reasons for differences between kshim and the real broker that are known and
accepted for now. Each entry: (scenario, client, protocol, observation key or "*") -> reason.
`scripts/compat-matrix` lists every difference; those without an entry here show "unexplained".
Edit by review only: an entry is a claim that the difference is understood."""

from __future__ import annotations

KNOWN: dict[tuple[str, str, str, str], str] = {
    # (empty: online migration, spec D.9, is implemented; classic-to-consumer is expected to agree)
}


def reason(scenario: str, client: str, protocol: str, key: str) -> str | None:
    for (s, c, p, k), why in KNOWN.items():
        if s == scenario and c in ("*", client) and p in ("*", protocol) and k in ("*", key):
            return why
    return None
