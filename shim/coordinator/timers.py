"""Keyed timers on an injected clock: schedule(key, at_ms, fn) replaces any timer with that key;
fire_due(now_ms) runs the due ones in deadline order. The owner asks next_deadline() to know when
to call again (the asyncio adapter sets one loop timer; a simulation jumps its virtual clock).

The keys of the classic groups' and the transactions' timers are built here only (those of KIP-848
consumer groups: consumer/timer_keys.py)."""

from __future__ import annotations

import heapq
import itertools
from typing import Callable, Hashable


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, tuple[int, int, Callable[[], None]]] = {}
        self._seq = itertools.count()

    def schedule(self, key: Hashable, at_ms: int, fn: Callable[[], None]) -> None:
        seq = next(self._seq)
        self._live[key] = (at_ms, seq, fn)
        heapq.heappush(self._heap, (at_ms, seq, key))

    def cancel(self, key: Hashable) -> None:
        self._live.pop(key, None)

    def active(self, key: Hashable) -> bool:
        return key in self._live

    def deadline(self, key: Hashable) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def next_deadline(self) -> int | None:
        heap, live = self._heap, self._live
        while heap:
            at, seq, key = heap[0]
            entry = live.get(key)
            if entry is not None and entry[1] == seq:
                return at
            heapq.heappop(heap)
        return None

    def fire_due(self, now_ms: int) -> int:
        fired = 0
        heap, live = self._heap, self._live
        while heap and heap[0][0] <= now_ms:
            at, seq, key = heapq.heappop(heap)
            entry = live.get(key)
            if entry is None or entry[1] != seq:
                continue
            del live[key]
            entry[2]()
            fired += 1
        return fired

    def __len__(self) -> int:
        return len(self._live)


# ---------------------------------------------------------------------- timer keys
def classic_heartbeat_key(group_id: str, member_id: str) -> tuple:
    """A classic member's session (GroupMetadataManager.classicGroupHeartbeatKey)."""
    return ("hb", group_id, member_id)


def classic_join_key(group_id: str) -> tuple:
    """A classic group's join phase (GroupMetadataManager.classicGroupJoinKey)."""
    return ("join", group_id)


def classic_sync_key(group_id: str) -> tuple:
    """A classic group's sync phase (GroupMetadataManager.classicGroupSyncKey)."""
    return ("sync", group_id)


def txn_timeout_key(producer_id: int) -> tuple:
    """kshim's own: a producer's pending transactional offsets dropped when its transaction outlives
    its timeout unseen (txn_offsets.py; the broker's transaction coordinator aborts it)."""
    return ("txn", producer_id)


def cancel_classic_group_timers(timers: Timers, group_id: str, member_ids) -> None:
    """The heartbeat timers of `member_ids` and the group's join and sync timers go: the classic group
    is unloaded (classic_rebalance.unload_group) or upgraded (consumer/upgrade.py, convertToConsumerGroup)."""
    for mid in member_ids:
        timers.cancel(classic_heartbeat_key(group_id, mid))
    timers.cancel(classic_join_key(group_id))
    timers.cancel(classic_sync_key(group_id))
