"""The proxy: a bootstrap listener plus one listener per upstream broker, kept in step with the
upstream topology, and the routing table where locally answered APIs plug in.

Routing table: `Proxy.routes[api_key] = handler(session, slot, frame) -> bool`: True, the handler took
the request and completes the slot (`session.complete(slot, response_frame)`, now or later); False,
declined, forwarded to the broker the client's port stands for (`slot.watch` may take the broker's
answer). The contract in full: shim/groupservice/host.py, `Route`. Every api key not in the table
is forwarded. The group service registers its APIs here.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import ssl
from typing import Callable

from kcodec import api

from ..config import Config, ConfigError
from ..coordinator.releases import (GROUP_RANGES, NEWEST, consumer_protocol_probe, identify, protocol_enabled,
                                    share_protocol_probe, unsupported_message)
from ..kafkaclient.client import UpstreamClient, upstream_tls
from .faults import FaultInjector
from .rewrite import Rewriter
from .session import Session
from .slot import Slot
from .topology import Broker, Topology
from .versions import advertised_range

CONSUMER_GROUP_HEARTBEAT = api.ApiKey.CONSUMER_GROUP_HEARTBEAT
SHARE_GROUP_HEARTBEAT = api.ApiKey.SHARE_GROUP_HEARTBEAT

log = logging.getLogger("kshim.proxy")

Handler = Callable[[Session, Slot, memoryview], bool]   # True: taken; False: declined


def client_listener_tls(cfg: Config) -> ssl.SSLContext | None:
    if not cfg.tls_cert:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cfg.tls_cert, cfg.tls_key)
    if cfg.tls_client_ca:
        ctx.load_verify_locations(cfg.tls_client_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class Listener:
    def __init__(self, proxy: "Proxy", node_id: int | None, port: int):
        self.proxy, self.node_id, self.port = proxy, node_id, port
        self.name = f"bootstrap:{port}" if node_id is None else f"node {node_id}:{port}"
        self.server: asyncio.AbstractServer | None = None

    def upstream_for_new_connection(self) -> Broker:
        if self.node_id is not None:
            broker = self.proxy.topology.upstream_of(self.node_id)
            if broker is None:
                raise ConnectionError(f"node {self.node_id} is not in the cluster any more")
            return broker
        return self.proxy.next_bootstrap_broker()

    async def start(self, host: str, tls) -> None:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: Session(self.proxy, self), host, self.port,
                                               ssl=tls, reuse_address=True, backlog=1024)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for s in list(self.proxy.sessions):
            if s.listener is self:
                s.close()


class Proxy:
    """Built and plugged together by shim/runner.py (`build`): the tracer, metrics and fault rules
    are handed in; the group service (`groups`) and the admin endpoint (`admin`) are set there."""

    def __init__(self, cfg: Config, *, tracer=None, metrics=None, faults: FaultInjector | None = None):
        self.cfg = cfg
        self.topology = Topology(cfg.broker_base, cfg.advertised)
        self.routes: dict[int, Handler] = {}
        self.local_versions: dict[int, tuple[int, int]] = {}
        self.rewriter = Rewriter(self.topology, self.local_versions)
        self.sessions: set[Session] = set()
        self.allowed: dict[int, tuple[int, int]] = {}
        self.listeners: dict[int, Listener] = {}
        self.bootstrap: Listener | None = None
        self.stats: collections.Counter = collections.Counter()
        self._rr = itertools.count()
        self._refresh: asyncio.Task | None = None
        self._client_tls = client_listener_tls(cfg)
        self._upstream_tls = upstream_tls(cfg)
        self.cluster_id: str | None = None
        self.release = ""               # the Kafka release kshim answers as (shim/coordinator/releases.py)
        self.tracer = tracer            # shim.trace.tracer.Tracer with --trace DIR
        self.metrics = metrics          # shim.metrics.Metrics with --admin-port
        self.faults = faults if faults is not None else FaultInjector()   # rules: config / admin endpoint
        self.admin = None               # shim.admin_http.AdminServer with --admin-port
        self.groups = None              # shim/groupservice/service.py's GroupService with group_coordinator = kshim
        self.consumer_protocol = None   # KIP-848 on upstream? (_probe_consumer_protocol)

    # ------------------------------------------------------------------ routing
    def register(self, api_key: int, handler: Handler, versions: tuple[int, int]) -> None:
        """Answer `api_key` locally (the coordinator's entry point) at `versions`."""
        self.routes[api_key] = handler
        self.local_versions[api_key] = versions

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        brokers, versions = await self.discover()
        self.release = self._release(versions)
        self._set_allowed(versions)
        self.topology.update(brokers)
        if self.groups is not None:
            await self.groups.start()      # replay the durable group state before serving
        self.bootstrap = Listener(self, None, self.cfg.listen_port)
        await self.bootstrap.start(self.cfg.listen_host, self._client_tls)
        await self.ensure_listeners(brokers)
        self._refresh = asyncio.get_running_loop().create_task(self._refresh_loop())
        if self.admin is not None:
            await self.admin.start()

    async def stop(self) -> None:
        if self._refresh:
            self._refresh.cancel()
        if self.admin is not None:
            self.admin.close()
        for lst in [self.bootstrap, *self.listeners.values()]:
            if lst:
                lst.close()
        for s in list(self.sessions):
            s.close()
        if self.groups is not None:
            await self.groups.stop()
        if self.tracer is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.tracer.close)

    def trace_event(self, ev: dict) -> None:
        """Coordinator events into the trace (GroupService forwards its on_event here)."""
        if self.tracer is not None:
            self.tracer.event(ev)
        if self.metrics is not None:
            self.metrics.event(ev)

    def _release(self, versions: dict[int, tuple[int, int]]) -> str:
        """The release whose group coordinator kshim answers as: coordinator_version, else the upstream
        broker's (releases.identify); handed to the coordinator. None identified: ConfigError."""
        found = identify(versions)
        release = self.cfg.coordinator_version or found
        if release is None:
            if self.groups is None:         # a pure proxy answers nothing itself
                return NEWEST
            raise ConfigError(unsupported_message(versions))
        if self.release and release != self.release:
            log.warning("the upstream broker now looks like Kafka %s (was %s): kshim answers as %s from now on",
                        found, self.release, release)
        if self.groups is not None:
            self.groups.coordinator.cfg.release = release
        return release

    def _set_allowed(self, versions: dict[int, tuple[int, int]]) -> None:
        # the coordinator's ranges within those of the release it answers as (with coordinator_version
        # the upstream may offer more); the Rewriter shapes clients' ApiVersions with the same table
        release_ranges = GROUP_RANGES.get(self.release, GROUP_RANGES[NEWEST])
        local = {}
        for key, (lo, hi) in self.local_versions.items():
            rlo, rhi = release_ranges.get(key, (lo, hi))
            local[key] = (max(lo, rlo), min(hi, rhi))
        self.rewriter.local_versions = local
        allowed = {}
        for key, (lo, hi) in versions.items():
            rng = advertised_range(key, lo, hi, api.VERSIONS, local)
            if rng:
                allowed[key] = rng
        self.allowed = allowed

    async def discover(self) -> tuple[list[Broker], dict[int, tuple[int, int]]]:
        """Metadata and ApiVersions from the first upstream broker that answers."""
        candidates = [(b.host, b.port) for b in self.topology.brokers.values()] + self.cfg.upstream_addresses()
        errors = []
        for host, port in candidates:
            try:
                client = await UpstreamClient.connect(self.cfg, host, port)
            except (OSError, asyncio.TimeoutError, ConnectionError) as e:
                errors.append(f"{host}:{port}: {e or type(e).__name__}")
                continue
            try:
                brokers, resp = await client.metadata()
                self.cluster_id = resp.cluster_id
                if self.consumer_protocol is None and self.groups is not None:
                    await self._probe_consumer_protocol(client)
                    await self._probe_share_protocol(client)
                return brokers, client.versions
            except (OSError, asyncio.TimeoutError, ConnectionError) as e:
                errors.append(f"{host}:{port}: {e or type(e).__name__}")
            finally:
                client.close()
        raise ConnectionError("no upstream broker answered: " + "; ".join(errors))

    async def _probe(self, client, key: int, version: int, probe, what: str) -> bool | None:
        """Whether the upstream has a protocol on, asked once with a request that changes nothing
        (releases.*_probe); None when it could not be asked (kshim then assumes it is on)."""
        try:
            answer = await client.request(key, version, probe)
        except (OSError, asyncio.TimeoutError, ConnectionError, api.DecodeError) as e:
            log.warning("could not ask the upstream whether %s is on (%s); kshim assumes it is", what, e)
            return None
        return protocol_enabled(answer.error_code)

    async def _probe_consumer_protocol(self, client) -> None:
        """Is KIP-848's consumer protocol on upstream (group.coordinator.rebalance.protocols)? The
        coordinator answers its ConsumerGroup* APIs as the broker would."""
        if CONSUMER_GROUP_HEARTBEAT not in client.versions:
            self.consumer_protocol = False
        else:
            on = await self._probe(client, CONSUMER_GROUP_HEARTBEAT, 0, consumer_protocol_probe(),
                                   "the consumer group protocol")
            if on is None:
                return
            self.consumer_protocol = on
        self.groups.coordinator.cfg.consumer_protocol = self.consumer_protocol
        if not self.consumer_protocol:
            log.info("the upstream's group coordinator has the consumer group protocol (KIP-848) off: "
                     "kshim answers ConsumerGroupHeartbeat and ConsumerGroupDescribe UNSUPPORTED_VERSION, as it does")

    async def _probe_share_protocol(self, client) -> None:
        """Are share groups (KIP-932) on upstream? Off (Kafka 4.0 and 4.1's default), the broker answers
        every share group API UNSUPPORTED_VERSION whatever group it names: kshim then passes them all
        on (broker_groups.py), not answering for its own groups first."""
        if SHARE_GROUP_HEARTBEAT not in client.versions:
            return
        version = min(client.versions[SHARE_GROUP_HEARTBEAT][1], api.VERSIONS[SHARE_GROUP_HEARTBEAT][1])
        on = await self._probe(client, SHARE_GROUP_HEARTBEAT, version, share_protocol_probe(), "share groups")
        if on is False:
            self.groups.broker_groups.share_protocol = False
            log.info("the upstream has share groups (KIP-932) off: their APIs pass through to it, which "
                     "answers UNSUPPORTED_VERSION")

    async def _refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(self.cfg.metadata_refresh_s)
            try:
                brokers, versions = await self.discover()
            except Exception as e:
                log.warning("topology refresh failed: %s", e)
                continue
            try:
                self.release = self._release(versions)
            except ConfigError as e:
                log.warning("topology refresh: %s; kshim keeps answering as Kafka %s", e, self.release)
            self._set_allowed(versions)
            added, removed = self.topology.update(brokers)
            if added:
                await self.ensure_listeners(added)
            for b in removed:
                lst = self.listeners.pop(b.node_id, None)
                if lst:
                    log.info("broker %s left the cluster; closing %s", b.node_id, lst.name)
                    lst.close()

    async def ensure_listeners(self, brokers: list[Broker]) -> None:
        for b in brokers:
            if b.node_id in self.listeners:
                continue
            lst = Listener(self, b.node_id, self.topology.port_for(b.node_id))
            self.listeners[b.node_id] = lst
            try:
                await lst.start(self.cfg.listen_host, self._client_tls)
            except OSError as e:
                self.listeners.pop(b.node_id, None)
                log.error("cannot listen on %s for node %s: %s", lst.port, b.node_id, e)
                raise
            log.info("listening for node %s on %s:%s -> %s:%s", b.node_id, self.cfg.listen_host, lst.port,
                     b.host, b.port)

    # ------------------------------------------------------------------ upstream
    def next_bootstrap_broker(self) -> Broker:
        brokers = sorted(self.topology.brokers.values(), key=lambda b: b.node_id)
        if brokers:
            return brokers[next(self._rr) % len(brokers)]
        host, port = self.cfg.upstream_addresses()[0]
        return Broker(-1, host, port)

    async def open_upstream(self, broker: Broker, factory):
        loop = asyncio.get_running_loop()
        tls = self._upstream_tls
        transport, proto = await asyncio.wait_for(
            loop.create_connection(factory, broker.host, broker.port, ssl=tls,
                                   server_hostname=broker.host if tls else None), 10)
        return transport, proto

    # ------------------------------------------------------------------ banner
    def banner(self) -> str:
        adv = self.cfg.advertised
        lines = [f"kshim listening: bootstrap servers for clients = {adv}:{self.cfg.listen_port}",
                 f"  upstream cluster {self.cluster_id} ({self.cfg.upstream})"]
        if self.groups is not None:
            how = "coordinator_version" if self.cfg.coordinator_version else "the upstream's release"
            lines.append(f"  group coordinator: answering as Kafka {self.release} ({how})")
        for nid in sorted(self.listeners):
            b = self.topology.brokers.get(nid)
            up = f"{b.host}:{b.port}" if b else "?"
            lines.append(f"  node {nid}: {adv}:{self.listeners[nid].port} -> {up}")
        adopted = {k: v for k, v in self.cfg.adopted.items() if k not in ("skipped", "kept")}
        if adopted:
            lines += _wrapped("group settings from the broker: ", [f"{k.replace('_', '.')}={v}"
                                                                 for k, v in adopted.items()])
        kept = self.cfg.adopted.get("kept")
        if kept:
            lines += _wrapped("kept as given: ", [f"{k.replace('_', '.')}={mine} (broker: {theirs})"
                                                 for k, (mine, theirs) in kept.items()])
        return "\n".join(lines)


def _wrapped(title: str, items: list[str], width: int = 100) -> list[str]:
    """`title` and `items` in lines a terminal shows whole (an item is never split; continuation
    lines indented)."""
    lines, line = [], "  " + title
    for i, item in enumerate(items):
        text = item + ("," if i < len(items) - 1 else "")
        if len(line) + len(text) + 1 > width and line.strip() != title.strip():
            lines.append(line.rstrip())
            line = "    "
        line += text + " "
    return lines + [line.rstrip()]
