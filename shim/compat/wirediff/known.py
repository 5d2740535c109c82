"""Difference classes of `kshim compat --wire` that are understood and kept, each with its reason
(the broker answers UNKNOWN_SERVER_ERROR from an internal exception, say). A class listed here is
reported as explained and does not fail a run. Keys are regular expressions matched against the
start of `Difference.kind` (`re.match`)."""

from __future__ import annotations

import re

_MALFORMED_UPGRADE = (
    "Online upgrade of a classic group one of whose members has no subscription for the group's "
    "protocol (it joined the running rebalance with other protocols): Kafka 4.3.1 fails inside "
    "ConsumerGroup.fromClassicGroup with an IllegalStateException and answers UNKNOWN_SERVER_ERROR "
    "without a message; kshim refuses the upgrade as for any unreadable embedded protocol "
    "(GROUP_ID_NOT_FOUND, 'Cannot upgrade classic group ... malformed.'). State is unchanged on both.")

KNOWN: dict[str, str] = {
    r"ConsumerGroupHeartbeat v\d errorCode: 'UNKNOWN_SERVER_ERROR' vs 'GROUP_ID_NOT_FOUND'": _MALFORMED_UPGRADE,
    r"ConsumerGroupHeartbeat errorMessage \(message\): None vs 'Cannot upgrade classic group .* because the embedde":
        _MALFORMED_UPGRADE,
}


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
