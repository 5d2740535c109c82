"""The topic metadata kshim's coordinator checks requests against (names, ids, partition counts).

The broker's coordinator reads its metadata image; kshim keeps a `TopicCatalog` filled from Metadata
requests on a connection of its own: the whole listing every group_metadata_refresh_ms, and, before a
request is fed to the coordinator, the topics the coordinator says it needs (GroupCoordinator.needs:
the topics it names that kshim does not know yet; all of them for topics named by id, or for a regex
new to the group). A change is reported to `changed()`, which
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
    from ..coordinator.needs import Needs

METADATA = ApiKey.METADATA
UNKNOWN_TOPIC_OR_PARTITION = Error.UNKNOWN_TOPIC_OR_PARTITION


class TopicRefresher:
    def __init__(self, proxy: "Host", topics: TopicCatalog, changed: Callable[[], None]):
        self.proxy, self.topics, self._changed = proxy, topics, changed
        self._meta = KeptConnection(proxy.cfg, lambda: [(b.host, b.port) for b in proxy.topology.brokers.values()]
                                    + proxy.cfg.upstream_addresses())
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ what a request needs
    async def fetch(self, needs: "Needs") -> None:
        """List the topics the coordinator said a request needs (GroupCoordinator.needs)."""
        if needs.all_topics:
            await self.refresh_all()          # topics named by id, or a regex: list them all
        elif needs.topics:
            await self.refresh_topics(list(needs.topics))

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

