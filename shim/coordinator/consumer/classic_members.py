"""Members of the classic protocol inside a consumer group (KIP-848 online migration; Kafka 4.3's
classicGroup{Join,Sync,Heartbeat,Leave}ToConsumerGroup, in our words).

JoinGroup: refused with INCONSISTENT_GROUP_PROTOCOL when the migration policy is `disabled`; then the
group size, protocol type "consumer" and one protocol every classic member offers; a dynamic v4+
member without id gets MEMBER_ID_REQUIRED with a new id (nothing is recorded for it). The member's
subscription, owned partitions and rack come from its first protocol's consumer-protocol metadata;
the join runs ConsumerGroupHeartbeat's steps (member record, epoch bump, target, reconciliation) and is
answered at once: generation = member epoch, protocol type "consumer", protocol name = its first
protocol, leader "" (every classic member is a follower), no members. Then its session timer (its
JoinGroup session timeout) and a sync timer (its rebalance timeout) run. A static member whose
instance id a consumer-protocol member holds, when every other member is classic, downgrades the
group instead (downgrade.py).

SyncGroup / Heartbeat: identity (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID; a consumer-protocol member is
UNKNOWN_MEMBER_ID), generation = member epoch (ILLEGAL_GENERATION); SyncGroup then checks the protocol
(INCONSISTENT_GROUP_PROTOCOL) and answers REBALANCE_IN_PROGRESS (arming a join timer) while the target
is ahead of the member and it has nothing left to revoke, else its assigned partitions serialized at
its subscription's version. Heartbeat re-arms the session and answers REBALANCE_IN_PROGRESS (arming a
join timer) when the member has to rejoin. A missed join or sync deadline fences the member.
LeaveGroup: per identity as classicGroupLeaveToClassicGroup (any member, either protocol); the valid ones are fenced together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcodec.generated.heartbeat import HeartbeatResponse
from kcodec.generated.leave_group import LeaveGroupResponse, MemberResponse

from .. import errors as E
from ..releases import at_least
from ..responses import join_error, join_response, sync_response
from . import embedded
from .downgrade import downgrade, downgrade_allowed_replacing
from .consumer_group import UNRELEASED, UNREVOKED, ClassicMeta, ConsumerGroup, ConsumerMember
from .fencing import arm_classic_timer, arm_session, fence_members, replace_static
from .timer_keys import join_key, rebalance_key, sync_key
from .target import member_updated, reconcile_member, refresh_group_metadata
from .heartbeat import kafka_uuid

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState
    from ..result import Ctx

JOIN_TIMEOUT = "the classic member failed to join within the rebalance timeout"
SYNC_TIMEOUT = "the member failed to sync within timeout"


# ---------------------------------------------------------------------------------- JoinGroup
def join(c: "CoordinatorState", ctx: "Ctx", req, g: ConsumerGroup) -> None:
    v = ctx.version
    instance_id = req.group_instance_id if v >= 5 else None
    given = req.member_id or ""

    def fail(err: int, member_id: str = "") -> None:
        # GroupCoordinatorService.joinGroup: an error raised inside classicGroupJoinToConsumerGroup answers a
        # bare JoinGroupResponseData (member id ""); only its own checks before it echo the request's id
        c.respond(ctx.token, join_error(v, err, member_id))

    if not c.cfg.session_timeout_valid(req.session_timeout_ms):
        return fail(E.INVALID_SESSION_TIMEOUT, given)
    if c.cfg.consumer_migration_policy == "disabled":
        return fail(E.INCONSISTENT_GROUP_PROTOCOL)
    member_id = given or kafka_uuid(c)
    if (instance_id is None or instance_id not in g.static_members) and \
            len(g.members) >= c.cfg.consumer_max_size and member_id not in g.members:
        return fail(E.GROUP_MAX_SIZE_REACHED)
    protocols = tuple((p.name, bytes(p.metadata)) for p in req.protocols)
    if not g.supports_classic_protocols(req.protocol_type, [n for n, _ in protocols]):
        return fail(E.INCONSISTENT_GROUP_PROTOCOL)
    if v >= 4 and not given and instance_id is None:
        c.event("member_id_required", g.group_id, member=member_id, client_id=ctx.client_id)
        return fail(E.MEMBER_ID_REQUIRED, member_id)
    # the member: dynamic (created when unknown), static (new, or replacing the holder of its instance id
    # when it joins without a member id; with an id it must be the holder)
    replaced = None
    if instance_id is None:
        m = g.members.get(member_id)
        new = m is None
    else:
        held = g.static_members.get(instance_id)
        if given:
            if held is None:
                return fail(E.UNKNOWN_MEMBER_ID)
            if held != given:
                return fail(E.FENCED_INSTANCE_ID)
            m, new = g.members[held], False
        elif held is None:
            m, new = g.members.get(member_id), member_id not in g.members
        else:
            m, new, replaced = None, True, g.members[held]
    try:
        sub = embedded.subscription(protocols[0][1])
    except embedded.Malformed:
        # GroupMetadataManager.deserializeSubscription: Kafka 4.4 answers INCONSISTENT_GROUP_PROTOCOL
        # (KAFKA-20662, KAFKA-20570); up to 4.3 it threw an IllegalStateException (and the generated reader's
        # own RuntimeExceptions passed through): GroupCoordinatorService answered UNKNOWN_SERVER_ERROR
        return fail(E.INCONSISTENT_GROUP_PROTOCOL if at_least(c.cfg.release, "4.4") else E.UNKNOWN_SERVER_ERROR)
    reported = embedded.by_id(c, getattr(sub, "owned_partitions", None))
    # GroupMetadataManager.classicGroupJoinToConsumerGroup: whoever holds the instance id (replaced, or the
    # joining member itself) may be the last non-classic member: then the group goes back to classic
    holder = g.members.get(g.static_members[instance_id]) if instance_id in g.static_members else None
    if holder is not None and downgrade_allowed_replacing(c, g, holder):
        return _join_downgrading(c, ctx, req, g, holder, member_id, protocols, sub)

    # -- accepted: state changes and records
    if replaced is not None:
        m = replace_static(c, g, replaced, member_id)
    elif m is None:
        m = ConsumerMember(member_id, instance_id=instance_id, previous_member_epoch=-1)
    if new:
        g.add(m)
    refresh_group_metadata(c, g)
    changed, sub_changed = _update(g, m, ctx, req, protocols, sub)
    member_updated(c, g, m, changed=changed, new=new, replaced=replaced is not None, sub_changed=sub_changed,
                   who="classic member")
    reconcile_member(c, g, m, reported, sub_changed, keep=new, fenced_ok=True)
    c.timers.cancel(rebalance_key(g.group_id, member_id))
    c.timers.cancel(join_key(g.group_id, member_id))
    arm_session(c, g, m)
    # GroupMetadataManager.scheduleConsumerGroupSyncTimeout runs on the request's rebalance timeout, not the
    # member's: a rejoin with -1 ("unchanged") expires at once and the member is fenced before its SyncGroup
    requested = req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms
    arm_classic_timer(c, g, m, sync_key, requested, SYNC_TIMEOUT)
    c.event("classic_member_joined", g.group_id, member=member_id, instance=instance_id, epoch=m.member_epoch,
            new=new)
    c.respond(ctx.token, join_response(v, E.NONE, generation_id=m.member_epoch, protocol_type="consumer",
                                       protocol_name=protocols[0][0], leader="", member_id=member_id))


def _update(g: ConsumerGroup, m: ConsumerMember, ctx: "Ctx", req, protocols: tuple, sub) -> tuple[bool, bool]:
    v = ctx.version
    changed = False
    rack = getattr(sub, "rack_id", None)
    for attr, value in (("instance_id", req.group_instance_id if v >= 5 else None), ("rack_id", rack)):
        if value is not None and getattr(m, attr) != value:
            setattr(m, attr, value)
            changed = True
    rebalance = req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms
    if rebalance != -1 and m.rebalance_timeout_ms != rebalance:
        m.rebalance_timeout_ms, changed = rebalance, True
    if (m.client_id, m.client_host) != (ctx.client_id, ctx.client_host):
        m.client_id, m.client_host, changed = ctx.client_id, ctx.client_host, True
    meta = ClassicMeta(req.session_timeout_ms, protocols)
    if m.classic != meta:
        m.classic, changed = meta, True
    names = tuple(sub.topics or ())
    sub_changed = set(names) != set(m.subscribed_topic_names) or m.subscribed_topic_regex is not None
    if sub_changed or names != m.subscribed_topic_names:
        g.set_subscription(m, names, None, m.server_assignor)   # classic members have no regex
        changed = True
    return changed, sub_changed


def _join_downgrading(c, ctx, req, g: ConsumerGroup, replaced: ConsumerMember, member_id: str, protocols, sub):
    """A classic static member takes the instance id of the last consumer-protocol member (or of any member
    when all others are classic): the group goes back to classic with the joining member in the replaced
    one's place (its assignment), rebalancing if the target is stale."""
    v = ctx.version
    m = ConsumerMember(member_id, instance_id=replaced.instance_id, rack_id=replaced.rack_id,
                       rebalance_timeout_ms=replaced.rebalance_timeout_ms, server_assignor=replaced.server_assignor,
                       subscribed_topic_names=replaced.subscribed_topic_names, member_epoch=0,
                       previous_member_epoch=0, state=replaced.state, target=dict(replaced.target))
    _update(ConsumerGroup(g.group_id), m, ctx, req, protocols, sub)
    sub_changed = set(m.subscribed_topic_names) != set(replaced.subscribed_topic_names)
    stale = sub_changed or g.assignment_epoch < g.group_epoch
    downgrade(c, g, set(), f"static member {member_id} with instance id {m.instance_id} replaced the last "
              f"consumer-protocol member", joining=m, rebalance=stale)
    # the response carries the member's epoch: 0 for a new member id (the replacement), the holder's own when
    # it rejoins with its id; reconciled to the assignment epoch when the target is current
    gen = g.group_epoch if not stale else replaced.member_epoch if member_id == replaced.member_id else 0
    c.respond(ctx.token, join_response(v, E.NONE, generation_id=gen,
                                       protocol_type="consumer", protocol_name=protocols[0][0], leader="",
                                       member_id=member_id))


