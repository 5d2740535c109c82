"""The Kafka releases whose group coordinator kshim answers as (3.9, the last 3.x with KRaft, to the
pinned 4.4), how an upstream broker's release is told from its ApiVersions, and the group API ranges
a broker of each release advertises.

Identification (`identify`): each release from 3.9 on made at least one API version stable that no
earlier release has; the newest release whose version the broker advertises is the broker's (a broker
advertises its software's stable versions, whatever its finalized metadata.version). The table was
read from each release's kafka-clients message schemas (validVersions, latestVersionUnstable):
  4.4  ApiVersions v5 (KIP-1242)          4.3  DescribeLogDirs v5
  4.2  ListOffsets v11                     4.1  Produce v13
  4.0  DescribeGroups v6 (KIP-1043)        3.9  Fetch v17 (KIP-853)
An older broker matches none (kshim refuses to start; `coordinator_version` overrides).
"""

from __future__ import annotations

from kcodec.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kcodec.generated.share_group_heartbeat import ShareGroupHeartbeatRequest
from kcodec.protocol import ApiKey, Error

RELEASES = ("3.9", "4.0", "4.1", "4.2", "4.3", "4.4")
NEWEST = RELEASES[-1]

_SIGNATURES = (("4.4", ApiKey.API_VERSIONS, 5), ("4.3", ApiKey.DESCRIBE_LOG_DIRS, 5),
               ("4.2", ApiKey.LIST_OFFSETS, 11), ("4.1", ApiKey.PRODUCE, 13),
               ("4.0", ApiKey.DESCRIBE_GROUPS, 6), ("3.9", ApiKey.FETCH, 17))

_G = ApiKey
_BASE = {_G.JOIN_GROUP: (0, 9), _G.SYNC_GROUP: (0, 5), _G.HEARTBEAT: (0, 4), _G.LEAVE_GROUP: (0, 5),
         _G.DESCRIBE_GROUPS: (0, 6), _G.LIST_GROUPS: (0, 5), _G.DELETE_GROUPS: (0, 2),
         _G.OFFSET_COMMIT: (2, 10), _G.OFFSET_FETCH: (1, 10), _G.OFFSET_DELETE: (0, 0),
         _G.TXN_OFFSET_COMMIT: (0, 5), _G.CONSUMER_GROUP_HEARTBEAT: (0, 1), _G.CONSUMER_GROUP_DESCRIBE: (0, 1)}
# the group APIs' ranges in each release's message schemas (what its broker advertises)
GROUP_RANGES: dict[str, dict[int, tuple[int, int]]] = {
    "3.9": {**_BASE, _G.DESCRIBE_GROUPS: (0, 5), _G.OFFSET_COMMIT: (0, 9), _G.OFFSET_FETCH: (0, 9),
            _G.TXN_OFFSET_COMMIT: (0, 4), _G.CONSUMER_GROUP_HEARTBEAT: (0, 0), _G.CONSUMER_GROUP_DESCRIBE: (0, 0)},
    "4.0": {**_BASE, _G.OFFSET_COMMIT: (2, 9), _G.OFFSET_FETCH: (1, 9)},
    "4.1": {**_BASE, _G.OFFSET_COMMIT: (2, 9), _G.OFFSET_FETCH: (1, 9)},     # v10 unstable in 4.1
    "4.2": dict(_BASE),
    "4.3": dict(_BASE),
    "4.4": {**_BASE, _G.DELETE_GROUPS: (0, 3), _G.TXN_OFFSET_COMMIT: (0, 6)},
}


# the AclOperation codes a group resource supports (ResourceType.GROUP in AclEntry.supportedOperations):
# READ, DESCRIBE, DELETE; DESCRIBE_CONFIGS and ALTER_CONFIGS from 4.0 (group configs, KIP-848)
def group_operations(release: str) -> tuple[int, ...]:
    return (3, 8, 6, 10, 11) if at_least(release, "4.0") else (3, 8, 6)


def consumer_protocol_probe():
    """A ConsumerGroupHeartbeat v0 that changes nothing: an empty group id. A broker whose
    group.coordinator.rebalance.protocols has "consumer" refuses it INVALID_REQUEST ("GroupId can't be
    empty."); one without answers UNSUPPORTED_VERSION (KafkaApis.handleConsumerGroupHeartbeat)."""
    return ConsumerGroupHeartbeatRequest(
        group_id="", member_id="", member_epoch=0, rebalance_timeout_ms=-1, subscribed_topic_names=[],
        topic_partitions=[])


def protocol_enabled(error_code: int) -> bool:
    """A probe's answer (consumer_protocol_probe, share_protocol_probe): anything but
    UNSUPPORTED_VERSION means the broker has that protocol on."""
    return error_code != int(Error.UNSUPPORTED_VERSION)


def share_protocol_probe():
    """A ShareGroupHeartbeat that changes nothing: an empty group id. A broker with share groups on
    (the share.version feature) refuses it INVALID_REQUEST ("GroupId can't be empty."); one with them
    off answers UNSUPPORTED_VERSION before anything else (KafkaApis.handleShareGroupHeartbeat:
    isShareGroupProtocolEnabled), for every share group API."""
    return ShareGroupHeartbeatRequest(group_id="", member_id="", member_epoch=0, rack_id=None,
                                      subscribed_topic_names=None)


def identify(broker_versions: dict[int, tuple[int, int]]) -> str | None:
    """The release of a broker from its ApiVersions ranges, or None (older than 3.9, or not Kafka)."""
    for release, key, version in _SIGNATURES:
        rng = broker_versions.get(key)
        if rng is not None and rng[1] >= version:
            return release
    return None


def at_least(release: str, other: str) -> bool:
    """Is `release` `other` or newer?"""
    return RELEASES.index(release) >= RELEASES.index(other)


def unsupported_message(broker_versions: dict[int, tuple[int, int]]) -> str:
    fetch = broker_versions.get(ApiKey.FETCH)
    return (f"the upstream broker is not a Kafka release kshim can answer as (supported: {RELEASES[0]} to "
            f"{NEWEST}; its ApiVersions: Fetch up to v{fetch[1] if fetch else '?'}, ApiVersions up to "
            f"v{broker_versions.get(ApiKey.API_VERSIONS, (0, '?'))[1]}). Upgrade the cluster, or set "
            f"--coordinator-version (one of {', '.join(RELEASES)}) to choose one")
