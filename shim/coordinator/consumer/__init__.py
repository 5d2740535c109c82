"""KIP-848 consumer groups: ConsumerGroupHeartbeat (heartbeat.py), ConsumerGroupDescribe
(describe.py), the group and member state (group.py), reconciliation (reconcile.py), the target
assignment (target.py, through shim.coordinator.assignors), fencing and timers (membership.py),
records and replay (persist.py, replay.py), offsets rules (offsets_check.py) and the classic/admin
APIs meeting a consumer group (classic_apis.py). `install(c)` wires it into a GroupCoordinator."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core import GroupCoordinator


def install(c: "GroupCoordinator") -> None:
    from . import classic_apis, describe, heartbeat, offsets_check
    c.consumer_groups = {}
    c.handlers[68] = heartbeat.consumer_group_heartbeat
    c.handlers[69] = describe.consumer_group_describe
    classic_apis.wrap(c)
    offsets_check.wrap_fetch(c)
    c.metadata_listeners.append(metadata_updated)


def metadata_updated(c: "GroupCoordinator", deleted: set[str]) -> None:
    """Topics were created, deleted or grown: every consumer group re-resolves its regexes and bumps its
    epoch when its subscribed topics changed (the next heartbeats then compute and reconcile)."""
    from .target import refresh_group_metadata
    for g in c.consumer_groups.values():
        refresh_group_metadata(c, g)
