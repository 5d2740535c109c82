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


# Differences of kshim's pass-through of share and streams groups (shim/proxy/broker_groups.py) found
# by the share/streams members (groups_gen.py), reported and not yet fixed: each has a replay in
# testsuite/compat/wire_replays/ that CI runs as an expected failure (strict: it fails once kshim is
# fixed, then the entry goes). Unlike KNOWN these are kshim's to fix: the CLI still reports them.
_VALIDATE_FIRST = (
    "The broker validates a share/streams heartbeat before it looks the group up "
    "(GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid / "
    "throwIfStreamsGroupHeartbeatRequestIsInvalid: INVALID_REQUEST); kshim answers GROUP_ID_NOT_FOUND "
    "'Group g is not a share/streams group.' for a group it holds without validating the request first.")
_LIST_OLD = (
    "ListGroups v0-v4 through kshim lists kshim's groups only: the broker's share/streams groups (and "
    "its other groups) are missing; at v5 kshim lists the union as the broker does.")
_STREAMS_OVER_EMPTY_CLASSIC = (
    "A streams member joins a group id that is an empty classic group kshim holds: the broker deletes the "
    "empty classic group and creates the streams group (GroupMetadataManager.getOrCreateStreamsGroup, "
    "maybeDeleteEmptyClassicGroup), kshim answers GROUP_ID_NOT_FOUND 'Group g is not a streams group.'. "
    "The seed's later steps on that group differ as a consequence (not listed here).")
OPEN: dict[str, str] = {
    r"ShareGroupHeartbeat v\d errorCode: 'INVALID_REQUEST' vs 'GROUP_ID_NOT_FOUND'": _VALIDATE_FIRST,
    r"ShareGroupHeartbeat errorMessage \(message\): ['\"].* vs 'Group <group:\w+ is not a share group\.'": _VALIDATE_FIRST,
    r"StreamsGroupHeartbeat v\d errorCode: 'INVALID_REQUEST' vs 'GROUP_ID_NOT_FOUND'": _VALIDATE_FIRST,
    r"StreamsGroupHeartbeat errorMessage \(message\): ['\"].* vs 'Group <group:\w+ is not a streams group\.'":
        _VALIDATE_FIRST,
    r"StreamsGroupHeartbeat v\d errorCode: '(NONE|FENCED_MEMBER_EPOCH)' vs 'GROUP_ID_NOT_FOUND'": _STREAMS_OVER_EMPTY_CLASSIC,
    r"StreamsGroupHeartbeat errorMessage \(message\): None vs 'Group <group:\w+ is not a streams group\.'":
        _STREAMS_OVER_EMPTY_CLASSIC,
    r"ListGroups groups$": _LIST_OLD,
}


def open_issue(kind: str) -> str | None:
    for pattern, why in OPEN.items():
        if re.match(pattern, kind):
            return why
    return None