# ---------------------------------------------------------------------------------- Sync / Heartbeat
def _member(g: ConsumerGroup, member_id: str, instance_id: str | None, generation: int) -> ConsumerMember | int:
    if instance_id is None:
        m = g.members.get(member_id)
        if m is None:
            return E.UNKNOWN_MEMBER_ID
    else:
        mid = g.static_members.get(instance_id)
        if mid is None:
            return E.UNKNOWN_MEMBER_ID
        if mid != member_id:
            return E.FENCED_INSTANCE_ID
        m = g.members[mid]
    if m.classic is None:
        return E.UNKNOWN_MEMBER_ID          # a member of the consumer protocol
    if generation != m.member_epoch:
        return E.ILLEGAL_GENERATION
    return m


def sync(c: "CoordinatorState", ctx: "Ctx", req, g: ConsumerGroup) -> None:
    v = ctx.version
    m = _member(g, req.member_id, req.group_instance_id if v >= 3 else None, req.generation_id)
    if isinstance(m, int):
        return c.respond(ctx.token, sync_response(v, m))
    ptype, pname = (req.protocol_type, req.protocol_name) if v >= 5 else (None, None)
    if (ptype is not None and ptype != "consumer") or (pname is not None and pname != m.classic.protocol_name):
        return c.respond(ctx.token, sync_response(v, E.INCONSISTENT_GROUP_PROTOCOL))
    if g.assignment_epoch > m.member_epoch and m.state != UNREVOKED:
        arm_classic_timer(c, g, m, join_key, m.rebalance_timeout_ms, JOIN_TIMEOUT, if_absent=True)
        return c.respond(ctx.token, sync_response(v, E.REBALANCE_IN_PROGRESS))
    c.timers.cancel(sync_key(g.group_id, m.member_id))
    arm_session(c, g, m)
    data = embedded.serialize_assignment(embedded.named(c, m.assigned),
                                         embedded.version_of(m.classic.protocols[0][1]))
    c.respond(ctx.token, sync_response(v, E.NONE, ptype, pname, data))


