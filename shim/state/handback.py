"""Hand-back: kshim's committed offsets written to the broker's group coordinator, so an application
pointed back at the broker resumes where it stopped through kshim (`kshim groups export`, and
`export_on_stop` at a clean stop of `kshim run`).

Only groups with no members are handed back (an Empty classic or consumer group, or a group that only
has committed offsets): a live group's position still moves. Each group's offsets go in one
OffsetCommit to the group's coordinator (FindCoordinator, key type GROUP) as a commit without
generation or member (generation -1, member ""), which the broker accepts for a group it does not
hold or holds empty (OffsetMetadataManager.commitOffset -> ClassicGroup/ConsumerGroup
.validateOffsetCommit); a group with live members on the broker answers with its error, reported.
Offsets for topics the broker no longer has come back UNKNOWN_TOPIC_OR_PARTITION and are counted
as refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from kcodec.generated.find_coordinator import FindCoordinatorRequest
from kcodec.generated.offset_commit import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                            OffsetCommitRequestTopic)
from kcodec.generated.txn_offset_commit import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                TxnOffsetCommitRequestTopic)
from kcodec.protocol import ApiKey, Error, error_name

from ..config import Config
from ..coordinator import CoordinatorConfig, GroupCoordinator
from ..coordinator.classic_group import EMPTY
from ..kafkaclient.client import UpstreamClient
from .log import StateLog

FIND_COORDINATOR, OFFSET_COMMIT = ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_COMMIT
OFFSET_COMMIT_VERSION = 9      # the newest that names topics (v10 names them by id)


@dataclass
class Summary:
    groups: int = 0
    offsets: int = 0
    refused: dict[str, str] = field(default_factory=dict)   # group -> why (not exported, or partly)
    skipped_live: list[str] = field(default_factory=list)


def empty_groups(c: GroupCoordinator, match: Callable[[str], bool]) -> dict[str, list]:
    """group id -> its committed offsets (OffsetRecord), for the matching groups that have no members."""
    out = {}
    for gid, offsets in c.offsets.by_group.items():
        if not offsets or not match(gid):
            continue
        if _has_members(c, gid):
            continue
        out[gid] = sorted(offsets.values(), key=lambda r: (r.topic, r.partition))
    return out


def _has_members(c: GroupCoordinator, gid: str) -> bool:
    g, cg = c.groups.get(gid), c.consumer_groups.get(gid)
    return (g is not None and g.state != EMPTY) or (cg is not None and bool(cg.members))


def live_groups(c: GroupCoordinator, match: Callable[[str], bool]) -> list[str]:
    """The matching groups with committed offsets that have members (export leaves them out)."""
    return sorted(gid for gid in c.offsets.by_group if match(gid) and _has_members(c, gid))


def matcher(patterns: list[str] | None) -> Callable[[str], bool]:
    """Group ids matching any of the regexes (full match), or every id."""
    if not patterns:
        return lambda _g: True
    compiled = [re.compile(p) for p in patterns]
    return lambda g: any(r.fullmatch(g) for r in compiled)


async def load_coordinator(cfg: Config) -> GroupCoordinator:
    """kshim's group state as its state topic holds it (read from the start, replayed)."""
    state = StateLog(cfg, cfg.upstream_addresses)
    try:
        topic, _ = await state.refresh()
        if topic is None or topic.error_code:
            raise ConnectionError(f"state topic {cfg.state_topic} not found on {cfg.upstream}")
        records = await state.load()
    finally:
        await state.close()
    c = GroupCoordinator(CoordinatorConfig())
    for rec in records:
        c.replay(rec)
    return c


async def export(cfg: Config, groups: dict[str, list], progress: Callable[[str], None] = print) -> Summary:
    """Commit each group's offsets at its broker coordinator."""
    summary = Summary()
    bootstrap = await UpstreamClient.connect(cfg, *cfg.upstream_addresses()[0])
    try:
        for i, (gid, offsets) in enumerate(sorted(groups.items()), 1):
            try:
                written, why = await _export_group(cfg, bootstrap, gid, offsets)
            except (OSError, ConnectionError, TimeoutError) as e:
                written, why = 0, str(e)
            summary.offsets += written
            if written:
                summary.groups += 1
            if why:
                summary.refused[gid] = why
            progress(f"[{i}/{len(groups)}] {gid}: {written} of {len(offsets)} offsets written"
                     + (f" ({why})" if why else ""))
    finally:
        bootstrap.close()
    return summary


async def _export_group(cfg: Config, bootstrap: UpstreamClient, gid: str, offsets: list) -> tuple[int, str]:
    v = bootstrap.version_for(FIND_COORDINATOR, 4)
    found = await bootstrap.request(FIND_COORDINATOR, v, FindCoordinatorRequest(key_type=0, coordinator_keys=[gid])
                                    if v >= 4 else FindCoordinatorRequest(key_type=0, key=gid))
    where = found.coordinators[0] if v >= 4 else found
    if where.error_code:
        return 0, f"FindCoordinator: {error_name(where.error_code)}"
    coordinator = await UpstreamClient.connect(cfg, where.host, where.port)
    try:
        cv = coordinator.version_for(OFFSET_COMMIT, OFFSET_COMMIT_VERSION)
        resp = await coordinator.request(OFFSET_COMMIT, cv, commit_request(gid, offsets))
    finally:
        coordinator.close()
    return outcome(resp)


def commit_request(gid: str, offsets: list) -> OffsetCommitRequest:
    """One OffsetCommit (v9 fields) of `offsets` (OffsetRecord) without generation or member."""
    by_topic: dict[str, list] = {}
    for r in offsets:
        by_topic.setdefault(r.topic, []).append(OffsetCommitRequestPartition(
            partition_index=r.partition, committed_offset=r.offset, committed_leader_epoch=r.leader_epoch,
            committed_metadata=r.metadata))
    return OffsetCommitRequest(group_id=gid, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                               retention_time_ms=-1,
                               topics=[OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()])


def txn_commit_requests(gid: str, pending: list) -> list[TxnOffsetCommitRequest]:
    """One TxnOffsetCommit (v3 fields: no generation or member) per producer of `pending`
    (TxnOffsetRecord, each with its transactional id): the producer's own commit, sent again."""
    out: dict[int, TxnOffsetCommitRequest] = {}
    for r in pending:
        req = out.get(r.producer_id)
        if req is None:
            req = out[r.producer_id] = TxnOffsetCommitRequest(
                transactional_id=r.transactional_id, group_id=gid, producer_id=r.producer_id,
                producer_epoch=r.producer_epoch, generation_id_or_member_epoch=-1, member_id="",
                group_instance_id=None, topics=[])
        topic = next((t for t in req.topics if t.name == r.topic), None)
        if topic is None:
            topic = TxnOffsetCommitRequestTopic(name=r.topic, partitions=[])
            req.topics.append(topic)
        topic.partitions.append(TxnOffsetCommitRequestPartition(
            partition_index=r.partition, committed_offset=r.offset, committed_leader_epoch=r.leader_epoch,
            committed_metadata=r.metadata))
    return list(out.values())


def outcome(resp) -> tuple[int, str]:
    """(offsets written, the errors of the others as "NAME xN, ...") of an (Txn)OffsetCommit answer."""
    errors: dict[str, int] = {}
    written = 0
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code == Error.NONE:
                written += 1
            else:
                name = error_name(p.error_code)
                errors[name] = errors.get(name, 0) + 1
    return written, ", ".join(f"{n} x{k}" for n, k in sorted(errors.items()))
