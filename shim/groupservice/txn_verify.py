"""TxnOffsetCommit v0-4: the transaction is verified at the transaction coordinator before the group
coordinator takes the offsets (KIP-890 part 1, `transaction.partition.verification.enable`).

The broker's GroupCoordinatorService.commitTransactionalOffsets schedules the write through
CoordinatorRuntime.scheduleTransactionalWriteOperation, which first calls
CoordinatorPartitionWriter.maybeStartTransactionVerification for the group's `__consumer_offsets`
partition (GroupCoordinatorService.partitionFor: Utils.abs(groupId.hashCode) % partitions).
ReplicaManager.maybeSendPartitionToTransactionCoordinator then has AddPartitionsToTxnManager send
AddPartitionsToTxn v4+ with `verifyOnly` (for TxnOffsetCommit v5+ it adds the partition instead:
txn_enlist.py) to the transaction coordinator, whose TransactionCoordinator
.handleVerifyPartitionsInTransaction answers per partition: INVALID_PRODUCER_ID_MAPPING (no such
transactional id, or another producer id), PRODUCER_FENCED (another epoch), CONCURRENT_TRANSACTIONS
(PrepareCommit/PrepareAbort), TRANSACTION_ABORTABLE (the partition is not in the transaction),
NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST (empty transactional id). Nothing is
accepted, and no group is created, when it says no; `client_error` is what the client then sees.

kshim asks the same question through its own upstream connection (the enlister's, txn_enlist.py).
Where the broker would skip verification, or kshim cannot ask it, the commit goes on unverified:
the upstream has no AddPartitionsToTxn v4 (AddPartitionsToTxnManager skips on a version mismatch),
kshim's principal lacks the CLUSTER_ACTION right that v4 needs (a warning: the broker's own
inter-broker principal always has it), or the cluster has no `__consumer_offsets` topic yet.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from kcodec.generated.add_partitions_to_txn import (AddPartitionsToTxnRequest, AddPartitionsToTxnTopic,
                                                    AddPartitionsToTxnTransaction)
from kcodec.protocol import ApiKey, Error

from ..coordinator.assignors.javaorder import java_string_hash

if TYPE_CHECKING:
    from .txn_enlist import TxnEnlister

log = logging.getLogger("kshim.proxy")

ADD_PARTITIONS_TO_TXN = ApiKey.ADD_PARTITIONS_TO_TXN
VERIFY_MIN_API_VERSION = 4           # AddPartitionsToTxn for brokers: batches, verifyOnly
OFFSETS_TOPIC = "__consumer_offsets"
VERIFY_MAX_VERSION = 4               # TxnOffsetCommit v5+ adds the partition (txn_enlist.py)
ATTEMPTS = 3

NONE, UNKNOWN_SERVER_ERROR = Error.NONE, Error.UNKNOWN_SERVER_ERROR
UNKNOWN_TOPIC_OR_PARTITION, MESSAGE_TOO_LARGE = Error.UNKNOWN_TOPIC_OR_PARTITION, Error.MESSAGE_TOO_LARGE
NOT_LEADER_OR_FOLLOWER = Error.NOT_LEADER_OR_FOLLOWER
REQUEST_TIMED_OUT, NETWORK_EXCEPTION = Error.REQUEST_TIMED_OUT, Error.NETWORK_EXCEPTION
COORDINATOR_LOAD_IN_PROGRESS = Error.COORDINATOR_LOAD_IN_PROGRESS
COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = Error.COORDINATOR_NOT_AVAILABLE, Error.NOT_COORDINATOR
NOT_ENOUGH_REPLICAS, RECORD_LIST_TOO_LARGE = Error.NOT_ENOUGH_REPLICAS, Error.RECORD_LIST_TOO_LARGE
CLUSTER_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION = Error.CLUSTER_AUTHORIZATION_FAILED, Error.UNSUPPORTED_VERSION
INVALID_REQUEST, INVALID_FETCH_SIZE = Error.INVALID_REQUEST, Error.INVALID_FETCH_SIZE
INVALID_TXN_STATE, PRODUCER_FENCED = Error.INVALID_TXN_STATE, Error.PRODUCER_FENCED
INVALID_PRODUCER_EPOCH = Error.INVALID_PRODUCER_EPOCH
KAFKA_STORAGE_ERROR, TRANSACTION_ABORTABLE = Error.KAFKA_STORAGE_ERROR, Error.TRANSACTION_ABORTABLE
SKIP = None                          # verification skipped: the commit goes on


def offsets_partition(group_id: str, partitions: int) -> int:
    """GroupCoordinatorService.partitionFor: Utils.abs(groupId.hashCode()) % partitions (Java's
    String.hashCode over UTF-16 code units; Utils.abs(Integer.MIN_VALUE) is 0)."""
    h = java_string_hash(group_id)          # unsigned 32 bits
    if h >= 1 << 31:
        h -= 1 << 32
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def client_error(version: int, code: int) -> int:
    """A verification error as the TxnOffsetCommit client sees it: AddPartitionsToTxnManager
    (PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE -> INVALID_TXN_STATE for v0-3),
    CoordinatorOperationExceptionHelper.handleOperationException, then KafkaApis'
    COORDINATOR_LOAD_IN_PROGRESS -> COORDINATOR_NOT_AVAILABLE for v0-1."""
    if code == PRODUCER_FENCED:
        code = INVALID_PRODUCER_EPOCH
    elif code == TRANSACTION_ABORTABLE and version <= 3:
        code = INVALID_TXN_STATE
    if code == NETWORK_EXCEPTION:
        code = COORDINATOR_LOAD_IN_PROGRESS
    elif code in (UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT):
        code = COORDINATOR_NOT_AVAILABLE
    elif code in (NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR):
        code = NOT_COORDINATOR
    elif code in (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE):
        code = UNKNOWN_SERVER_ERROR
    if code == COORDINATOR_LOAD_IN_PROGRESS and version < 2:
        code = COORDINATOR_NOT_AVAILABLE
    return code


def partition_error(resp, partition: int) -> int | None:
    """The AddPartitionsToTxn v4+ answer for our one partition (top-level error first);
    SKIP when the broker would not have verified."""
    if resp.error_code == CLUSTER_AUTHORIZATION_FAILED:
        return SKIP
    if resp.error_code:
        return resp.error_code
    for txn in resp.results_by_transaction:
        for topic in txn.topic_results:
            for p in topic.results_by_partition:
                if topic.name == OFFSETS_TOPIC and p.partition_index == partition:
                    return p.partition_error_code
    return NONE


_warned: set[str] = set()


def _warn_once(what: str, msg: str, *args) -> None:
    if what not in _warned:
        _warned.add(what)
        log.warning(msg, *args)


class _NoVerifyVersion(Exception):
    pass


async def verify(enlister: "TxnEnlister", version: int, transactional_id: str, producer_id: int,
                 producer_epoch: int, group_id: str, offsets_partitions: int | None) -> int | None:
    """The error the broker's client would get for this TxnOffsetCommit (0: verified), or SKIP."""
    if not offsets_partitions:
        _warn_once("topic", "TxnOffsetCommit v0-4 not verified: the cluster has no %s topic", OFFSETS_TOPIC)
        return SKIP
    if not transactional_id:        # TransactionCoordinator.handleVerifyPartitionsInTransaction
        return client_error(version, INVALID_REQUEST)
    partition = offsets_partition(group_id, offsets_partitions)
    body = AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnTransaction(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch, verify_only=True,
        topics=[AddPartitionsToTxnTopic(name=OFFSETS_TOPIC, partitions=[partition])])])

    def build(conn):
        v = conn.version_for(ADD_PARTITIONS_TO_TXN, 5)
        if v < VERIFY_MIN_API_VERSION:
            raise _NoVerifyVersion(f"the upstream has AddPartitionsToTxn up to v{v}")
        return v, body

    code = COORDINATOR_NOT_AVAILABLE
    for attempt in range(ATTEMPTS):
        try:
            node = await enlister._coordinator_of(transactional_id)
            if node is None:                 # AddPartitionsToTxnManager: no transaction coordinator
                return client_error(version, COORDINATOR_NOT_AVAILABLE)
            resp = await enlister.call(node, ADD_PARTITIONS_TO_TXN, build)
        except _NoVerifyVersion as e:        # AddPartitionsToTxnManager skips on a version mismatch
            _warn_once("version", "TxnOffsetCommit v0-4 not verified: %s", e)
            return SKIP
        except (OSError, ConnectionError, asyncio.TimeoutError) as e:
            log.info("AddPartitionsToTxn (verify) for %s: %s", transactional_id, e)
            code = NETWORK_EXCEPTION
            enlister._coordinator.pop(transactional_id, None)
        else:
            code = partition_error(resp, partition)
            if code is SKIP:
                _warn_once("authz", "TxnOffsetCommit v0-4 not verified: kshim's upstream principal lacks "
                           "CLUSTER_ACTION, which AddPartitionsToTxn v4 (verifyOnly) needs")
                return SKIP
            if code not in (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS):
                return client_error(version, code)
            enlister._coordinator.pop(transactional_id, None)     # a stale coordinator: ask again
        await asyncio.sleep(0.02 * (attempt + 1))
    return client_error(version, code)
