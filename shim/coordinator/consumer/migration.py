"""Online migration between classic and consumer groups (KIP-848; spec §D.9, §D.7), as Kafka 4.3's
GroupMetadataManager does it under `group.consumer.migration.policy` (CoordinatorConfig
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

Downgrade: when fencing would leave only classic-protocol members (at least one, at most
group.max.size) and the policy allows downgrades, the consumer group is tombstoned and rebuilt as a
classic group (Stable, generation = group epoch, protocol type "consumer", protocol chosen by vote,
each member's target assignment serialized at its subscription's version), which then prepares a
rebalance at once. Kafka builds the classic assignments from the target assignment; so do we.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import errors as E
from ..group import STABLE as CLASSIC_STABLE, ClassicGroup, ClassicMember
from ..records import GroupTombstone
from . import embedded
from .group import STABLE, ClassicMeta, ConsumerGroup, ConsumerMember
from .persist import write_current, write_group, write_group_removed, write_member, write_target

if TYPE_CHECKING:
    from ..core import GroupCoordinator


class UpgradeRefused(Exception):
    """GROUP_ID_NOT_FOUND with this message for the heartbeat that asked for the upgrade."""


# ---------------------------------------------------------------------------------- upgrade
def plan_upgrade(c: "GroupCoordinator", classic: ClassicGroup) -> ConsumerGroup:
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


def install_upgrade(c: "GroupCoordinator", classic: ClassicGroup, g: ConsumerGroup) -> None:
    """Replace the classic group by `g`: parked requests answered, classic timers gone, records written."""
    from .membership import arm_session
    from .target import metadata_snapshot
    gid = classic.group_id
    answer_parked(c, classic)
    for mid in [*classic.members, *classic.pending_members]:
        c.timers.cancel(("hb", gid, mid))
    c.timers.cancel(("join", gid))
    c.timers.cancel(("sync", gid))
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


def answer_parked(c: "GroupCoordinator", classic: ClassicGroup) -> None:
    """ClassicGroup.completeAllJoinFutures / completeAllSyncFutures(REBALANCE_IN_PROGRESS)."""
    from ..core import join_error, sync_response
    for cm in classic.members.values():
        if cm.awaiting_join is not None:
            c.respond(cm.awaiting_join.token,
                      join_error(cm.awaiting_join.version, E.REBALANCE_IN_PROGRESS, cm.member_id))
            classic.set_awaiting_join(cm, None)
        if cm.awaiting_sync is not None:
            c.respond(cm.awaiting_sync.token, sync_response(cm.awaiting_sync.version, E.REBALANCE_IN_PROGRESS))
            cm.awaiting_sync = None


# ---------------------------------------------------------------------------------- downgrade
def downgrade_allowed(c: "GroupCoordinator", g: ConsumerGroup, leaving: set) -> bool:
    remaining = [m for mid, m in g.members.items() if mid not in leaving]
    if not remaining or any(m.classic is None for m in remaining):
        return False
    if not c.cfg.downgrade_enabled() or len(remaining) > c.cfg.max_size:
        return False
    return True


def downgrade_allowed_replacing(c: "GroupCoordinator", g: ConsumerGroup, existing: ConsumerMember) -> bool:
    """A classic JoinGroup with the instance id `existing` holds (GroupMetadataManager
    .validateOnlineDowngradeWithReplacedMember, ConsumerGroup.allMembersUseClassicProtocolExcept): `existing`
    uses the consumer protocol and every other member the classic one (there may be none), downgrades are
    allowed and the group fits a classic group."""
    if existing.classic is not None or any(m.classic is None for mid, m in g.members.items()
                                           if mid != existing.member_id):
        return False
    return c.cfg.downgrade_enabled() and len(g.members) <= c.cfg.max_size


def downgrade(c: "GroupCoordinator", g: ConsumerGroup, leaving: set, reason: str,
              joining: ConsumerMember | None = None, rebalance: bool = True) -> ClassicGroup:
    """Turn `g` into a classic group without the `leaving` members (and with `joining` in place of the
    static member holding its instance id), write its records and prepare a rebalance."""
    from .membership import cancel_member_timers
    gid = g.group_id
    replaced = g.members.get(g.static_members.get(joining.instance_id)) if joining is not None else None
    write_group_removed(c, g)
    if joining is not None and joining.member_id not in g.members:
        from .persist import write_member_removed
        write_member_removed(c, g, joining.member_id)
    for mid in g.members:
        cancel_member_timers(c, gid, mid)
    del c.consumer_groups[gid]
    cg = ClassicGroup(gid, state=CLASSIC_STABLE, protocol_type="consumer", generation_id=g.group_epoch,
                      state_timestamp_ms=c.now)
    sources: dict[str, ConsumerMember] = {}
    for mid, m in g.members.items():
        if mid in leaving or (replaced is not None and mid == replaced.member_id):
            continue
        sources[mid] = m
    if joining is not None:
        sources[joining.member_id] = joining
    for mid, m in sources.items():
        cg.add(ClassicMember(mid, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                             m.classic.session_timeout_ms, "consumer", list(m.classic.protocols)))
    cg.protocol_name = cg.select_protocol()
    cg.subscribed = cg.compute_subscribed_topics()         # ClassicGroup.fromConsumerGroup
    for mid, cm in cg.members.items():
        src = replaced if (joining is not None and mid == joining.member_id and replaced is not None) else sources[mid]
        try:
            version = embedded.version_of(cm.metadata(cg.protocol_name))
            cm.assignment = embedded.serialize_assignment(embedded.named(c, src.target), version)
        except embedded.Malformed:
            cm.assignment = b""
    c.groups[gid] = cg
    c.write_group(cg)
    for cm in cg.members.values():
        c.schedule_heartbeat(cg, cm.member_id, cm.session_timeout_ms)
    c.event("group_converted", gid, to="classic", generation=cg.generation_id, members=len(cg.members),
            reason=reason)
    if rebalance:
        c.prepare_rebalance(cg, f"Downgrade group {gid} from consumer to classic: {reason}")
    return cg
