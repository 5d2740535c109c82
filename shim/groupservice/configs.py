"""The broker's group settings, for kshim's coordinator.

- At start (`adopt_broker_settings`, called by runner.py before the program is built): the upstream
  broker's own values of the group coordinator properties (DescribeConfigs of the BROKER resource of
  a broker, on that broker: KafkaApis answers only its own id) for every kshim setting named after
  one and not given explicitly (shim/config.py BROKER_GROUP_SETTINGS); then GroupCoordinatorConfig's
  checks of the consumer bounds.
- While running (`GroupConfigWatcher`): the broker's per-group configs (GROUP resources, what
  `kafka-configs --entity-type groups --alter` writes), the overrides only (ConfigSource
  GROUP_CONFIG, as ConfigHelper.describeConfigs marks what configRepository.groupConfig holds), fed
  to the coordinator (`group_configs_updated`), as the broker's metadata publisher feeds its
  GroupConfigManager. Read: for every consumer group kshim holds (and every group with overrides)
  every `group_configs_refresh_ms`; before the first ConsumerGroupHeartbeat of a group kshim has not
  read yet (so a config set before the group exists applies from its first member on, as on the
  broker); and after an IncrementalAlterConfigs/AlterConfigs naming groups succeeds through kshim
  (watched, still forwarded: the broker validates and stores it), at once and once more a second
  later (the broker's own coordinator also learns the change from the metadata log, a moment after
  the answer).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from kcodec import api
from kcodec.errors import DecodeError
from kcodec.generated.describe_configs import DescribeConfigsResource
from kcodec.protocol import ApiKey, Error

from ..config import BROKER_GROUP_SETTINGS, Config, adopt_broker_settings as adopt, broker_property
from ..config import check_group_bounds
from ..coordinator.group_config import GROUP
from ..coordinator.releases import at_least
from ..kafkaclient.client import IO_ERRORS, KeptConnection, UpstreamClient
from .bodies import read_request, read_response

if TYPE_CHECKING:
    from .host import Connection, Host, Slot
    from .runtime import GroupRuntime

log = logging.getLogger("kshim.coordinator")

DESCRIBE_CONFIGS, ALTER_CONFIGS = ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS
INCREMENTAL_ALTER_CONFIGS = ApiKey.INCREMENTAL_ALTER_CONFIGS
BROKER = 4                 # ConfigResource.Type.BROKER
GROUP_CONFIG_SOURCE = 8    # DescribeConfigsResponse.ConfigSource.GROUP_CONFIG
BATCH = 200                # groups per DescribeConfigs
REREAD_AFTER_ALTER_S = 1.0


def _describe(resource_type: int, names: list[str], keys: list[str] | None = None):
    def make(version: int):
        return api.REQUESTS[DESCRIBE_CONFIGS](resources=[
            DescribeConfigsResource(resource_type=resource_type, resource_name=n, configuration_keys=keys)
            for n in names], include_synonyms=False)
    return make


async def read_broker_settings(cfg: Config) -> tuple[int, dict[str, str]]:
    """(node id, property -> value) of the first broker that answers DescribeConfigs for itself."""
    errors = []
    keys = [broker_property(n) for n in BROKER_GROUP_SETTINGS]
    for host, port in cfg.upstream_addresses():
        try:
            client = await UpstreamClient.connect(cfg, host, port)
        except IO_ERRORS as e:
            errors.append(f"{host}:{port}: {e or type(e).__name__}")
            continue
        try:
            brokers, _ = await client.metadata()
            # this broker's own id: the one listed at the address connected to, else try each
            ids = [b.node_id for b in brokers if (b.host, b.port) == (host, port)] or sorted(b.node_id for b in brokers)
            for node in ids:
                v = client.version_for(DESCRIBE_CONFIGS, 4)
                resp = await client.request(DESCRIBE_CONFIGS, v, _describe(BROKER, [str(node)], keys)(v))
                res = resp.results[0]
                if res.error_code == Error.NONE:
                    return node, {c.name: c.value for c in res.configs if c.value is not None}
                errors.append(f"broker {node}: error {res.error_code} {res.error_message or ''}".strip())
                if res.error_code == Error.CLUSTER_AUTHORIZATION_FAILED:
                    break
        except IO_ERRORS as e:
            errors.append(f"{host}:{port}: {e or type(e).__name__}")
        finally:
            client.close()
    raise ConnectionError("; ".join(errors) or "no upstream address")


async def adopt_broker_settings(cfg: Config) -> None:
    """The upstream broker's values for the group settings not given (logged; kept in cfg.adopted for
    the banner); then the bounds checks (ConfigError when they fail, as the broker refuses to start)."""
    if cfg.group_settings_from_broker:
        try:
            node, values = await read_broker_settings(cfg)
        except (ConnectionError, *IO_ERRORS) as e:
            log.warning("cannot read the upstream broker's group settings (%s): kshim keeps its own; kshim's "
                        "upstream principal needs DESCRIBE_CONFIGS on the CLUSTER", e)
        else:
            adopted = adopt(cfg, values)
            log.debug("group settings of broker %s adopted: %s", node,    # (the banner lists them)
                     ", ".join(f"{broker_property(k)}={v}" for k, v in adopted.items()) or "none (all given)")
            for name, why in cfg.adopted.get("skipped", {}).items():
                log.warning("broker's %s not adopted: %s", broker_property(name), why)
    check_group_bounds(cfg)


# GROUP config resources (kafka-configs --entity-type groups) came with KIP-848's general availability;
# a 3.9 broker answers a DescribeConfigs of one from an internal error ("Unexpected error handling request")
GROUP_CONFIGS_SINCE = "4.0"


class GroupConfigWatcher:
    def __init__(self, proxy: "Host", runtime: "GroupRuntime"):
        self.proxy, self.runtime = proxy, runtime
        self._conn = KeptConnection(proxy.cfg, lambda: [(b.host, b.port) for b in proxy.topology.brokers.values()]
                                    + proxy.cfg.upstream_addresses())
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task] = set()

    def install(self) -> None:
        routes = self.proxy.routes
        routes[INCREMENTAL_ALTER_CONFIGS] = self.watch_alter
        routes[ALTER_CONFIGS] = self.watch_alter

    def close(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        self._conn.close()

    # ------------------------------------------------------------------ reading
    async def load(self, groups: list[str]) -> None:
        """DescribeConfigs of these GROUP resources; each group's overrides into the coordinator (also
        none: the coordinator then counts the group's configs as read, GroupConfigs.read)."""
        groups = list(dict.fromkeys(g for g in groups if g))
        if not at_least(self.runtime.coordinator.cfg.release, GROUP_CONFIGS_SINCE):
            self._none(groups)               # a 3.9 broker has no GROUP config resources: nothing to read
            return
        for i in range(0, len(groups), BATCH):
            part = groups[i:i + BATCH]
            async with self._lock:
                resp = await self._conn.request(DESCRIBE_CONFIGS, 4, _describe(GROUP, part))
            for res in resp.results:
                overrides = {}
                if res.error_code != Error.NONE:
                    log.debug("group configs of %s: error %s %s", res.resource_name, res.error_code,
                              res.error_message)
                    if res.resource_name in self.runtime.coordinator.group_configs.read:
                        continue
                else:
                    overrides = {c.name: c.value for c in res.configs
                                 if c.config_source == GROUP_CONFIG_SOURCE and c.value is not None}
                self.runtime.deliver(self.runtime.coordinator.group_configs_updated(
                    res.resource_name, overrides, self.runtime.now()))

    async def load_quietly(self, groups: list[str]) -> None:
        try:
            await self.load(groups)
        except Exception as e:  # noqa: BLE001 - the next periodic read tries again
            self._none([g for g in groups if g not in self.runtime.coordinator.group_configs.read])
            log.warning("reading the group configs of %s failed: %s", ", ".join(groups[:5]), e)

    def _none(self, groups: list[str]) -> None:
        """Groups whose configs cannot be read (yet): none, for the coordinator (GroupConfigs.read)."""
        c, now = self.runtime.coordinator, self.runtime.now()
        for g in groups:
            if g and g not in c.group_configs.read:
                self.runtime.deliver(c.group_configs_updated(g, {}, now))

    async def refresh_all(self) -> None:
        """The consumer groups kshim holds and the groups with overrides (a removal is seen too)."""
        c = self.runtime.coordinator
        await self.load(sorted({*c.consumer_groups, *c.group_configs.by_group}))

    # ------------------------------------------------------------------ watched, forwarded
    def watch_alter(self, session: "Connection", slot: "Slot", frame) -> bool:
        """IncrementalAlterConfigs / AlterConfigs go to the broker; when one naming groups succeeds,
        those groups' configs are read again."""
        try:
            req = read_request(frame, slot.api_key, slot.version)
        except DecodeError:
            return False
        groups = [r.resource_name for r in req.resources if r.resource_type == GROUP]
        if not groups or req.validate_only:
            return False

        def answered(session: "Connection", slot: "Slot", frame) -> None:
            session.complete(slot, bytes(frame))
            try:
                resp = read_response(frame, slot.api_key, slot.version)
            except DecodeError:
                return
            done = [r.resource_name for r in resp.responses
                    if r.resource_type == GROUP and r.error_code == Error.NONE]
            if done:
                self._spawn(self._reread(done))
        slot.watch = answered
        return False

    async def _reread(self, groups: list[str]) -> None:
        await self.load_quietly(groups)
        await asyncio.sleep(REREAD_AFTER_ALTER_S)
        await self.load_quietly(groups)

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
