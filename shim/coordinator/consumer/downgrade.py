"""Online downgrade of a consumer group to a classic group (KIP-848 online migration; GroupMetadataManager
.convertToClassicGroup under `group.consumer.migration.policy`: bidirectional or downgrade).

Downgrade: when fencing would leave only classic-protocol members (at least one, at most
group.max.size) and the policy allows downgrades, the consumer group is tombstoned and rebuilt as a
classic group (Stable, generation = group epoch, protocol type "consumer", protocol chosen by vote,
each member's target assignment serialized at its subscription's version), which then prepares a
rebalance at once. Kafka builds the classic assignments from the target assignment; so do we.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import classic_rebalance
from ..classic_group import STABLE as CLASSIC_STABLE, ClassicGroup, ClassicMember
from . import embedded
from .consumer_group import ConsumerGroup, ConsumerMember
from .persist import write_group_removed, write_member_removed
from .timer_keys import cancel_member_timers

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState


def downgrade_allowed(c: "CoordinatorState", g: ConsumerGroup, leaving: set) -> bool:
    remaining = [m for mid, m in g.members.items() if mid not in leaving]
    if not remaining or any(m.classic is None for m in remaining):
        return False
    if not c.cfg.downgrade_enabled() or len(remaining) > c.cfg.max_size:
        return False
    return True


def downgrade_allowed_replacing(c: "CoordinatorState", g: ConsumerGroup, existing: ConsumerMember) -> bool:
    """A classic JoinGroup with the instance id `existing` holds (GroupMetadataManager
    .validateOnlineDowngradeWithReplacedMember, ConsumerGroup.allMembersUseClassicProtocolExcept): `existing`
    uses the consumer protocol and every other member the classic one (there may be none), downgrades are
    allowed and the group fits a classic group."""
    if existing.classic is not None or any(m.classic is None for mid, m in g.members.items()
                                           if mid != existing.member_id):
        return False
    return c.cfg.downgrade_enabled() and len(g.members) <= c.cfg.max_size


def downgrade(c: "CoordinatorState", g: ConsumerGroup, leaving: set, reason: str,
              joining: ConsumerMember | None = None, rebalance: bool = True) -> ClassicGroup:
    """Turn `g` into a classic group without the `leaving` members (and with `joining` in place of the
    static member holding its instance id), write its records and prepare a rebalance."""
    gid = g.group_id
    replaced = g.members.get(g.static_members.get(joining.instance_id)) if joining is not None else None
    write_group_removed(c, g)
    if joining is not None and joining.member_id not in g.members:
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
    classic_rebalance.write_group(c, cg)
    for cm in cg.members.values():
        classic_rebalance.schedule_heartbeat(c, cg, cm.member_id, cm.session_timeout_ms)
    c.event("group_converted", gid, to="classic", generation=cg.generation_id, members=len(cg.members),
            reason=reason)
    if rebalance:
        classic_rebalance.prepare_rebalance(c, cg, f"Downgrade group {gid} from consumer to classic: {reason}")
    return cg
