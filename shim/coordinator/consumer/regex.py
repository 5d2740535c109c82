"""SubscribedTopicRegex for consumer groups (spec §D.3 step 8): validation and resolution with the
RE2J semantics of shim/coordinator/assignors/regex.py (its docstring lists the differences from the
broker's RE2J). Resolution = every topic name of the catalog the pattern matches in full, that the
member whose heartbeat resolved it may DESCRIBE (`allowed`, when kshim authorizes; the group keeps
that member's filter for later re-resolutions, where the broker uses the member whose heartbeat
triggers each one).

As in the broker, a regex no member of the group uses yet is only validated by the heartbeat that
brings it; its resolution runs afterwards (a timer due at once, like the broker's executor), and only
its result bumps the group epoch (when it matched a topic). So a member subscribing to a new regex plus topic names gets the
named topics first and the matched ones on a later heartbeat (librdkafka's test 0045 checks this)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..assignors.regex import InvalidRegularExpression as InvalidRegex
from ..assignors.regex import resolve as _resolve
from ..assignors.regex import validate

if TYPE_CHECKING:
    from ..core import GroupCoordinator
    from .group import ConsumerGroup

__all__ = ["InvalidRegex", "resolve", "validate", "schedule_resolution"]


def resolve(pattern: str, names, allowed: Callable[[str], bool] | None = None) -> frozenset[str]:
    matched = _resolve(pattern, list(names))
    return matched if allowed is None else frozenset(n for n in matched if allowed(n))


def schedule_resolution(c: "GroupCoordinator", g: "ConsumerGroup") -> None:
    """Resolve the group's unresolved regexes right after the current event (one timer per group)."""
    gid = g.group_id
    key = ("regex", gid)
    if c.timers.active(key):
        return

    def run():
        grp = c.consumer_groups.get(gid)
        if grp is not None:
            resolve_pending(c, grp)
    c.timers.schedule(key, c.now, run)


def resolve_pending(c: "GroupCoordinator", g: "ConsumerGroup") -> None:
    """The resolution result: every regex some member subscribes to and not yet resolved gets its
    topics; the group epoch is bumped once when a result differs from the empty one it replaces or
    the subscribed topics' metadata changed (`GroupMetadataManager.handleRegularExpressionsResult`:
    a regex that matches nothing changes nothing)."""
    for rx in [r for r in g.regex_filters if r not in g.regex_counts]:
        del g.regex_filters[rx]                  # its members left before it was resolved
    pending = [rx for rx in g.regex_counts if rx not in g.regex_topics]
    if not pending:
        return
    changed = False
    for rx in pending:
        try:
            g.regex_topics[rx] = resolve(rx, c.topics, g.regex_filters.get(rx))
        except InvalidRegex:                     # validated when it arrived; kept unresolvable
            g.regex_topics[rx] = frozenset()
        changed = changed or bool(g.regex_topics[rx])
    g.resolved_cache.clear()
    from .target import bump_epoch, metadata_snapshot
    if changed or (g.metadata_snapshot is not None and metadata_snapshot(c, g) != g.metadata_snapshot):
        bump_epoch(c, g, "regular expressions resolved: " + ", ".join(sorted(pending)))
