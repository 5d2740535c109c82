"""The group service: kshim's own group coordinator plugged into the proxy (the only place they meet).

Its jobs, one module each:
- runtime.py: the coordinator stepped on the event loop, its clock, and every answer held
  until the state records of its step are durable (append before answer, documented there);
- request_path.py: the request path of the group APIs (decode, authorize, route, coordinator,
  encode);
- find_coordinator.py: FindCoordinator for group keys (transaction keys are the broker's);
- transactions.py: TxnOffsetCommit enlisted in the transaction first; the client's EndTxn and
  InitProducerId watched; txn_markers.py: every transaction's end read from its markers;
- topic_refresh.py: the topic metadata the coordinator checks commits against and re-resolves
  subscriptions from (kshim's own Metadata requests, periodic and on demand);
- authz.py: SASL principals and the broker's ACLs (with SASL upstream or `authorizer`);
- adoption.py: a group the broker held becomes kshim's with its committed offsets;
- configs.py: the broker's per-group configs (GROUP resources) read into the coordinator
  (periodic, a group's first heartbeat, after an alteration passing through kshim);
- broker_groups.py: the broker's share and streams groups (their APIs pass through to the group's
  broker coordinator; kshim's group APIs naming them too; ListGroups lists both);
- shim/state/: the durable state (log.py) and, with scale_out, the instances sharing it (ownership.py).
This module builds them, registers their routes (`install`), and starts and stops them: at start
the state topic is replayed into the coordinator before the listeners open.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from kcodec.protocol import ApiKey

from ..coordinator import CoordinatorConfig
from ..coordinator.dispatch import VERSIONS
from ..state import handback
from .adoption import Adoption, HandOver
from ..coordinator.state_records import CONSUMER_RECORDS
from .broker_groups import BrokerGroups
from .find_coordinator import FindCoordinator
from .configs import GroupConfigWatcher
from .request_path import GroupRequests
from .runtime import GroupRuntime
from .periodic import every
from .topic_refresh import TopicRefresher
from .transactions import Transactions

if TYPE_CHECKING:
    from .host import Host

log = logging.getLogger("kshim.coordinator")

FIND_COORDINATOR, END_TXN, INIT_PRODUCER_ID = ApiKey.FIND_COORDINATOR, ApiKey.END_TXN, ApiKey.INIT_PRODUCER_ID
EVENTS_LOGGED = ("rebalance", "generation", "member_removed", "session_timeout", "static_member_replaced",
                 "static_rejoin_without_rebalance", "member_left", "group_deleted", "txn_offsets_dropped",
                 "group_config_updated", "group_config_capped")


class GroupService:
    def __init__(self, proxy: "Host", config: CoordinatorConfig):
        self.proxy = proxy
        cfg = proxy.cfg
        self.runtime = runtime = GroupRuntime(config, self._on_event)
        self.topics = runtime.topics
        self.metadata = TopicRefresher(proxy, runtime.topics, runtime.metadata_updated)
        self.authz = None                      # shim.groupservice.authz.AuthzService (SASL upstream / authorizer)
        if cfg.authorizer or cfg.upstream_sasl_mechanism:
            from .authz import AuthzService
            self.authz = AuthzService(proxy, runtime.answer, runtime.amend)
        self.transactions = Transactions(proxy, runtime, self.metadata)
        self.broker_groups = BrokerGroups(proxy, runtime, self.authz)
        self.configs = GroupConfigWatcher(proxy, runtime)
        adoption = Adoption(runtime, self.broker_groups) if cfg.adopt_broker_groups and not cfg.scale_out else None
        self.requests = GroupRequests(proxy, runtime, metadata=self.metadata, transactions=self.transactions,
                                      authz=self.authz, broker_groups=self.broker_groups, configs=self.configs,
                                      adoption=adoption)
        self.find_coordinator = FindCoordinator(proxy, runtime, self.authz)
        if not cfg.scale_out:                  # (an instance may not own the group's state partition)
            self.broker_groups.hand_over = HandOver(runtime, self.broker_groups)
        self.scale = None                      # shim.state.ownership.ScaleOut when scale_out is on
        self._tasks: list[asyncio.Task] = []

    @property
    def coordinator(self):
        return self.runtime.coordinator

    def install(self) -> None:
        for api_key, versions in VERSIONS.items():
            self.proxy.register(api_key, self.requests.handle, versions)
        routes = self.proxy.routes
        routes[FIND_COORDINATOR] = self.find_coordinator.handle
        routes[END_TXN] = self.transactions.watch_end_txn
        routes[INIT_PRODUCER_ID] = self.transactions.watch_init_producer_id
        self.broker_groups.install()
        self.configs.install()
        if self.authz is not None:
            self.authz.install()

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """The broker's ACLs; the periodic topic refresh and offset cleanup; create the state topic if
        missing, replay it, start the writer (all before the listeners open)."""
        cfg = self.proxy.cfg
        loop = asyncio.get_running_loop()
        if self.authz is not None:
            await self.authz.start()           # the broker's ACLs, before any client is served
        await self.broker_groups.learn_all()   # the group ids that are the broker's
        self.transactions.start()              # (reads transaction markers while offsets are pending)
        if cfg.group_metadata_refresh_ms > 0:
            self._tasks.append(loop.create_task(every(
                cfg.group_metadata_refresh_ms / 1000.0, self.metadata.refresh_all,
                lambda e: log.debug("periodic topic refresh failed: %s", e))))
        if cfg.group_configs_refresh_ms > 0:
            self._tasks.append(loop.create_task(every(
                cfg.group_configs_refresh_ms / 1000.0, self.configs.refresh_all,
                lambda e: log.warning("periodic group configs read failed: %s", e))))
        if cfg.offsets_retention_check_interval_ms > 0:
            self._tasks.append(loop.create_task(self._cleanup_loop(cfg.offsets_retention_check_interval_ms)))
        if not cfg.state_topic:
            return
        from ..state.log import StateLog
        state = StateLog(cfg, lambda: [(b.host, b.port) for b in self.proxy.topology.brokers.values()]
                         + cfg.upstream_addresses())
        t0 = time.monotonic()
        await state.ensure_topic()
        runtime = self.runtime
        if cfg.scale_out:                      # partitions are taken as the instances' group assigns them
            from ..state.ownership import ScaleOut
            runtime.state, state.owned = state, {}
            state.start_writer()
            self.scale = ScaleOut(runtime, state, cfg, self.proxy.topology, self.requests.list_locally)
            self.requests.scale = self.find_coordinator.scale = self.scale
            self.scale.start()
            return
        records = await state.load()
        # the broker's configs of the consumer groups first: the load arms each member's session with
        # its group's timeout (GroupMetadataManager.onLoaded; the broker's GroupConfigManager is filled
        # from the metadata image before its coordinator loads)
        await self.configs.load_quietly(sorted({r.group_id for r in records if isinstance(r, CONSUMER_RECORDS)}))
        runtime.replay(records)
        runtime.state = state
        state.start_writer()
        log.info("replayed %d records of %s (%d groups) in %.2fs", len(records), cfg.state_topic,
                 len(runtime.coordinator.groups), time.monotonic() - t0)

    async def _cleanup_loop(self, interval_ms: int) -> None:
        """Offset retention: Kafka's periodic group metadata cleanup (coordinator/retention.py)."""
        while True:
            await asyncio.sleep(interval_ms / 1000.0)
            self.runtime.expire_offsets()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self.authz is not None:
            await self.authz.stop()
        if self.scale is not None:
            await self.scale.stop()
        if self.proxy.cfg.export_on_stop:
            await self._export()
        if self.runtime.state is not None:
            await self.runtime.state.close()
        self.requests.close()
        self.transactions.close()
        self.broker_groups.close()
        self.configs.close()

    async def _export(self) -> None:
        """export_on_stop: the offsets of kshim's Empty groups back to the broker (state/handback.py)."""
        groups = handback.empty_groups(self.runtime.coordinator, handback.matcher(None))
        try:
            summary = await handback.export(self.proxy.cfg, groups, progress=log.info)
        except (OSError, ConnectionError, TimeoutError) as e:
            log.error("export_on_stop: offsets not written back to the broker: %s", e)
            return
        log.info("export_on_stop: %d offsets of %d groups written back to the broker%s", summary.offsets,
                 summary.groups, f"; refused: {summary.refused}" if summary.refused else "")

    # ------------------------------------------------------------------ events
    def _on_event(self, ev: dict) -> None:
        self.proxy.trace_event(ev)
        kind = ev.get("event")
        level = logging.INFO if kind in EVENTS_LOGGED else logging.DEBUG
        if log.isEnabledFor(level):
            log.log(level, "%s", " ".join(f"{k}={v}" for k, v in ev.items() if k != "assignments"))
