"""Difference classes of `kshim compat --wire` that are understood and kept, each with its reason
(the broker answers UNKNOWN_SERVER_ERROR from an internal exception, say). A class listed here is
reported as explained and does not fail a run. Keys are prefixes of `Difference.kind`."""

from __future__ import annotations

KNOWN: dict[str, str] = {}


def reason(kind: str) -> str | None:
    for prefix, why in KNOWN.items():
        if kind.startswith(prefix):
            return why
    return None
