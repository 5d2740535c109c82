"""The topic metadata kshim's coordinator checks requests against (names, ids, partition counts).

The broker's coordinator reads its metadata image; kshim keeps a `TopicCatalog` filled from Metadata
requests on a connection of its own: the whole listing every group_metadata_refresh_ms, and, before a
request is fed to the coordinator, the topics it names that kshim does not know yet (all of them for
topics named by id, or for a regex new to the group). A change is reported to `changed()`, which
hands it to the coordinator (`metadata_updated`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Callable

from kcodec import api
from kcodec.generated.metadata import MetadataRequestTopic
from kcodec.protocol import ApiKey, Error

from ..coordinator.metadata import TopicCatalog, TopicInfo
from ..kafkaclient.client import KeptConnection

if TYPE_CHECKING:
    from .host import Host
    from ..coordinator import GroupCoordinator

METADATA, OFFSET_COMMIT = ApiKey.METADATA, ApiKey.OFFSET_COMMIT
TXN_OFFSET_COMMIT = ApiKey.TXN_OFFSET_COMMIT
OFFSET_FETCH, OFFSET_DELETE = ApiKey.OFFSET_FETCH, ApiKey.OFFSET_DELETE
CONSUMER_GROUP_HEARTBEAT = ApiKey.CONSUMER_GROUP_HEARTBEAT
UNKNOWN_TOPIC_OR_PARTITION = Error.UNKNOWN_TOPIC_OR_PARTITION
CHECKED = (OFFSET_COMMIT, TXN_OFFSET_COMMIT, OFFSET_DELETE)       # partitions checked against metadata
WITH_TOPICS = CHECKED + (OFFSET_FETCH, CONSUMER_GROUP_HEARTBEAT)  # may name topics kshim has not seen yet
BY_ID = {OFFSET_COMMIT: 10, TXN_OFFSET_COMMIT: 6}                 # first version naming topics by id


class TopicRefresher:
    def __init__(self, proxy: "Host", topics: TopicCatalog, changed: Callable[[], None]):
        self.proxy, self.topics, self._changed = proxy, topics, changed
        self._meta = KeptConnection(proxy.cfg, lambda: [(b.host, b.port) for b in proxy.topology.brokers.values()]
                                    + proxy.cfg.upstream_addresses())
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ what a request needs
    def needs(self, coordinator: "GroupCoordinator", api_key: int, version: int, req) -> bool:
        """Does this request name a topic (or partition) kshim does not know yet?"""
        if api_key not in WITH_TOPICS:
            return False
        if api_key in CHECKED:
            for t in req.topics:
                if version >= BY_ID.get(api_key, 99):
                    info = self.topics.topic(t.topic_id)
                    count = None if info is None else info.partitions
                else:
                    count = self.topics.partitions(t.name)
                if count is None:
                    return True
                for p in t.partitions:         # (a loop, not any(genexpr): every commit passes here)
                    if p.partition_index >= count:
                        return True
            return False
        if api_key == OFFSET_FETCH:
            return version >= 10 and any(self.topics.topic(t.topic_id) is None
                                         for g in req.groups for t in (g.topics or ()))
        # ConsumerGroupHeartbeat: the broker's coordinator assigns a topic created a moment ago, and
        # resolves a new regex against the current image: list what this subscription needs first
        return new_regex(coordinator, version, req) or any(
            self.topics.partitions(n) is None for n in (req.subscribed_topic_names or ()))

    async def refresh_for(self, coordinator: "GroupCoordinator", api_key: int, version: int, req) -> None:
        """List what `needs` found missing."""
        if (api_key == OFFSET_FETCH or version >= BY_ID.get(api_key, 99)
                or (api_key == CONSUMER_GROUP_HEARTBEAT and new_regex(coordinator, version, req))):
            await self.refresh_all()          # topics named by id, or a regex: list them all
        elif api_key == CONSUMER_GROUP_HEARTBEAT:
            await self.refresh_topics(list(req.subscribed_topic_names))
        else:
            await self.refresh_topics([t.name for t in req.topics])

    # ------------------------------------------------------------------ Metadata requests
    async def refresh_all(self) -> None:
        """Every topic of the cluster (a full listing: topics missing from it were deleted)."""
        resp = await self._metadata(None)
        if self.topics.replace(TopicInfo(t.name, t.topic_id, len(t.partitions))
                               for t in resp.topics if t.error_code == Error.NONE and t.name):
            self._changed()

    async def refresh_topics(self, names: list[str]) -> None:
        resp = await self._metadata(names)
        changed = False
        for t in resp.topics:
            if t.error_code == Error.NONE:
                changed = self.topics.put(TopicInfo(t.name, t.topic_id, len(t.partitions))) or changed
            elif t.error_code == UNKNOWN_TOPIC_OR_PARTITION:
                changed = self.topics.remove([t.name]) or changed
        if changed:
            self._changed()

    async def _metadata(self, names: list[str] | None):
        def make(v: int):
            topics = None if names is None else [MetadataRequestTopic(name=n) for n in names]
            req = api.REQUESTS[METADATA](topics=topics)
            if v >= 4:
                req.allow_auto_topic_creation = False
            return req
        async with self._lock:
            return await self._meta.request(METADATA, 12, make)


def new_regex(coordinator: "GroupCoordinator", version: int, req) -> bool:
    """A ConsumerGroupHeartbeat bringing a regex its group has not resolved yet."""
    regex = req.subscribed_topic_regex if version >= 1 else None
    if not regex:
        return False
    group = coordinator.consumer_groups.get(req.group_id)
    return group is None or regex not in group.regex_topics
