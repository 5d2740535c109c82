"""Rebuilding the coordinator from its records (the state topic, read at start).

`replay(c, record)` applies one record as the broker's coordinator does when it loads a
__consumer_offsets partition: the last value of a key wins, tombstones delete. A group with members
comes back Stable (generation, protocol, leader, assignments, static mapping) and every member gets
a heartbeat timer of its session timeout from now, so members that do not come back expire as they
would after a coordinator failover; a group without members comes back Empty. Replay writes no
records and sends no responses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import classic_rebalance
from .consumer.consumer_replay import replay_consumer
from .classic_group import EMPTY, STABLE, ClassicGroup, ClassicMember
from .state_records import (CONSUMER_RECORDS, GroupMetadataRecord, GroupTombstone, OffsetRecord, OffsetTombstone,
                      TxnOffsetRecord, TxnOffsetTombstone)
from .txn_offsets import replay_record

if TYPE_CHECKING:
    from .coordinator_state import CoordinatorState


def replay(c: "CoordinatorState", record) -> None:
    if isinstance(record, OffsetRecord):
        if record.group_id not in c.groups and record.group_id not in c.consumer_groups:
            # offsets without group metadata: a simple group
            c.groups[record.group_id] = ClassicGroup(record.group_id, state_timestamp_ms=c.now)
        c.offsets.by_group.setdefault(record.group_id, {})[(record.topic, record.partition)] = record
        if record.group_id in c.txns.by_group:
            c.txns.committed(record.group_id, [record])
    elif isinstance(record, OffsetTombstone):
        offsets = c.offsets.by_group.get(record.group_id)
        if offsets is not None:
            offsets.pop((record.topic, record.partition), None)
    elif isinstance(record, GroupMetadataRecord):
        _drop_group(c, record.group_id)
        c.groups[record.group_id] = _group_from(c, record)
    elif isinstance(record, GroupTombstone):
        # offsets stay: every deletion tombstones them itself, and an online upgrade (GroupMetadataManager.convertToConsumerGroup) tombstones
        # the classic group but keeps its offsets
        _drop_group(c, record.group_id)
    elif isinstance(record, (TxnOffsetRecord, TxnOffsetTombstone)):
        replay_record(c, record)
    elif isinstance(record, CONSUMER_RECORDS):
        replay_consumer(c, record)
    else:
        raise TypeError(f"cannot replay {type(record).__name__}")


def _drop_group(c: "CoordinatorState", group_id: str) -> None:
    old = c.groups.pop(group_id, None)
    if old is not None:
        for mid in old.members:
            classic_rebalance.cancel_heartbeat(c, old, mid)


def _group_from(c: "CoordinatorState", rec: GroupMetadataRecord) -> ClassicGroup:
    g = ClassicGroup(rec.group_id, state=STABLE if rec.members else EMPTY, protocol_type=rec.protocol_type,
                     protocol_name=rec.protocol_name, generation_id=rec.generation_id,
                     state_timestamp_ms=rec.state_timestamp_ms)
    for m in rec.members:
        g.add(ClassicMember(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                            m.session_timeout_ms, rec.protocol_type or "",
                            [(rec.protocol_name or "", m.subscription)], assignment=m.assignment))
    g.protocol_type = rec.protocol_type
    g.leader_id = rec.leader_id if rec.leader_id in g.members else next(iter(g.members), None)
    g.subscribed = g.compute_subscribed_topics()           # as GroupMetadataManager.replay of a classic group
    for m in g.members.values():
        classic_rebalance.schedule_heartbeat(c, g, m.member_id, m.session_timeout_ms)
    return g
