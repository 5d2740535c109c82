"""Consumer-group state changes as records (state_records.py, state-topic keys 5-8; docs/state-topic.md):
the group (epochs), each member's subscription, target assignment and current assignment."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..state_records import (ConsumerCurrentRecord, ConsumerCurrentTombstone, ConsumerGroupRecord, ConsumerGroupTombstone,
                       ConsumerMemberRecord, ConsumerMemberTombstone, ConsumerTargetRecord, ConsumerTargetTombstone)
from .consumer_group import ConsumerGroup, ConsumerMember

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState


def write_group(c: "CoordinatorState", g: ConsumerGroup) -> None:
    c.records.append(ConsumerGroupRecord(g.group_id, g.group_epoch, g.assignment_epoch, g.assignment_timestamp_ms))


def write_member(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember) -> None:
    m.recorded_assignor = m.server_assignor
    c.records.append(ConsumerMemberRecord(g.group_id, m.member_id, m.instance_id, m.rack_id, m.client_id,
                                          m.client_host, m.rebalance_timeout_ms, m.server_assignor,
                                          tuple(m.subscribed_topic_names), m.subscribed_topic_regex,
                                          None if m.classic is None else
                                          (m.classic.session_timeout_ms, tuple(m.classic.protocols))))


def write_target(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember) -> None:
    c.records.append(ConsumerTargetRecord(g.group_id, m.member_id, tuple(
        (t, tuple(sorted(ps))) for t, ps in sorted(m.target.items(), key=lambda kv: kv[0].bytes) if ps)))


def write_current(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember) -> None:
    c.records.append(ConsumerCurrentRecord(
        g.group_id, m.member_id, m.member_epoch, m.previous_member_epoch, m.state,
        tuple((t, tuple(sorted(ps.items()))) for t, ps in sorted(m.assigned.items(), key=lambda kv: kv[0].bytes)
              if ps),
        tuple((t, tuple(sorted(ps.items()))) for t, ps in sorted(m.pending_revocation.items(),
                                                                    key=lambda kv: kv[0].bytes) if ps)))


def write_member_removed(c: "CoordinatorState", g: ConsumerGroup, member_id: str) -> None:
    """As the broker: current assignment, target assignment, then subscription tombstoned."""
    c.records.append(ConsumerCurrentTombstone(g.group_id, member_id))
    c.records.append(ConsumerTargetTombstone(g.group_id, member_id))
    c.records.append(ConsumerMemberTombstone(g.group_id, member_id))


def write_group_removed(c: "CoordinatorState", g: ConsumerGroup) -> None:
    for mid in g.members:
        write_member_removed(c, g, mid)
    c.records.append(ConsumerGroupTombstone(g.group_id))