def heartbeat(c: "CoordinatorState", ctx: "Ctx", req, g: ConsumerGroup) -> None:
    v = ctx.version
    m = _member(g, req.member_id, req.group_instance_id if v >= 3 else None, req.generation_id)
    if isinstance(m, int):
        return c.respond(ctx.token, HeartbeatResponse(error_code=m))
    arm_session(c, g, m)
    err = E.NONE
    if m.member_epoch < g.assignment_epoch or m.state == UNREVOKED or \
            (m.state == UNRELEASED and not _waiting_on_unreleased(g, m)):
        err = E.REBALANCE_IN_PROGRESS
        arm_classic_timer(c, g, m, join_key, m.rebalance_timeout_ms, JOIN_TIMEOUT, if_absent=True)
    c.respond(ctx.token, HeartbeatResponse(error_code=err))


def _waiting_on_unreleased(g: ConsumerGroup, m: ConsumerMember) -> bool:
    for t, ps in m.target.items():
        have = m.assigned.get(t, {})
        for p in ps:
            if p not in have and g.owner(t, p) is not None:
                return True
    return False


# ---------------------------------------------------------------------------------- LeaveGroup
def leave(c: "CoordinatorState", ctx: "Ctx", req, g: ConsumerGroup) -> None:
    v = ctx.version
    ids = [(req.member_id, None)] if v <= 2 else [(x.member_id, x.group_instance_id) for x in req.members]
    results, leaving = [], {}
    for member_id, instance_id in ids:
        member_id = member_id or ""
        if instance_id is None:
            m = g.members.get(member_id)
            err = E.NONE if m is not None else E.UNKNOWN_MEMBER_ID
        else:
            mid = g.static_members.get(instance_id)
            m = g.members.get(mid) if mid is not None else None
            if m is None:
                err = E.UNKNOWN_MEMBER_ID
            elif member_id and member_id != mid:
                m, err = None, E.FENCED_INSTANCE_ID
            else:
                err = E.NONE
        results.append((member_id, instance_id, err))
        if m is not None:
            leaving[m.member_id] = m
    fence_members(c, g, list(leaving.values()), "removed by LeaveGroup")
    if v <= 2:
        return c.respond(ctx.token, LeaveGroupResponse(error_code=results[0][2], members=[]))
    c.respond(ctx.token, LeaveGroupResponse(error_code=E.NONE, members=[
        MemberResponse(member_id=mid, group_instance_id=iid, error_code=e) for mid, iid, e in results]))
