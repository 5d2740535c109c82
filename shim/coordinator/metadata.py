"""Live topic metadata of the upstream cluster, as the coordinator sees it (GroupCoordinatorShard
.onMetadataUpdate).

The broker's coordinator reads the metadata image; kshim's adapter (shim/groupservice/service.py) refreshes
this catalog from Metadata requests and tells the coordinator when it changed
(`GroupCoordinator.metadata_updated`). Topics are known by name and by topic id; a topic deleted and
created again under the same name gets a new id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping

ZERO_UUID = uuid.UUID(int=0)
_TEST_NAMESPACE = uuid.UUID("6b736869-6d00-4000-8000-746f70696373")


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int


class TopicCatalog:
    """name -> TopicInfo and topic id -> TopicInfo, with a version that moves on every change."""

    def __init__(self, counts: Mapping[str, int] | None = None):
        self.by_name: dict[str, TopicInfo] = {}
        self.by_id: dict[uuid.UUID, TopicInfo] = {}
        self.version = 0
        self.deleted: set[str] = set()     # names deleted (or recreated with a new id) since last taken
        for name, partitions in (counts or {}).items():
            self[name] = partitions

    # -- reading
    def get(self, name: str) -> TopicInfo | None:
        return self.by_name.get(name)

    def partitions(self, name: str) -> int | None:
        info = self.by_name.get(name)
        return None if info is None else info.partitions

    def topic(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self.by_id.get(topic_id)

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_name)

    def __len__(self) -> int:
        return len(self.by_name)

    # -- writing
    def __setitem__(self, name: str, partitions: int) -> None:
        """Create or grow a topic (tests and simulations): its id stays; a new one gets a stable id."""
        old = self.by_name.get(name)
        tid = old.topic_id if old is not None else uuid.uuid5(_TEST_NAMESPACE, name)
        self.put(TopicInfo(name, tid, partitions))

    def __delitem__(self, name: str) -> None:
        self.remove([name])

    def put(self, info: TopicInfo) -> bool:
        old = self.by_name.get(info.name)
        if old == info:
            return False
        if old is not None:
            self.by_id.pop(old.topic_id, None)
            if old.topic_id != info.topic_id and old.topic_id != ZERO_UUID and info.topic_id != ZERO_UUID:
                self.deleted.add(info.name)      # deleted and created again between two looks
        self.by_name[info.name] = info
        self.by_id[info.topic_id] = info
        self.version += 1
        return True

    def remove(self, names: Iterable[str]) -> bool:
        changed = False
        for name in names:
            old = self.by_name.pop(name, None)
            if old is not None:
                self.by_id.pop(old.topic_id, None)
                self.deleted.add(name)
                changed = True
        if changed:
            self.version += 1
        return changed

    def replace(self, infos: Iterable[TopicInfo]) -> bool:
        """A full listing of the cluster's topics: anything not in it is gone."""
        infos = list(infos)
        keep = {i.name for i in infos}
        changed = self.remove([n for n in self.by_name if n not in keep])
        for info in infos:
            changed = self.put(info) or changed
        return changed

    def take_deleted(self) -> set[str]:
        out, self.deleted = self.deleted, set()
        return out
