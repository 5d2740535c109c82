"""Online upgrade of a classic group to a consumer group (KIP-848 online migration; GroupMetadataManager
.consumerGroupHeartbeat -> convertToConsumerGroup under `group.consumer.migration.policy`, CoordinatorConfig
`consumer_migration_policy`: bidirectional (default), upgrade, downgrade, disabled).

Upgrade: the first ConsumerGroupHeartbeat with epoch 0 on a non-empty classic group converts it when
the policy allows upgrades, the group's protocol type is "consumer", it has at most
group.consumer.max.size members and every member's subscription (for the chosen protocol) and
assignment parse with the consumer protocol without custom-assignor userData; otherwise the sender
gets GROUP_ID_NOT_FOUND. The consumer group starts at group epoch = assignment epoch = the classic
generation; each classic member becomes a classic-protocol member at that epoch, STABLE, owning (and
targeted with) its last classic assignment, with its session timeout; parked JoinGroup/SyncGroup
requests are answered REBALANCE_IN_PROGRESS once the policy, protocol type and size allow the
upgrade, even if the members' protocol then turns out malformed. The records: the classic group's tombstone, the group
epochs, then the members' subscriptions, targets and current assignments (Kafka writes the epochs
after the subscriptions; kshim's replay needs the group record first).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import errors as E
from ..classic_group import ClassicGroup
from ..state_records import GroupTombstone
from ..responses import join_error, sync_response
from ..timers import cancel_classic_group_timers
from . import embedded
from .consumer_group import STABLE, ClassicMeta, ConsumerGroup, ConsumerMember
from .fencing import arm_session
from .persist import write_current, write_group, write_member, write_target
from .target import metadata_snapshot

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState


class UpgradeRefused(Exception):
    """GROUP_ID_NOT_FOUND with this message for the heartbeat that asked for the upgrade; `code`
    UNKNOWN_SERVER_ERROR (no message) where the broker fails inside instead."""

    def __init__(self, message: str | None, code: int = E.GROUP_ID_NOT_FOUND):
        super().__init__(message)
        self.message, self.code = message, code


def plan_upgrade(c: "CoordinatorState", classic: ClassicGroup) -> ConsumerGroup:
    """The consumer group a non-empty classic group would become. Once the policy, protocol type
    and size allow it, the classic group's parked JoinGroup/SyncGroup requests are answered
    REBALANCE_IN_PROGRESS, even when reading its members then fails or the heartbeat is refused
    later: GroupMetadataManager.convertToConsumerGroup completes those futures first."""
    gid = classic.group_id
    why = f"Cannot upgrade classic group {gid} to consumer group because "
    if not c.cfg.upgrade_enabled():
        raise UpgradeRefused(why + "online upgrade is disabled.")
    if classic.protocol_type != "consumer":
        raise UpgradeRefused(why + "the group does not use the consumer embedded protocol.")
    if len(classic.members) > c.cfg.consumer_max_size:
        raise UpgradeRefused(why + "the group size exceeds the consumer group maximum size.")
    answer_parked(c, classic)
    gen = classic.generation_id
    g = ConsumerGroup(gid, group_epoch=gen, assignment_epoch=gen)
    g.assignment_timestamp_ms = 0
    for cm in classic.members.values():
        if not any(name == classic.protocol_name for name, _ in cm.protocols):
            # a member that joined the running rebalance with other protocols: ClassicGroupMember.metadata
            # throws inside ConsumerGroup.fromClassicGroup, GroupCoordinatorService answers UNKNOWN_SERVER_ERROR
            # without a message, and the group stays classic (seen on 4.3.1 and 4.4.0 brokers)
            raise UpgradeRefused(None, E.UNKNOWN_SERVER_ERROR)
        try:
            if cm.assignment == embedded.EMPTY_ASSIGNMENT:
                owned = {}
            else:
                a = embedded.assignment(cm.assignment)
                if a.user_data:
                    raise UpgradeRefused(
                        f"Cannot upgrade classic group {gid} to consumer group because an unsupported custom "
                        f"assignor is in use. Please refer to the documentation or switch to a default assignor "
                        f"before re-attempting the upgrade.")
                owned = embedded.by_id(c, a.assigned_partitions)
            sub = embedded.subscription(cm.metadata(classic.protocol_name))
        except embedded.Malformed:
            raise UpgradeRefused(why + "the embedded consumer protocol is malformed.") from None
        m = ConsumerMember(
            cm.member_id, instance_id=cm.instance_id, rack_id=getattr(sub, "rack_id", None) or None,
            client_id=cm.client_id, client_host=cm.client_host, rebalance_timeout_ms=cm.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sub.topics or ()), member_epoch=gen, previous_member_epoch=gen,
            state=STABLE, assigned={t: dict.fromkeys(ps, gen) for t, ps in owned.items() if ps},
            target={t: frozenset(ps) for t, ps in owned.items() if ps},
            classic=ClassicMeta(cm.session_timeout_ms, tuple(cm.protocols)))
        g.add(m)
    return g


def install_upgrade(c: "CoordinatorState", classic: ClassicGroup, g: ConsumerGroup) -> None:
    """Replace the classic group by `g`: parked requests answered, classic timers gone, records written."""
    gid = classic.group_id
    answer_parked(c, classic)
    cancel_classic_group_timers(c.timers, gid, [*classic.members, *classic.pending_members])
    del c.groups[gid]
    c.records.append(GroupTombstone(gid))
    c.consumer_groups[gid] = g
    g.metadata_snapshot = metadata_snapshot(c, g)
    g.topics_version = c.topics.version
    write_group(c, g)                       # first: replay creates the group from this record
    for m in g.members.values():
        write_member(c, g, m)
    for m in g.members.values():
        write_target(c, g, m)
    for m in g.members.values():
        write_current(c, g, m)
        arm_session(c, g, m)
    c.event("group_converted", gid, to="consumer", generation=classic.generation_id, members=len(g.members))


def answer_parked(c: "CoordinatorState", classic: ClassicGroup) -> None:
    """ClassicGroup.completeAllJoinFutures / completeAllSyncFutures(REBALANCE_IN_PROGRESS)."""
    for cm in classic.members.values():
        if cm.awaiting_join is not None:
            c.respond(cm.awaiting_join.token,
                      join_error(cm.awaiting_join.version, E.REBALANCE_IN_PROGRESS, cm.member_id))
            classic.set_awaiting_join(cm, None)
        if cm.awaiting_sync is not None:
            c.respond(cm.awaiting_sync.token, sync_response(cm.awaiting_sync.version, E.REBALANCE_IN_PROGRESS))
            cm.awaiting_sync = None
