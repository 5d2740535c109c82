"""SubscribedTopicRegex for consumer groups (GroupMetadataManager.maybeUpdateRegularExpressions): validation and resolution with the
RE2J semantics of shim/coordinator/assignors/topic_regex.py (its docstring lists the differences from the
broker's RE2J). Resolution = every topic name of the catalog the pattern matches in full, that the
member whose heartbeat resolved it may DESCRIBE (`allowed`, when kshim authorizes; the group keeps
that member's filter for later re-resolutions, where the broker uses the member whose heartbeat
triggers each one).

As in the broker, a regex no member of the group uses yet is only validated by the heartbeat that
brings it; its resolution runs afterwards (a timer due at once, like the broker's executor), and only
its result bumps the group epoch (when it matched a topic). So a member subscribing to a new regex plus topic names gets the
named topics first and the matched ones on a later heartbeat (librdkafka's test 0045 checks this).

A heartbeat starts a resolution only as GroupMetadataManager.maybeUpdateRegularExpressions does: none
running for the group, the last one more than 10 s ago (REGEX_BATCH_REFRESH_MIN_INTERVAL_MS), and a
subscribed regex not resolved yet; it then resolves every regex the group subscribes to. A regex
brought within 10 s of the last resolution stays unresolved until a heartbeat after that. Where the
broker also refreshes on new topics or every group.consumer.regex.refresh.interval.ms, kshim
re-resolves the group's regexes whenever its topic catalog changes (target.refresh_group_metadata)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..assignors.topic_regex import InvalidRegularExpression as InvalidRegex
from ..assignors.topic_regex import validate
from .target import bump_epoch, metadata_snapshot, resolve
from .timer_keys import regex_key

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState
    from .consumer_group import ConsumerGroup

# GroupMetadataManager.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS
REFRESH_MIN_INTERVAL_MS = 10_000

__all__ = ["InvalidRegex", "resolve", "validate", "schedule_resolution", "maybe_refresh"]


def maybe_refresh(c: "CoordinatorState", g: "ConsumerGroup", brought_new: bool, resolved_before: bool) -> None:
    """After a heartbeat's subscription update (`brought_new`: it brought a regex new to the group):
    GroupMetadataManager.maybeUpdateRegularExpressions' conditions for a resolution. The 10 s check
    sees the resolved regexes as they were before this heartbeat (`resolved_before`): the tombstone of
    a regex its last member just left is only replayed after the handler returns, so it still counts
    as the last resolution (ConsumerGroup.lastResolvedRegularExpressionRefreshTimeMs)."""
    if not g.regex_counts or c.timers.active(regex_key(g.group_id)):
        return
    if resolved_before and g.regex_refreshed_ms is not None \
            and c.now <= g.regex_refreshed_ms + REFRESH_MIN_INTERVAL_MS:
        return
    if brought_new or len(g.regex_topics) != len(g.regex_counts) \
            or any(rx not in g.regex_topics for rx in g.regex_counts):
        schedule_resolution(c, g)


def schedule_resolution(c: "CoordinatorState", g: "ConsumerGroup") -> None:
    """Resolve the group's unresolved regexes right after the current event (one timer per group)."""
    gid = g.group_id
    key = regex_key(gid)
    if c.timers.active(key):
        return

    def run():
        grp = c.consumer_groups.get(gid)
        if grp is not None:
            resolve_pending(c, grp)
    c.timers.schedule(key, c.now, run)


def resolve_pending(c: "CoordinatorState", g: "ConsumerGroup") -> None:
    """The resolution result: every regex some member subscribes to gets its topics; the group epoch
    is bumped once when a result differs from the one it replaces (none: empty) or the subscribed
    topics' metadata changed (`GroupMetadataManager.handleRegularExpressionsResult`: a regex that
    matches nothing changes nothing)."""
    for rx in [r for r in g.regex_filters if r not in g.regex_counts]:
        del g.regex_filters[rx]                  # its members left before it was resolved
    pending = list(g.regex_counts)
    if not pending:
        return
    g.regex_refreshed_ms = c.now
    changed = False
    for rx in pending:
        old = g.regex_topics.get(rx, frozenset())
        try:
            g.regex_topics[rx] = resolve(rx, c.topics, g.regex_filters.get(rx))
        except InvalidRegex:                     # validated when it arrived; kept unresolvable
            g.regex_topics[rx] = frozenset()
        changed = changed or g.regex_topics[rx] != old
    g.resolved_cache.clear()
    if changed or (g.metadata_snapshot is not None and metadata_snapshot(c, g) != g.metadata_snapshot):
        bump_epoch(c, g, "regular expressions resolved: " + ", ".join(sorted(pending)))
