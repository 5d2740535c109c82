"""Member-epoch rules of OffsetCommit, TxnOffsetCommit and OffsetFetch on consumer groups (ConsumerGroup
.validateOffsetCommit / validateOffsetFetch). offsets.py and txn_offsets.py call these where they would look up a
classic group (dispatch.py chooses by the group's type); OffsetFetch v9+ group errors are applied by
`apply_fetch_errors` to the answer offsets.py built."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import errors as E
from ..metadata_size import metadata_too_large
from ..releases import at_least

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState
    from ..result import Ctx


def validate_commit(c: "CoordinatorState", ctx: "Ctx", req, checked) -> int:
    """OffsetCommit to a consumer group: member epochs. `checked` is offsets.offset_commit's
    [(topic, TopicInfo | None, [(partition, error | None)])]; partitions whose metadata is too large
    are not validated."""
    max_md = c.cfg.offset_metadata_max_bytes
    return commit_error(c, ctx, req, partitions=[
        (info, p.partition_index) for _, info, parts in checked for p, e in parts
        if e is None and not metadata_too_large(p.committed_metadata, max_md)])


def validate_txn_commit(c: "CoordinatorState", ctx: "Ctx", req, valid) -> int:
    """TxnOffsetCommit to a consumer group: member epochs. `valid` is txn_offsets' [(topic name,
    partition)] that passed KafkaApis' checks; partitions whose metadata is too large are not validated."""
    max_md = c.cfg.offset_metadata_max_bytes
    return commit_error(c, ctx, req, txn=True, partitions=[
        (c.topics.get(name), p.partition_index) for name, p in valid
        if not metadata_too_large(p.committed_metadata, max_md)])


def commit_error(c: "CoordinatorState", ctx: "Ctx", req, txn: bool = False, partitions=()) -> int:
    """ConsumerGroup.validateOffsetCommit, then its per-partition validator for `partitions`:
    [(TopicInfo, partition)] of the commit that passed KafkaApis' topic checks and the metadata size
    check (OffsetMetadataManager validates nothing else), topics resolved to ids either way (v10
    names them by id; older versions by name, resolved by KafkaApis)."""
    g = c.consumer_groups[req.group_id]
    if txn:
        epoch = req.generation_id_or_member_epoch if ctx.version >= 3 else -1
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
    # members of the classic protocol (online migration) get the classic group's error; a transactional
    # commit gets ILLEGAL_GENERATION before v6 (TxnOffsetCommitRequest.supportsStaleMemberEpochError)
    stale = E.ILLEGAL_GENERATION if (txn and ctx.version < 6) or m.classic is not None else E.STALE_MEMBER_EPOCH
    if epoch > m.member_epoch or not at_least(c.cfg.release, "4.3"):
        return stale                  # before 4.3: the epoch must be the member's (validateMemberEpoch)
    # KIP-1251 (ConsumerGroup.createAssignmentEpochValidator): an older epoch is fine for partitions
    # the member holds, assigned or pending revocation, since that epoch or earlier
    for info, partition in partitions:
        assigned_at = m.assigned.get(info.topic_id, {}).get(partition)
        if assigned_at is None:
            assigned_at = m.pending_revocation.get(info.topic_id, {}).get(partition)
        if assigned_at is None or epoch < assigned_at:
            return stale
    return E.NONE


def fetch_error(c: "CoordinatorState", group_id: str, member_id: str | None, epoch: int) -> int:
    g = c.consumer_groups.get(group_id)
    if g is None or (member_id is None and epoch < 0):
        return E.NONE
    m = g.members.get(member_id or "")
    if m is None:
        return E.UNKNOWN_MEMBER_ID
    if epoch != m.member_epoch:
        return E.STALE_MEMBER_EPOCH if m.classic is None else E.ILLEGAL_GENERATION
    return E.NONE


def apply_fetch_errors(c: "CoordinatorState", req, body) -> None:
    """OffsetFetch v9+: a consumer group's member whose epoch fails the check gets the error instead
    of its group's offsets (ConsumerGroup.validateOffsetFetch); `body` is the answer from the store."""
    for rg, out in zip(req.groups, body.groups):
        err = fetch_error(c, rg.group_id, rg.member_id, rg.member_epoch)
        if err:
            out.error_code, out.topics = err, []
