"""Member-epoch rules of OffsetCommit, TxnOffsetCommit and OffsetFetch on consumer groups (spec §C.2
"KIP-848 group", §C.3, §C.4). offsets.py and txn_offsets.py call these where they would look up a
classic group; OffsetFetch v9+ group errors are applied by `wrap_fetch` after offsets.py answered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import errors as E

if TYPE_CHECKING:
    from ..core import Ctx, GroupCoordinator


def commit_error(c: "GroupCoordinator", ctx: "Ctx", req, txn: bool = False, partitions=()) -> int:
    """ConsumerGroup.validateOffsetCommit, then its per-partition validator for `partitions`:
    [(TopicInfo, partition)] of the commit that passed KafkaApis' topic checks and the metadata size
    check (OffsetMetadataManager validates nothing else), topics resolved to ids either way (v10
    names them by id; older versions by name, resolved by KafkaApis)."""
    g = c.consumer_groups[req.group_id]
    if txn:
        epoch = req.generation_id if ctx.version >= 3 else -1
        member_id = (req.member_id or "") if ctx.version >= 3 else ""
        instance_id = req.group_instance_id if ctx.version >= 3 else None
        if epoch == -1 and not member_id and instance_id is None:
            return E.NONE
    else:
        epoch, member_id = req.generation_id_or_member_epoch, req.member_id or ""
    if epoch < 0 and not g.members:
        return E.NONE
    m = g.members.get(member_id)
    if m is None:
        return E.UNKNOWN_MEMBER_ID
    if not txn and ctx.version < 9 and m.classic is None:
        return E.UNSUPPORTED_VERSION
    if epoch == m.member_epoch:
        return E.NONE
    # members of the classic protocol (§D.9) get the classic group's error
    stale = E.ILLEGAL_GENERATION if txn or m.classic is not None else E.STALE_MEMBER_EPOCH
    if epoch > m.member_epoch:
        return stale
    # KIP-1251 (ConsumerGroup.createAssignmentEpochValidator): an older epoch is fine for partitions
    # the member holds, assigned or pending revocation, since that epoch or earlier
    for info, partition in partitions:
        assigned_at = m.assigned.get(info.topic_id, {}).get(partition)
        if assigned_at is None:
            assigned_at = m.pending_revocation.get(info.topic_id, {}).get(partition)
        if assigned_at is None or epoch < assigned_at:
            return stale
    return E.NONE


def fetch_error(c: "GroupCoordinator", group_id: str, member_id: str | None, epoch: int) -> int:
    g = c.consumer_groups.get(group_id)
    if g is None or (member_id is None and epoch < 0):
        return E.NONE
    m = g.members.get(member_id or "")
    if m is None:
        return E.UNKNOWN_MEMBER_ID
    if epoch != m.member_epoch:
        return E.STALE_MEMBER_EPOCH if m.classic is None else E.ILLEGAL_GENERATION
    return E.NONE


def wrap_fetch(c: "GroupCoordinator") -> None:
    classic = c.handlers[9]

    def offset_fetch(c: "GroupCoordinator", ctx: "Ctx", req) -> None:
        classic(c, ctx, req)
        if ctx.version < 9 or not c.consumer_groups:
            return
        body = c.out[-1].body
        for rg, out in zip(req.groups, body.groups):
            err = fetch_error(c, rg.group_id, rg.member_id, rg.member_epoch)
            if err:
                out.error_code, out.topics = err, []
    c.handlers[9] = offset_fetch
