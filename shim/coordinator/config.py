"""The broker settings the coordinator follows, with Apache Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CoordinatorConfig:
    """Broker settings that shape classic and consumer groups, with Apache Kafka's defaults."""
    initial_rebalance_delay_ms: int = 3000       # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000           # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000        # group.max.session.timeout.ms
    max_size: int = 2**31 - 1                    # group.max.size
    new_member_join_timeout_ms: int = 300000     # fixed in Kafka
    offset_metadata_max_bytes: int = 4096        # offset.metadata.max.bytes
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes
    # KIP-848 consumer groups (shim/coordinator/consumer/): group.consumer.*
    consumer_session_timeout_ms: int = 45000     # group.consumer.session.timeout.ms
    consumer_heartbeat_interval_ms: int = 5000   # group.consumer.heartbeat.interval.ms
    # the bounds of the per-group configs (group_config.py; GroupConfig.evaluate caps into them)
    consumer_min_session_timeout_ms: int = 45000     # group.consumer.min.session.timeout.ms
    consumer_max_session_timeout_ms: int = 60000     # group.consumer.max.session.timeout.ms
    consumer_min_heartbeat_interval_ms: int = 5000   # group.consumer.min.heartbeat.interval.ms
    consumer_max_heartbeat_interval_ms: int = 15000  # group.consumer.max.heartbeat.interval.ms
    consumer_min_assignment_interval_ms: int = 0     # group.consumer.min.assignment.interval.ms
    consumer_max_assignment_interval_ms: int = 15000  # group.consumer.max.assignment.interval.ms
    consumer_max_size: int = 2**31 - 1           # group.consumer.max.size
    consumer_assignors: tuple[str, ...] = ("uniform", "range")   # group.consumer.assignors
    consumer_assignment_interval_ms: int = 1000  # group.consumer.assignment.interval.ms
    offsets_retention_check_interval_ms: int = 600000  # offsets.retention.check.interval.ms
    # group.consumer.migration.policy (KIP-848 online migration, ConsumerGroupMigrationPolicy):
    # bidirectional, upgrade, downgrade, disabled
    consumer_migration_policy: str = "bidirectional"
    # the Kafka release whose coordinator kshim answers as (releases.py: the upstream's, or
    # coordinator_version); behaviour that changed between releases follows it
    release: str = "4.4"
    # whether the upstream's group.coordinator.rebalance.protocols includes "consumer" (KIP-848): learned
    # at start (releases.consumer_protocol_probe). Off - Kafka 3.9's default, or a 4.x broker set to
    # "classic" - the broker answers ConsumerGroupHeartbeat / ConsumerGroupDescribe UNSUPPORTED_VERSION
    consumer_protocol: bool = True

    def scala_coordinator(self) -> bool:
        """Does the upstream run Kafka 3.9's Scala GroupCoordinator? A 3.9 broker does unless
        group.coordinator.new.enable is set or the consumer protocol is on (KafkaConfig
        .isNewGroupCoordinatorEnabled); kshim sees the second only, so it takes the first as unset."""
        return self.release == "3.9" and not self.consumer_protocol

    def session_timeout_valid(self, session_timeout_ms: int) -> bool:
        """A JoinGroup's session timeout within group.min/max.session.timeout.ms, else INVALID_SESSION_TIMEOUT
        (GroupCoordinatorService.joinGroup, classicGroupMin/MaxSessionTimeoutMs)."""
        return self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms

    def upgrade_enabled(self) -> bool:
        return self.consumer_migration_policy in ("bidirectional", "upgrade")

    def downgrade_enabled(self) -> bool:
        return self.consumer_migration_policy in ("bidirectional", "downgrade")
