"""What the handlers see of the coordinator: its clock (timers, outbox, records, events: shard_clock.py) and
the group state it holds. GroupCoordinator (group_coordinator.py) is this plus its inputs (handle,
tick, replay, ...) and the dispatch table; the handlers below it name this class in their type hints,
so no module refers back up to the module that imports it, not even for a type."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .shard_clock import ShardClock

if TYPE_CHECKING:
    from .classic_group import ClassicGroup
    from .config import CoordinatorConfig
    from .consumer.consumer_group import ConsumerGroup
    from .group_config import GroupConfigs
    from .metadata import TopicCatalog
    from .uncommitted import Uncommitted


class CoordinatorState(ShardClock):
    cfg: "CoordinatorConfig"
    groups: "dict[str, ClassicGroup]"                 # classic groups
    consumer_groups: "dict[str, ConsumerGroup]"       # KIP-848 consumer groups
    offsets: "OffsetStore"                            # committed offsets (offsets.py)
    txns: "PendingTxns"                               # pending transactional offsets (txn_offsets.py)
    uncommitted: "Uncommitted"                        # what reads do not see yet (uncommitted.py)
    topics: "TopicCatalog"                            # the upstream cluster's topics (metadata.py)
    group_configs: "GroupConfigs"                     # the broker's per-group configs (group_config.py)
    join_polling: set[str]
