"""Difference classes of `kshim compat --wire` that are understood and kept, each with its reason
(the broker answers UNKNOWN_SERVER_ERROR from an internal exception, say). A class listed here is
reported as explained and does not fail a run. Keys are regular expressions matched against the
start of `Difference.kind` (`re.match`)."""

from __future__ import annotations

import re

# Empty: where the broker fails inside (UNKNOWN_SERVER_ERROR) kshim gives the same answer with the same
# effect (an online upgrade over a member without the group's protocol was listed here until 2026-11-27).
KNOWN: dict[str, str] = {}


def reason(kind: str) -> str | None:
    for pattern, why in KNOWN.items():
        if re.match(pattern, kind):
            return why
    return None


# Differences of kshim found by the tester and not yet fixed, by class pattern: each has a replay in
# testsuite/compat/wire_replays/ that CI runs as an expected failure (strict: it fails once kshim is
# fixed, then the entry goes). Unlike KNOWN these are kshim's to fix: the CLI still reports them.
# Empty now: the three the share/streams members found (heartbeat validation before the group type,
# ListGroups v0-4 without the broker's groups, a streams join over an Empty classic group) are fixed
# and their replays pass.
OPEN: dict[str, str] = {}


def open_issue(kind: str) -> str | None:
    for pattern, why in OPEN.items():
        if re.match(pattern, kind):
            return why
    return None
