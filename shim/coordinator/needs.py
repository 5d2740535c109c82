"""What a request needs from the broker before the coordinator can decide it, as h11's `next_event()`
answers NEED_DATA: the topics kshim's catalog must list first, and the groups whose per-group configs
must be read first. The group service asks before it feeds a request (shim/groupservice/request_path.py)
and fetches what is named; the answer comes from the coordinator's own state, without I/O.

- Topics: the broker's coordinator reads its metadata image, so a commit naming a topic created a
  moment ago is checked against it, and a new regex resolves against the current image
  (GroupMetadataManager.consumerGroupHeartbeat, maybeUpdateRegularExpressions). kshim lists the
  topics a request names that its catalog does not know: every topic when they are named by id
  (OffsetCommit v10+, TxnOffsetCommit v6+, OffsetFetch v10+) or for a regex new to the group.
- Group configs: the broker's GroupConfigManager holds every group's configs from the metadata image
  before its first heartbeat; kshim reads a consumer group's GROUP resource at its first heartbeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .api_keys import CONSUMER_GROUP_HEARTBEAT, OFFSET_COMMIT, OFFSET_DELETE, OFFSET_FETCH, TXN_OFFSET_COMMIT
from .consumer.consumer_group import regex_unresolved

if TYPE_CHECKING:
    from .coordinator_state import CoordinatorState

CHECKED = (OFFSET_COMMIT, TXN_OFFSET_COMMIT, OFFSET_DELETE)       # partitions checked against metadata
BY_ID = {OFFSET_COMMIT: 10, TXN_OFFSET_COMMIT: 6}                 # first version naming topics by id


@dataclass(frozen=True, slots=True)
class Needs:
    all_topics: bool = False              # list every topic of the cluster
    topics: tuple[str, ...] = ()          # list these topics
    group_configs: tuple[str, ...] = ()   # read these groups' configs (GROUP resources)

    def __bool__(self) -> bool:
        return self.all_topics or bool(self.topics) or bool(self.group_configs)


NOTHING = Needs()
ALL_TOPICS = Needs(all_topics=True)


def needs(c: "CoordinatorState", api_key: int, version: int, req) -> Needs:
    """What `req` needs fetched before the coordinator decides it (NOTHING on the common path)."""
    if api_key in CHECKED:
        return _checked_topics(c, api_key, version, req)
    if api_key == OFFSET_FETCH:
        if version >= 10 and any(c.topics.topic(t.topic_id) is None for g in req.groups for t in (g.topics or ())):
            return ALL_TOPICS
        return NOTHING
    if api_key == CONSUMER_GROUP_HEARTBEAT:
        return _heartbeat(c, version, req)
    return NOTHING


def _checked_topics(c: "CoordinatorState", api_key: int, version: int, req) -> Needs:
    by_id = version >= BY_ID.get(api_key, 99)
    topics = c.topics
    for t in req.topics:
        if by_id:
            info = topics.topic(t.topic_id)
            count = None if info is None else info.partitions
        else:
            count = topics.partitions(t.name)
        if count is None:
            return _list_named(by_id, req)
        for p in t.partitions:             # (a loop, not any(genexpr): every commit passes here)
            if p.partition_index >= count:
                return _list_named(by_id, req)
    return NOTHING


def _list_named(by_id: bool, req) -> Needs:
    return ALL_TOPICS if by_id else Needs(topics=tuple(t.name for t in req.topics))


def _heartbeat(c: "CoordinatorState", version: int, req) -> Needs:
    gid = req.group_id
    configs = (gid,) if gid and gid not in c.group_configs.read else ()
    regex = req.subscribed_topic_regex if version >= 1 else None
    if regex and regex_unresolved(c.consumer_groups.get(gid), regex):
        return Needs(all_topics=True, group_configs=configs)
    names = req.subscribed_topic_names or ()
    if any(c.topics.partitions(n) is None for n in names):
        return Needs(topics=tuple(names), group_configs=configs)
    return Needs(group_configs=configs) if configs else NOTHING
