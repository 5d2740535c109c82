"""Which member of a classic generation fell silent, for infer.py's session-timeout causes:
ClassicGroup removes a member whose session timeout passed since its last request
(GroupMetadataManager's heartbeat expiration)."""

from __future__ import annotations

DEFAULT_HEARTBEAT_MS = 3000     # the Java consumer's heartbeat.interval.ms


def expired(g, now_ns: int) -> tuple[int, str] | None:
    """(moment, member) of the member of `g`'s generation in force whose session expired last before
    `now_ns`, by the session timeout its JoinGroup gave."""
    best = None
    for mid in g.members:
        seen = g.last_seen.get(mid)
        timeout = g.session_ms.get(mid) or g.session_ms.get(g.members.get(mid) or "")
        if seen is None or not timeout or mid in g.left:
            continue
        at = seen[0] + timeout * 1_000_000
        if at <= now_ns and (best is None or at > best[0]):
            best = (at, mid)
    return best


def suspect(g, now_ns: int) -> str | None:
    """With no session timeout in the capture (the member joined before it): the member of the
    generation in force silent longest, if silent past three of its heartbeat intervals (measured
    between its heartbeats, else the Java default)."""
    best = None
    for mid in g.members:
        seen = g.last_seen.get(mid)
        if seen is None or mid in g.left or mid in g.timed_out or g.session_ms.get(mid):
            continue
        gap = g.beat_gap.get(mid) or DEFAULT_HEARTBEAT_MS * 1_000_000
        if now_ns - seen[0] > 3 * gap and (best is None or seen[0] < best[0]):
            best = (seen[0], mid)
    return None if best is None else best[1]
