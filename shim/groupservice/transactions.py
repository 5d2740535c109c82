"""Transactions around kshim's group coordinator (the transaction coordinator stays the broker's).

- TxnOffsetCommit is enlisted before the coordinator sees it (`enlists`, `enlist`; request_path.py gate 6), as
  the broker's GroupCoordinatorService.commitTransactionalOffsets does: v5+ (transactions v2) adds
  the group's offsets to the transaction (AddOffsetsToTxn, txn_enlist.py); v0-4 has the transaction
  coordinator verify that they belong to the producer's ongoing transaction (KIP-890 part 1,
  txn_verify.py). A refusal answers the commit without the coordinator.
- The client's EndTxn and InitProducerId are forwarded as usual but watched (`Slot.watch`): a
  successful EndTxn commits or aborts the producer's pending offsets, a transactional
  InitProducerId (a new epoch: the broker aborted the previous one) drops them; the broker's answer
  goes out through the runtime, so it waits for those records to be durable (runtime.py).
- Transactions ended elsewhere (timed out, fenced, aborted by an admin, ended through another
  instance) are learned from their markers in `__consumer_offsets` (txn_markers.py); each accepted
  TxnOffsetCommit is watched from the partition's high watermark read after its enlisting.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kcodec import api
from kcodec.errors import DecodeError
from kcodec.protocol import Error

from ..coordinator.txn_offsets import check_topics, txn_commit_refused
from . import txn_verify
from .bodies import read_request, read_response
from .txn_enlist import COORDINATOR_NOT_AVAILABLE, ENLIST_MIN_VERSION, TxnEnlister
from .txn_markers import TxnMarkerWatch

if TYPE_CHECKING:
    from .host import Connection, Host, Slot
    from .runtime import GroupRuntime
    from .topic_refresh import TopicRefresher

log = logging.getLogger("kshim.coordinator")


class Transactions:
    def __init__(self, proxy: "Host", runtime: "GroupRuntime", metadata: "TopicRefresher"):
        self.runtime, self.metadata = runtime, metadata
        self.enlister = TxnEnlister(proxy)     # kshim's own connections to the transaction coordinators
        self.markers = TxnMarkerWatch(proxy, runtime, self.enlister, metadata)

    def start(self) -> None:
        self.markers.start()

    def close(self) -> None:
        self.markers.close()
        self.enlister.close()

    # ------------------------------------------------------------------ TxnOffsetCommit
    def enlists(self, req, version: int) -> bool:
        """KafkaApis hands the coordinator a TxnOffsetCommit only with a partition the metadata knows (by
        topic id from v6, KIP-1319), and GroupCoordinatorService.commitTransactionalOffsets refuses an
        empty group id before enlisting."""
        return bool(req.group_id) and bool(check_topics(self.runtime.topics, req, version)[1])

    async def enlist(self, session: "Connection", slot: "Slot", req) -> bool:
        """Enlist the offsets' partition in the transaction (v5+: AddOffsetsToTxn, txn_enlist.py;
        v0-4: verified, txn_verify.py). False: refused, and answered as the broker does."""
        try:
            if slot.version >= ENLIST_MIN_VERSION:
                code = await self.enlister.enlist(req.transactional_id, req.producer_id, req.producer_epoch,
                                                  req.group_id)
            else:
                code = await txn_verify.verify(self.enlister, slot.version, req.transactional_id, req.producer_id,
                                               req.producer_epoch, req.group_id, await self.markers.offsets_partitions())
        except Exception as e:  # noqa: BLE001 - answered as the broker does when it cannot tell
            log.warning("enlisting the offsets of %s in transaction %s failed: %s", req.group_id,
                        req.transactional_id, e)
            code = COORDINATOR_NOT_AVAILABLE
        if session.closed:
            return False
        if code:
            self.runtime.deliver(self.runtime.coordinator.txn_commit_unverified(req.group_id, self.runtime.now()))
            self.runtime.answer(session, slot, txn_commit_refused(self.runtime.topics, req, slot.version, code,
                                                                  self.runtime.coordinator.cfg.scala_coordinator()))
            return False
        return True

    # ------------------------------------------------------------------ watched, forwarded
    def watch_end_txn(self, session: "Connection", slot: "Slot", frame) -> bool:
        """EndTxn goes to the broker; when it succeeds, the producer's pending transactional offsets
        are committed or aborted here before the client sees the answer."""
        try:
            req = read_request(frame, slot.api_key, slot.version)
        except DecodeError:
            return False                       # the broker judges it
        pid, epoch, committed = req.producer_id, req.producer_epoch, bool(req.committed)
        runtime = self.runtime

        def answered(session: "Connection", slot: "Slot", frame) -> None:
            resp = _response(slot, frame)
            if resp is None or resp.error_code != Error.NONE:
                return session.complete(slot, bytes(frame))
            out = runtime.coordinator.end_transaction(pid, committed, runtime.now(), producer_epoch=epoch)
            runtime.deliver(out, ((session, slot, bytes(frame)),))
        slot.watch = answered
        return False

    def watch_init_producer_id(self, session: "Connection", slot: "Slot", frame) -> bool:
        """InitProducerId of a transactional producer: its transaction timeout, and a new epoch (the
        broker aborts the previous epoch's transaction, so its pending offsets go)."""
        try:
            req = read_request(frame, slot.api_key, slot.version)
        except DecodeError:
            return False
        if req.transactional_id is None:
            return False                       # idempotent producer: no transactions
        timeout = req.transaction_timeout_ms
        runtime = self.runtime

        def answered(session: "Connection", slot: "Slot", frame) -> None:
            resp = _response(slot, frame)
            if resp is None or resp.error_code != Error.NONE:
                return session.complete(slot, bytes(frame))
            out = runtime.coordinator.producer_initialized(resp.producer_id, resp.producer_epoch, timeout,
                                                           now_ms=runtime.now())
            runtime.deliver(out, ((session, slot, bytes(frame)),))
        slot.watch = answered
        return False


def _response(slot: "Slot", frame):
    try:
        return read_response(frame, slot.api_key, slot.version)
    except DecodeError as e:
        log.warning("cannot read %s v%s response: %s", api.API_KEYS.get(slot.api_key), slot.version, e)
        return None

