"""Adoption: the first request about a group kshim does not hold waits while kshim asks the group's
broker coordinator what it holds, so an application moved from the broker to kshim resumes at its
committed offsets instead of `auto.offset.reset`.

- The broker has committed offsets and no live members (DescribeGroups: Empty or Dead, or not a
  classic-protocol view): the offsets (offset, leader epoch, metadata; OffsetFetch v9, all topics)
  become kshim's (shim/coordinator/adoption.py), written to the state topic before the request
  goes on (one log line: `adopted group ... from the broker`). The broker keeps its copy; `kshim
  groups export` writes kshim's back when the application returns to the broker.
- The broker holds it as a share or streams group: it is the broker's (broker_groups.py).
- The broker has live members (a classic group, or a KIP-848 consumer group: ConsumerGroupDescribe):
  the group stays the broker's (one warning line), and its requests
  are forwarded there (broker_groups.py) for the life of this kshim process, so two coordinators
  never split one group; point every member at kshim, or stop them first, to move it.
- Nothing there: the group is kshim's from its first request on.
Each group id is asked once per process (concurrent requests for it wait for the same answer). A
broker that cannot be asked within the retry window leaves the group kshim's (logged). Admin
requests (ListGroups, DescribeGroups, DeleteGroups, ConsumerGroupDescribe) do not adopt. Off with
`adopt_broker_groups = false`, and with scale_out (an instance may not own the group's state).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from kcodec.generated.consumer_group_describe import ConsumerGroupDescribeRequest
from kcodec.generated.describe_groups import DescribeGroupsRequest
from kcodec.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup
from kcodec.protocol import ApiKey, Error

from ..coordinator.adoption import AdoptedOffset, can_hand_over
from ..state import handback
from ..state.handback import OFFSET_COMMIT_VERSION
from .broker_coordinators import BrokerUnavailable, request
from .broker_groups import STREAMS
from .heartbeat_checks import streams_heartbeat
from .batches import BATCHED, group_ids

if TYPE_CHECKING:
    from .host import Connection, Slot
    from .broker_groups import BrokerGroups
    from .runtime import GroupRuntime

log = logging.getLogger("kshim.groups")

OFFSET_FETCH, DESCRIBE_GROUPS = ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS
CONSUMER_GROUP_DESCRIBE = ApiKey.CONSUMER_GROUP_DESCRIBE
OFFSET_COMMIT, STREAMS_GROUP_HEARTBEAT = ApiKey.OFFSET_COMMIT, ApiKey.STREAMS_GROUP_HEARTBEAT
NOT_ADOPTING = frozenset({ApiKey.LIST_GROUPS, DESCRIBE_GROUPS, ApiKey.DELETE_GROUPS, ApiKey.CONSUMER_GROUP_DESCRIBE})
OFFSET_FETCH_VERSION = 9       # the newest that names topics (v10 names them by id)
NOT_LIVE = ("Empty", "Dead", "")
TXN_OFFSET_COMMIT, TXN_COMMIT_VERSION = ApiKey.TXN_OFFSET_COMMIT, 3
LIVE = "live"                  # BrokerGroups.kinds value of a group with live members on the broker
OTHER_TYPE = "other"           # ... of a share or streams group the broker holds


class Adoption:
    def __init__(self, runtime: "GroupRuntime", broker: "BrokerGroups"):
        self.runtime, self.broker = runtime, broker
        self.checked: set[str] = set()
        self._asking: dict[str, asyncio.Future] = {}

    def new_groups(self, slot: "Slot", req) -> list[str]:
        """The groups of the request the broker's coordinator has not been asked about yet ([] on the
        common path)."""
        if slot.api_key in NOT_ADOPTING:
            return []
        if slot.api_key not in BATCHED and getattr(req, "group_id", None) in self.checked:
            return []                          # (one group, asked about already: every commit passes here)
        broker = self.broker
        return [g for g in group_ids(slot.api_key, slot.version, req)[0]
                if g and g not in self.checked and g not in broker.kinds and not broker.kshim_holds(g)]

    async def ask(self, group_ids: list[str]) -> None:
        """Ask the broker's coordinator about these groups (each once, however many requests wait)."""
        await asyncio.gather(*(self._ask(g) for g in group_ids))

    def _ask(self, group_id: str) -> asyncio.Future:
        fut = self._asking.get(group_id)
        if fut is None:
            fut = asyncio.ensure_future(self._check(group_id))
            self._asking[group_id] = fut
        return fut

    async def _check(self, group_id: str) -> None:
        try:
            state, offsets = await self._broker_view(group_id)
        except (BrokerUnavailable, OSError, ConnectionError, asyncio.TimeoutError) as e:
            log.warning("cannot ask the broker about group %s (%s): it is kshim's without adoption", group_id, e)
            state, offsets = None, []
        finally:
            self.checked.add(group_id)
            self._asking.pop(group_id, None)
        if state == OTHER_TYPE:
            self.broker.kinds[group_id] = OTHER_TYPE
        elif state is not None and state not in NOT_LIVE:
            self.broker.kinds[group_id] = LIVE
            log.warning("group %s has live members on the broker (state %s): its requests go to the broker; "
                        "stop its members or point them all at kshim to move it", group_id, state)
        elif offsets and not self.broker.kshim_holds(group_id):
            self.runtime.adopt(group_id, offsets)
            log.info("adopted group %s from the broker: %d committed offsets", group_id, len(offsets))

    @staticmethod
    async def _state(conn, group_id: str) -> str | None:
        """The group's state on the broker: a classic group's (DescribeGroups v6), else a consumer
        group's (ConsumerGroupDescribe: the broker answers DescribeGroups for any other type with
        GROUP_ID_NOT_FOUND "Group g is not a classic group.", GroupMetadataManager.classicGroup),
        OTHER_TYPE for a share or streams group, None for no group."""
        v = min(6, conn.versions.get(DESCRIBE_GROUPS, (0, 6))[1])
        entry = (await request(conn, DESCRIBE_GROUPS, v, DescribeGroupsRequest(groups=[group_id]))).groups[0]
        if entry.error_code == Error.NONE:
            return None if entry.group_state == "Dead" else entry.group_state if entry.members else "Empty"
        if not (entry.error_message or "").endswith("is not a classic group."):
            return None
        cv = min(1, conn.versions.get(CONSUMER_GROUP_DESCRIBE, (0, 1))[1])
        cg = (await request(conn, CONSUMER_GROUP_DESCRIBE, cv, ConsumerGroupDescribeRequest(group_ids=[group_id]))).groups[0]
        if cg.error_code != Error.NONE:
            return OTHER_TYPE
        return cg.group_state if cg.members else "Empty"

    async def _broker_view(self, group_id: str) -> tuple[str | None, list[AdoptedOffset]]:
        """(the group's state as the broker describes it, or None when it has no such group; its
        committed offsets)."""
        broker = self.broker
        node = await broker.links.node_for(group_id)
        conn = await broker.links.conn(node)
        state = await self._state(conn, group_id)
        if state == OTHER_TYPE:
            return state, []
        v = min(OFFSET_FETCH_VERSION, conn.versions.get(OFFSET_FETCH, (0, OFFSET_FETCH_VERSION))[1])
        if v < 8:
            return state, []
        fetched = await request(conn, OFFSET_FETCH, v, OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(group_id=group_id, member_id=None, member_epoch=-1, topics=None)],
            require_stable=False))
        group = fetched.groups[0] if fetched.groups else None
        if group is None or group.error_code != Error.NONE:
            return state, []
        catalog = self.runtime.topics
        offsets = []
        for t in group.topics:
            info = catalog.get(t.name)
            offsets.extend(AdoptedOffset(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                                         p.metadata or "", info.topic_id if info is not None else None)
                           for p in t.partitions if p.error_code == Error.NONE and p.committed_offset >= 0)
        return state, offsets


