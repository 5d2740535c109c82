"""The reconciliation state machine of one member (Kafka's CurrentAssignmentBuilder).

Pure: from the member's current state, the target epoch and the member's target assignment (already
restricted to topics it subscribes to), the partitions it reports owning (None = not reported) and
the group's partition owners, compute its next epoch, state, assigned partitions and partitions
pending revocation (each with the epoch it was assigned at, which a partition keeps while it is being
revoked: CurrentAssignmentBuilder.computeNextAssignment, KIP-1251). Revoke before assign: a partition is only given
to a member once no other member holds it (assigned or pending revocation).
"""

from __future__ import annotations

from .consumer_group import STABLE, UNKNOWN, UNRELEASED, UNREVOKED, ConsumerMember


class FencedEpoch(Exception):
    """UNKNOWN state and the member reports partitions: FENCED_MEMBER_EPOCH."""


def _reports_any(reported: dict | None, parts: dict) -> bool:
    if reported is None:
        return True
    for t, ps in parts.items():
        rep = reported.get(t)
        if rep and not rep.isdisjoint(ps):
            return True
    return False


def next_state(m: ConsumerMember, target_epoch: int, target: dict, reported: dict | None,
               owners: dict, subscribed_ids: set, subscription_changed: bool, before_4_2: bool = False):
    """(epoch, previous epoch, state, assigned, pending) or None when nothing changes. `before_4_2`:
    Kafka 4.0 and 4.1's builder, which does not look at the subscription (no drop of unsubscribed
    topics) and moves a member that revoked everything on from its epoch + 1."""
    if before_4_2:
        subscription_changed = False
    st = m.state
    if st == STABLE:
        if m.member_epoch != target_epoch:
            return compute_next(m, target_epoch, target, reported, owners)
        if subscription_changed:
            return _drop_unsubscribed(m, subscribed_ids, reported)
        return None
    if st == UNREVOKED:
        if _reports_any(reported, m.pending_revocation):
            if subscription_changed:
                return _drop_unsubscribed(m, subscribed_ids, reported)
            return None
        return compute_next(m, target_epoch, target, reported, owners, m.member_epoch + before_4_2)
    if st == UNRELEASED:
        return compute_next(m, target_epoch, target, reported, owners)
    if st == UNKNOWN:
        if reported is None or any(reported.values()):
            raise FencedEpoch()
        return compute_next(m, target_epoch, target, reported, owners)
    return None


def _drop_unsubscribed(m: ConsumerMember, subscribed_ids: set, reported: dict | None):
    keep = {t: ps for t, ps in m.assigned.items() if t in subscribed_ids}
    drop = {t: ps for t, ps in m.assigned.items() if t not in subscribed_ids and ps}
    if not drop:
        return None
    pending = dict(m.pending_revocation)
    for t, ps in drop.items():        # each keeps its assignment epoch (updateCurrentAssignment)
        pending[t] = {**pending.get(t, {}), **ps}
    # updateMemberEpoch(memberEpoch) in both branches: the previous epoch becomes the current one
    if _reports_any(reported, pending):
        return m.member_epoch, m.member_epoch, UNREVOKED, keep, pending
    return m.member_epoch, m.member_epoch, STABLE, keep, {}


def compute_next(m: ConsumerMember, target_epoch: int, target: dict, reported: dict | None, owners: dict,
                 epoch: int | None = None):
    """`epoch`: the member's epoch while it revokes (CurrentAssignmentBuilder.computeNextAssignment's
    memberEpoch: its own, but after a revocation in Kafka 4.0-4.1 its own + 1)."""
    mid = m.member_id
    if epoch is None:
        epoch = m.member_epoch
    keep: dict = {}
    revoke: dict = {}
    for t, ps in m.assigned.items():
        tgt = target.get(t)
        if tgt is None:
            if ps:
                revoke[t] = dict(ps)
            continue
        k = {p: e for p, e in ps.items() if p in tgt}
        if k:
            keep[t] = k
        if len(k) != len(ps):
            revoke[t] = {p: e for p, e in ps.items() if p not in tgt}   # with their assignment epochs
    add: dict = {}
    held_back = False
    for t, ps in target.items():
        have = keep.get(t)
        towners = owners.get(t)
        if towners:
            new = []
            for p in ps:
                if have is not None and p in have:
                    continue
                owner = towners.get(p)
                if owner is not None and owner != mid:
                    held_back = True
                else:
                    new.append(p)
        else:
            new = list(ps) if have is None else [p for p in ps if p not in have]
        if new:
            add[t] = new
    # Every outcome goes through ConsumerGroupMember.Builder.updateMemberEpoch, which makes the
    # current epoch the previous one, even when the epoch stays the same
    if revoke and _reports_any(reported, revoke):
        return epoch, m.member_epoch, UNREVOKED, keep, revoke
    prev = m.member_epoch
    for t, ps in add.items():
        k = keep.get(t)
        if k is None:
            keep[t] = dict.fromkeys(ps, target_epoch)
        else:
            k.update(dict.fromkeys(ps, target_epoch))
    return target_epoch, prev, UNRELEASED if held_back else STABLE, keep, {}
