"""The keys of a consumer-group member's timers (session, rebalance, and a classic member's join and
sync deadlines) and their cancellation; fencing.py arms them. Also the group's regex resolution
(regex_resolution.py). Classic groups' and transactions' timer keys: ../timers.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState


def session_key(gid: str, mid: str) -> tuple:
    return ("cg-session", gid, mid)


def rebalance_key(gid: str, mid: str) -> tuple:
    return ("cg-rebalance", gid, mid)


def join_key(gid: str, mid: str) -> tuple:
    return ("cg-join", gid, mid)


def sync_key(gid: str, mid: str) -> tuple:
    return ("cg-sync", gid, mid)


def regex_key(gid: str) -> tuple:
    """The group's pending regex resolution (GroupMetadataManager.maybeUpdateRegularExpressions'
    executor key)."""
    return ("regex", gid)


def cancel_member_timers(c: "CoordinatorState", gid: str, mid: str) -> None:
    for key in (session_key, rebalance_key, join_key, sync_key):
        c.timers.cancel(key(gid, mid))
