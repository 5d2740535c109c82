"""Per-group configs: the broker's dynamic configs of GROUP resources (ConfigResource type 32), as
Kafka 4.3's GroupConfigManager keeps them for its group coordinator.

The adapter reads them from the broker (DescribeConfigs; groupservice/configs.py) and feeds each
group's overrides in (`GroupCoordinator.group_configs_updated`); `GroupConfigs.update` follows
GroupConfigManager.updateGroupConfig: no overrides removes the group's entry, otherwise the values
are evaluated within the broker-level bounds (GroupConfig.evaluate: a value out of
[min, max] is capped, with a warning) and kept. Its readers follow
GroupMetadataManager.consumerGroupSessionTimeoutMs / consumerGroupHeartbeatIntervalMs /
consumerGroupAssignmentIntervalMs: the group's value if it has one, else the broker-level setting.
As there, a change applies from the next use (the next heartbeat arms the session with the new
timeout; a deadline already armed stays). Share and streams groups are the broker's: their keys are
kept (validated names) but read by nobody here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import CoordinatorConfig

GROUP = 32    # ConfigResource.Type.GROUP
# GroupConfig's names (Kafka 4.3 GroupConfig.CONFIG_DEF)
CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"
CONSUMER_ASSIGNMENT_INTERVAL_MS = "consumer.assignment.interval.ms"
NAMES = frozenset((
    CONSUMER_SESSION_TIMEOUT_MS, CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_ASSIGNMENT_INTERVAL_MS,
    "share.session.timeout.ms", "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
    "share.delivery.count.limit", "share.partition.max.record.locks", "share.auto.offset.reset",
    "share.isolation.level", "share.renew.acknowledge.enable", "share.assignment.interval.ms",
    "streams.session.timeout.ms", "streams.heartbeat.interval.ms", "streams.num.standby.replicas",
    "streams.initial.rebalance.delay.ms", "streams.assignment.interval.ms"))


@dataclass(frozen=True)
class GroupConfig:
    """One group's evaluated overrides (GroupConfig.fromProps(defaults, evaluatedProps): a key the
    group does not set reads the broker-level value, here None)."""
    props: dict = field(default_factory=dict)
    consumer_session_timeout_ms: int | None = None
    consumer_heartbeat_interval_ms: int | None = None
    consumer_assignment_interval_ms: int | None = None


def _bounds(cfg: "CoordinatorConfig") -> dict[str, tuple[int, int]]:
    """GroupConfig.evaluateValues: the consumer keys and their broker-level [min, max]."""
    return {CONSUMER_SESSION_TIMEOUT_MS: (cfg.consumer_min_session_timeout_ms, cfg.consumer_max_session_timeout_ms),
            CONSUMER_HEARTBEAT_INTERVAL_MS: (cfg.consumer_min_heartbeat_interval_ms,
                                             cfg.consumer_max_heartbeat_interval_ms),
            CONSUMER_ASSIGNMENT_INTERVAL_MS: (cfg.consumer_min_assignment_interval_ms,
                                              cfg.consumer_max_assignment_interval_ms)}


def evaluate(group_id: str, props: dict, cfg: "CoordinatorConfig") -> tuple[GroupConfig, list[dict]]:
    """GroupConfig.evaluate (clampToRange per consumer key) then GroupConfig's typed values; returns
    the config and one warning per capped value (and per value that does not parse, which the
    broker's own validation would not have let through)."""
    out, warnings = {}, []
    bounds = _bounds(cfg)
    for key, raw in props.items():
        if key not in NAMES or raw is None:
            continue
        value = str(raw)
        if key in bounds:
            try:
                n = int(value.strip())
            except ValueError:
                warnings.append({"config": key, "value": value, "reason": "not an int: ignored"})
                continue
            lo, hi = bounds[key]
            if n < lo or n > hi:
                capped = lo if n < lo else hi
                warnings.append({"config": key, "value": n, "capped_to": capped,
                                 "reason": f"outside the broker's allowed range [{lo}, {hi}]"})
                n = capped
            value = str(n)
        out[key] = value
    # checkSessionExceedsHeartbeat: only a warning in Kafka too
    session = int(out.get(CONSUMER_SESSION_TIMEOUT_MS, cfg.consumer_session_timeout_ms))
    heartbeat = int(out.get(CONSUMER_HEARTBEAT_INTERVAL_MS, cfg.consumer_heartbeat_interval_ms))
    if (CONSUMER_SESSION_TIMEOUT_MS in out or CONSUMER_HEARTBEAT_INTERVAL_MS in out) and session <= heartbeat:
        warnings.append({"config": CONSUMER_SESSION_TIMEOUT_MS, "value": session,
                         "reason": f"not greater than {CONSUMER_HEARTBEAT_INTERVAL_MS} ({heartbeat})"})

    def num(key):
        return int(out[key]) if key in out else None
    return GroupConfig(out, num(CONSUMER_SESSION_TIMEOUT_MS), num(CONSUMER_HEARTBEAT_INTERVAL_MS),
                       num(CONSUMER_ASSIGNMENT_INTERVAL_MS)), warnings


class GroupConfigs:
    """GroupConfigManager's configMap: group id -> GroupConfig (only groups with overrides), and the
    readers GroupMetadataManager uses (the group's value, else the broker-level one in `cfg`)."""

    def __init__(self):
        self.by_group: dict[str, GroupConfig] = {}
        self.read: set[str] = set()        # groups whose configs the group service has read (or tried)

    def get(self, group_id: str) -> GroupConfig | None:
        return self.by_group.get(group_id)

    def update(self, group_id: str, props: dict, cfg: "CoordinatorConfig") -> tuple[bool, list[dict]]:
        """GroupConfigManager.updateGroupConfig: (did the group's values change, the warnings of
        GroupConfig.evaluate)."""
        if not group_id:
            return False, []               # "Group name can't be empty."
        self.read.add(group_id)
        old = self.by_group.get(group_id)
        props = {k: v for k, v in props.items() if k in NAMES and v is not None}
        if not props:
            self.by_group.pop(group_id, None)
            return old is not None, []
        new, warnings = evaluate(group_id, props, cfg)
        self.by_group[group_id] = new
        return old is None or old.props != new.props, warnings

    def consumer_session_timeout_ms(self, group_id: str, cfg: "CoordinatorConfig") -> int:
        """GroupMetadataManager.consumerGroupSessionTimeoutMs."""
        gc = self.by_group.get(group_id)
        v = gc.consumer_session_timeout_ms if gc is not None else None
        return cfg.consumer_session_timeout_ms if v is None else v

    def consumer_heartbeat_interval_ms(self, group_id: str, cfg: "CoordinatorConfig") -> int:
        """GroupMetadataManager.consumerGroupHeartbeatIntervalMs."""
        gc = self.by_group.get(group_id)
        v = gc.consumer_heartbeat_interval_ms if gc is not None else None
        return cfg.consumer_heartbeat_interval_ms if v is None else v

    def consumer_assignment_interval_ms(self, group_id: str, cfg: "CoordinatorConfig") -> int:
        """GroupMetadataManager.consumerGroupAssignmentIntervalMs."""
        gc = self.by_group.get(group_id)
        v = gc.consumer_assignment_interval_ms if gc is not None else None
        return cfg.consumer_assignment_interval_ms if v is None else v