class HandOver:
    """A streams member joining an Empty classic group kshim holds: Kafka turns the group into a
    streams group, keeping its offsets (GroupMetadataManager.getOrCreateStreamsGroup ->
    maybeDeleteEmptyClassicGroup). kshim writes the group's offsets to the broker's coordinator
    (OffsetCommit without generation, state/handback.py) and its pending transactional offsets (each
    producer's TxnOffsetCommit again: the broker then applies the transaction's markers), forgets the
    group (the records of a deletion, durable first), and forwards the join; the group is the
    broker's from then on. If the broker refuses the offsets, the group stays kshim's and the join
    gets the wrong-type answer."""

    def __init__(self, runtime: "GroupRuntime", broker: "BrokerGroups"):
        self.runtime, self.broker = runtime, broker

    def takes(self, session: "Connection", slot: "Slot", frame, req) -> bool:
        if (slot.api_key != STREAMS_GROUP_HEARTBEAT or req.member_epoch != 0 or streams_heartbeat(req) is not None
                or not can_hand_over(self.runtime.coordinator, req.group_id)):
            return False
        asyncio.get_running_loop().create_task(self._then_forward(session, slot, frame, req))
        return True

    async def _then_forward(self, session, slot, frame, req) -> None:
        gid, broker = req.group_id, self.broker
        offsets = sorted(self.runtime.coordinator.offsets.get(gid).values(), key=lambda r: (r.topic, r.partition))
        pending = self.runtime.coordinator.pending_offsets(gid)
        why = ""
        try:
            if offsets or pending:
                conn = await broker.links.conn(await broker.links.node_for(gid))
            if offsets:
                v = min(OFFSET_COMMIT_VERSION, conn.versions.get(OFFSET_COMMIT, (0, OFFSET_COMMIT_VERSION))[1])
                written, why = handback.outcome(await request(conn, OFFSET_COMMIT, v, handback.commit_request(gid, offsets)))
            for txn in handback.txn_commit_requests(gid, pending) if not why else ():
                # v3: the broker verifies the partition is in the transaction (the client or kshim enlisted it)
                v = min(TXN_COMMIT_VERSION, conn.versions.get(TXN_OFFSET_COMMIT, (0, TXN_COMMIT_VERSION))[1])
                _, why = handback.outcome(await request(conn, TXN_OFFSET_COMMIT, v, txn))
                if why:
                    break
            if not why and can_hand_over(self.runtime.coordinator, gid):
                error = await self.runtime.hand_over(gid)
                why = f"state append failed ({error})" if error else ""
        except (BrokerUnavailable, OSError, ConnectionError, asyncio.TimeoutError) as e:
            why = str(e)
        if why:
            log.warning("streams join on group %s: the group stays kshim's (%s)", gid, why)
            if not session.closed:
                broker.complete(session, slot, broker.refusal(slot.api_key, STREAMS, gid, req))
            return
        log.info("group %s handed over to the broker for a streams member (%d offsets, %d pending in transactions)",
                 gid, len(offsets), len(pending))
        broker.kinds[gid] = STREAMS
        await broker.forward(session, slot, frame, req, [gid], None)   # one group: one coordinator
