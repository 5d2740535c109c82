"""Glue between the proxy and kshim's sans-IO group coordinator (the only place they meet).

- Registers the group APIs in the proxy's routing table at the coordinator's versions.
- Decodes each group request, feeds it to the coordinator with the current monotonic time, encodes
  the responses that come out (possibly for requests parked earlier) and completes their slots.
- Owns the coordinator's clock: one loop timer at the coordinator's next deadline.
- FindCoordinator for group keys is answered here (kshim is every group's coordinator; any kshim
  port serves the group APIs; with scale_out, the instance owning the group's state partition:
  shim/state/ownership.py); transaction keys are forwarded to the broker and rewritten.
- Keeps the topic metadata (names, ids, partition counts) the coordinator checks commits against and
  re-resolves subscriptions from (kshim's own Metadata requests, periodic and on demand: topic_refresh.py).
- Transactions (TxnOffsetCommit is answered by the coordinator; the transaction coordinator stays
  the broker's): the client's InitProducerId and EndTxn are forwarded as usual but watched
  (`Slot.watch`): a successful EndTxn applies or drops the producer's pending offsets, and the
  broker's answer is held until those records are durable. TxnOffsetCommit v5+ (transactions v2)
  first enlists the group's offsets in the transaction, as the broker's coordinator does
  (shim/proxy/txn_enlist.py); v0-4 first has the transaction coordinator verify that they belong
  to the producer's ongoing transaction (KIP-890 part 1, shim/proxy/txn_verify.py).
- Durability (shim/state): at start the state topic is replayed into the coordinator before the
  listeners open; after every handle/tick the new records are appended (acks=all) and the
  responses of that step are held until their append and every earlier one completed (steps leave
  in order). A failed append answers that step's responses with the mapped error (`append_failed`).
- Authentication/authorization (shim/proxy/authz.py, only with SASL upstream or `authorizer`):
  checked in `handle` (SASL done?) and `_feed` (ACLs, after any metadata refresh: topic ids resolve
  to names); the coordinator sees only the authorized part, `_answer` puts the refused entries back.
All of it runs on the event loop thread: one actor, no locks.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import TYPE_CHECKING

from kcodec import api
from kcodec.errors import DecodeError
from kcodec.generated.list_groups import ListGroupsResponse

from ..coordinator import CoordinatorConfig, GroupCoordinator, Respond
from ..coordinator.core import VERSIONS
from ..coordinator.metadata import TopicCatalog
from ..coordinator.txn_offsets import txn_commit_refused
from ..error_answers import append_failed
from ..state import find_coordinator
from ..state.log import coordinator_error
from .periodic import every
from . import txn_verify
from .txn_enlist import COORDINATOR_NOT_AVAILABLE, ENLIST_MIN_VERSION, TxnEnlister
from .topic_refresh import TopicRefresher

if TYPE_CHECKING:
    from .server import Proxy
    from .session import Session, Slot

log = logging.getLogger("kshim.coordinator")

FIND_COORDINATOR, LIST_GROUPS, OFFSET_COMMIT, DELETE_GROUPS, OFFSET_DELETE = 10, 16, 8, 42, 47
TXN_OFFSET_COMMIT, END_TXN, INIT_PRODUCER_ID = 28, 26, 22
CONSUMER_GROUP_HEARTBEAT = 68
GROUP_KEY = 0
_WALL0, _MONO0 = int(time.time() * 1000), time.monotonic()


class GroupService:
    def __init__(self, proxy: "Proxy", config: CoordinatorConfig):
        self.proxy = proxy
        self.topics = TopicCatalog()
        self.coordinator = GroupCoordinator(config, now_ms=self._now(), topics=self.topics,
                                            on_event=self._on_event)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self.metadata = TopicRefresher(proxy, self.topics,
                                       lambda: self._deliver(self.coordinator.metadata_updated(self._now())))
        self.state = None                      # shim.state.log.StateLog when durable
        self.scale = None                      # shim.state.ownership.ScaleOut when scale_out is on
        self._held: collections.deque = collections.deque()   # (append future | None, responses)
        self._waiting_on = None
        self._refresher: asyncio.Task | None = None
        self._cleaner: asyncio.Task | None = None
        self.authz = None                      # shim.proxy.authz.AuthzService (SASL upstream / authorizer)
        self.enlister = TxnEnlister(proxy)     # TxnOffsetCommit v5+: AddOffsetsToTxn for the client
        cfg = proxy.cfg
        if cfg.authorizer or cfg.upstream_sasl_mechanism:
            from .authz import AuthzService
            self.authz = AuthzService(proxy, self._answer)

    @staticmethod
    def _now() -> int:
        """Wall-clock milliseconds that never go backwards within this process: the coordinator's
        timestamps (commit times, state times) are stored in the state topic and compared by other
        kshim processes and after restarts, so they must be epoch-based, as the broker's are."""
        return _WALL0 + int((time.monotonic() - _MONO0) * 1000)

    def install(self) -> None:
        for api_key, versions in VERSIONS.items():
            self.proxy.register(api_key, self.handle, versions)
        self.proxy.routes[FIND_COORDINATOR] = self.find_coordinator
        self.proxy.routes[END_TXN] = self.watch_end_txn
        self.proxy.routes[INIT_PRODUCER_ID] = self.watch_init_producer_id
        if self.authz is not None:
            self.authz.install()

    # ------------------------------------------------------------------ durable state
    async def start(self) -> None:
        """Create the state topic if missing, replay it, start the writer (before listeners open);
        start the periodic topic refresh."""
        cfg = self.proxy.cfg
        loop = asyncio.get_running_loop()
        if self.authz is not None:
            await self.authz.start()           # the broker's ACLs, before any client is served
        if cfg.group_metadata_refresh_ms > 0:
            self._refresher = loop.create_task(every(
                cfg.group_metadata_refresh_ms / 1000.0, self.metadata.refresh_all,
                lambda e: log.debug("periodic topic refresh failed: %s", e)))
        if cfg.offsets_retention_check_interval_ms > 0:
            self._cleaner = loop.create_task(self._cleanup_loop(cfg.offsets_retention_check_interval_ms))
        if not cfg.state_topic:
            return
        from ..state.log import StateLog
        state = StateLog(cfg, lambda: [(b.host, b.port) for b in self.proxy.topology.brokers.values()]
                         + cfg.upstream_addresses())
        t0 = time.monotonic()
        await state.ensure_topic()
        if cfg.scale_out:                      # partitions are taken as the instances' group assigns them
            from ..state.ownership import ScaleOut
            self.state, state.owned = state, {}
            state.start_writer()
            self.scale = ScaleOut(self, state)
            self.scale.start()
            return
        records = await state.load()
        now = self._now()
        for rec in records:
            self.coordinator.replay(rec, now_ms=now)
        self.coordinator.records = []
        self.state = state
        state.start_writer()
        log.info("replayed %d records of %s (%d groups) in %.2fs", len(records), cfg.state_topic,
                 len(self.coordinator.groups), time.monotonic() - t0)
        self._rearm()

    async def stop(self) -> None:
        for task in (self._refresher, self._cleaner):
            if task is not None:
                task.cancel()
        if self.authz is not None:
            await self.authz.stop()
        if self.scale is not None:
            await self.scale.stop()
        if self.state is not None:
            await self.state.close()
        self.enlister.close()

    # ------------------------------------------------------------------ requests
    def _decode(self, session: "Session", frame, api_key: int, version: int):
        """The request body as the broker reads it (`RequestContext.parseRequest`): bytes after the
        body are ignored, not refused."""
        buf = bytes(frame)                     # bytes: the decoders' fast path (no memoryview copies)
        _, pos = api.RequestHeader.decode_from(buf, 0, api.request_header_version(api_key, version))
        return api.REQUESTS[api_key].decode_from(buf, pos, version)[0]

    def handle(self, session: "Session", slot: "Slot", frame) -> bool:
        try:
            req = self._decode(session, frame, slot.api_key, slot.version)
        except DecodeError as e:
            session.bad_input(f"malformed {api.API_KEYS.get(slot.api_key)} v{slot.version} request: {e}")
            return True
        authz = self.authz
        if authz is not None:
            if not authz.admitted(session):
                return True
            if slot.api_key == LIST_GROUPS:    # filtered however it is answered (scale-out merges)
                req = authz.gate(session, slot, req, None)
        if slot.api_key == LIST_GROUPS and not self._lists_groups(session):
            self._answer(session, slot, ListGroupsResponse(error_code=0, groups=[]))
            return True
        if slot.api_key == LIST_GROUPS and self.scale is not None and self.scale.list_groups(session, slot, req):
            return True                        # answered once the other instances answered
        if self.metadata.needs(self.coordinator, slot.api_key, slot.version, req):
            asyncio.get_running_loop().create_task(self._feed_after_metadata(session, slot, req))
            return True
        self._feed(session, slot, req)
        return True

    def _feed(self, session: "Session", slot: "Slot", req) -> None:
        if self.authz is not None and slot.api_key != LIST_GROUPS:
            req = self.authz.gate(session, slot, req, self._topic_name)
            if req is None:                    # refused: answered
                return
        patch = None
        if self.scale is not None:             # groups of state partitions served elsewhere / loading
            early, patch = self.scale.route(session, slot, req)
            if early is not None:
                return self._answer(session, slot, early)
        if slot.api_key == TXN_OFFSET_COMMIT and self._enlists(req):
            # v5+ (transactions v2): add the offsets to the transaction first, as the broker's coordinator
            # does; v0-4: verify the transaction first (KIP-890 part 1, txn_verify.py)
            asyncio.get_running_loop().create_task(self._enlist_then_handle(session, slot, req, patch))
            return
        self._handle(session, slot, req, patch)

    def _enlists(self, req) -> bool:
        """KafkaApis hands the coordinator a TxnOffsetCommit only with a partition the metadata knows, and
        GroupCoordinatorService.commitTransactionalOffsets refuses an empty group id before enlisting."""
        return bool(req.group_id) and any(0 <= p.partition_index < (self.topics.partitions(t.name) or 0)
                                          for t in req.topics for p in t.partitions)

    async def _enlist_then_handle(self, session: "Session", slot: "Slot", req, patch) -> None:
        try:
            if slot.version >= ENLIST_MIN_VERSION:
                code = await self.enlister.enlist(req.transactional_id, req.producer_id, req.producer_epoch,
                                                  req.group_id)
            else:
                code = await txn_verify.verify(self.enlister, slot.version, req.transactional_id, req.producer_id,
                                               req.producer_epoch, req.group_id, await self._offsets_partitions())
        except Exception as e:  # noqa: BLE001 - answered as the broker does when it cannot tell
            log.warning("enlisting the offsets of %s in transaction %s failed: %s", req.group_id,
                        req.transactional_id, e)
            code = COORDINATOR_NOT_AVAILABLE
        if session.closed:
            return
        if code:
            body = txn_commit_refused(self.topics, req, code)
            if patch is not None:
                patch(body)
            self._answer(session, slot, body)
            return
        self._handle(session, slot, req, patch)

    async def _offsets_partitions(self) -> int | None:
        """The partition count of the upstream's __consumer_offsets (GroupCoordinatorService.partitionFor)."""
        if self.topics.partitions(txn_verify.OFFSETS_TOPIC) is None:
            await self.metadata.refresh_topics([txn_verify.OFFSETS_TOPIC])
        return self.topics.partitions(txn_verify.OFFSETS_TOPIC)

    def _handle(self, session: "Session", slot: "Slot", req, patch) -> None:
        regex_filter = None            # the member's TOPIC DESCRIBE right resolves its regex (authorizer)
        if self.authz is not None and slot.api_key == CONSUMER_GROUP_HEARTBEAT:
            regex_filter = self.authz.topic_filter(session)
        out = self.coordinator.handle(slot.api_key, slot.version, req, (session, slot),
                                      client_id=session.client_id or "", client_host=session.peer_host,
                                      now_ms=self._now(), topic_filter=regex_filter)
        if patch is not None:
            for r in out:
                if r.token[1] is slot:
                    patch(r.body)
        self._deliver(out)

    def _deliver(self, out) -> None:
        records = self.coordinator.records
        if records:
            self.coordinator.records = []
        if self.state is None:
            self._send(out, 0)
        elif records or self._held:
            self._held.append((self.state.append(records) if records else None, out))
            self._release()
        else:
            self._send(out, 0)
        self._rearm()

    def _release(self, _=None) -> None:
        """Send held responses in step order, each once its own append is done."""
        held = self._held
        while held:
            fut, out = held[0]
            if fut is not None and not fut.done():
                if self._waiting_on is not fut:
                    self._waiting_on = fut
                    fut.add_done_callback(self._release)
                return
            held.popleft()
            self._send(out, fut.result() if fut is not None else 0)

    def _send(self, out, append_error: int) -> None:
        for r in out:
            session, slot = r.token
            if type(r.body) is bytes:   # a broker's answer held for this step's append (EndTxn)
                if append_error:
                    log.warning("transaction end not durable (append error %d); served from memory",
                                append_error)
                session.complete(slot, r.body)
                continue
            body = r.body if not append_error else append_failed(slot.api_key, r.body, coordinator_error(append_error))
            self._answer(session, slot, body)

    def _answer(self, session: "Session", slot: "Slot", body) -> None:
        if self.authz is not None:
            body = self.authz.finish(session, slot, body)
        try:
            hv = api.response_header_version(slot.api_key, slot.version)
            data = api.ResponseHeader(correlation_id=slot.correlation_id).encode(hv) + body.encode(slot.version)
        except Exception:
            log.exception("cannot encode %s v%s response", api.API_KEYS.get(slot.api_key), slot.version)
            session.close()
            return
        session.complete(slot, data)

    def _lists_groups(self, session: "Session") -> bool:
        """Admin clients ask every broker and concatenate: only one port lists the groups."""
        node = session.listener.node_id
        return node is None or node == self.coordinator_node()

    # ------------------------------------------------------------------ clock
    def _rearm(self) -> None:
        deadline = self.coordinator.next_deadline()
        if deadline is None or deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        delay = max(deadline - self._now(), 0) / 1000.0
        self._timer_at = deadline
        self._timer = loop.call_later(delay, self._tick)

    def _tick(self) -> None:
        self._timer = self._timer_at = None
        self._deliver(self.coordinator.tick(self._now()))

    # ------------------------------------------------------------------ FindCoordinator
    def coordinator_node(self) -> int:
        nodes = sorted(self.proxy.topology.brokers)
        return nodes[0] if nodes else 0

    def find_coordinator(self, session: "Session", slot: "Slot", frame) -> bool:
        try:
            req = self._decode(session, frame, slot.api_key, slot.version)
        except DecodeError as e:
            session.bad_input(f"malformed FindCoordinator request: {e}")
            return True
        if req.key_type != GROUP_KEY:
            return False  # transaction coordinator: the broker's, forwarded and rewritten
        if self.authz is not None and not self.authz.admitted(session):
            return True
        node, topo = self.coordinator_node(), self.proxy.topology
        here = (topo.advertised_host, topo.port_for(node))
        scale = self.scale

        def locate(group: str):
            if scale is None:
                return here
            owner = scale.owner_of(group)
            return None if owner is None else here if owner is scale.me else (owner.host, owner.port_for(node))
        body = find_coordinator.answer(req, slot.version, node, locate)
        if self.authz is not None:
            body = self.authz.find_coordinator(session, slot, req, body)
        self._answer(session, slot, body)
        return True

    def _topic_name(self, topic_id) -> str | None:
        info = self.topics.topic(topic_id)
        return None if info is None else info.name

    # ------------------------------------------------------------------ transactions (watched, forwarded)
    def watch_end_txn(self, session: "Session", slot: "Slot", frame) -> bool:
        """EndTxn goes to the broker; when it succeeds, the producer's pending transactional offsets
        are committed or aborted here before the client sees the answer."""
        try:
            req = self._decode(session, frame, slot.api_key, slot.version)
        except DecodeError:
            return False                       # the broker judges it
        pid, epoch, committed = req.producer_id, req.producer_epoch, bool(req.committed)

        def answered(session: "Session", slot: "Slot", frame) -> None:
            resp = self._decode_response(slot, frame)
            if resp is None or resp.error_code != 0:
                return session.complete(slot, bytes(frame))
            out = self.coordinator.end_transaction(pid, committed, self._now(), producer_epoch=epoch)
            self._deliver(out + [Respond((session, slot), bytes(frame))])
        slot.watch = answered
        return False

    def watch_init_producer_id(self, session: "Session", slot: "Slot", frame) -> bool:
        """InitProducerId of a transactional producer: its transaction timeout, and a new epoch (the
        broker aborts the previous epoch's transaction, so its pending offsets go)."""
        try:
            req = self._decode(session, frame, slot.api_key, slot.version)
        except DecodeError:
            return False
        if req.transactional_id is None:
            return False                       # idempotent producer: no transactions
        timeout = req.transaction_timeout_ms

        def answered(session: "Session", slot: "Slot", frame) -> None:
            resp = self._decode_response(slot, frame)
            if resp is None or resp.error_code != 0:
                return session.complete(slot, bytes(frame))
            out = self.coordinator.producer_initialized(resp.producer_id, resp.producer_epoch, timeout,
                                                        now_ms=self._now())
            self._deliver(out + [Respond((session, slot), bytes(frame))])
        slot.watch = answered
        return False

    @staticmethod
    def _decode_response(slot: "Slot", frame):
        try:
            hv = api.response_header_version(slot.api_key, slot.version)
            _, pos = api.ResponseHeader.decode_from(frame, 0, hv)
            return api.RESPONSES[slot.api_key].decode(memoryview(frame)[pos:], slot.version)
        except DecodeError as e:
            log.warning("cannot read %s v%s response: %s", api.API_KEYS.get(slot.api_key), slot.version, e)
            return None

    async def _feed_after_metadata(self, session: "Session", slot: "Slot", req) -> None:
        try:
            await self.metadata.refresh_for(self.coordinator, slot.api_key, slot.version, req)
        except Exception as e:  # upstream unreachable: answer as the broker would when it cannot tell
            log.warning("metadata refresh for %s failed: %s", api.API_KEYS.get(slot.api_key), e)
        if not session.closed:
            self._feed(session, slot, req)

    async def _cleanup_loop(self, interval_ms: int) -> None:
        """Offset retention: Kafka's periodic group metadata cleanup (coordinator/retention.py)."""
        while True:
            await asyncio.sleep(interval_ms / 1000.0)
            self._deliver(self.coordinator.expire_offsets(self._now()))

    # ------------------------------------------------------------------ events
    def _on_event(self, ev: dict) -> None:
        self.proxy.trace_event(ev)
        kind = ev.get("event")
        level = logging.INFO if kind in ("rebalance", "generation", "member_removed", "session_timeout",
                                         "static_member_replaced", "static_rejoin_without_rebalance",
                                         "member_left", "group_deleted", "txn_offsets_dropped") else logging.DEBUG
        if log.isEnabledFor(level):
            log.log(level, "%s", " ".join(f"{k}={v}" for k, v in ev.items() if k != "assignments"))

