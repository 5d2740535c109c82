"""ConsumerGroupHeartbeat v0-1 (api 68): validation (GroupCoordinatorService
.throwIfConsumerGroupHeartbeatRequestIsInvalid), leave (GroupMetadataManager.consumerGroupLeave),
join/heartbeat (consumerGroupHeartbeat), reconciliation (reconcile.py: CurrentAssignmentBuilder), timers
and fencing (fencing.py).

A heartbeat with epoch 0 on a non-empty classic group upgrades it when the migration policy allows
(convertToConsumerGroup, upgrade.py), else answers GROUP_ID_NOT_FOUND. Regular expressions: regex_resolution.py (resolved
after the heartbeat, not within 10 s of the group's last resolution; the result bumps the epoch).
"""

from __future__ import annotations

import base64
import uuid
from typing import TYPE_CHECKING

from kcodec.generated.consumer_group_heartbeat import (Assignment, ConsumerGroupHeartbeatResponse,
                                                       ConsumerGroupHeartbeatResponseTopicPartitions)

from .. import errors as E
from ..releases import at_least
from ..classic_group import DEAD, EMPTY
from . import codes as K
from .assignor_choice import preferred_changed
from .consumer_group import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, UNREVOKED, ConsumerGroup, ConsumerMember, regex_unresolved
from .fencing import arm_rebalance, arm_session, fence, retire_static, static_successor
from .timer_keys import rebalance_key
from .persist import write_current, write_group
from .reconcile import FencedEpoch
from .regex_resolution import InvalidRegex, maybe_refresh
from .regex_resolution import validate as validate_regex
from .target import member_updated, reconcile_member, refresh_group_metadata
from .upgrade import UpgradeRefused, install_upgrade, plan_upgrade

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState
    from ..result import Ctx


class HeartbeatError(Exception):
    def __init__(self, code: int, message: str | None = None):
        super().__init__(message)
        self.code, self.message = code, message


def error_response(code: int, message: str | None) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=code, error_message=message, member_id=None,
                                          member_epoch=0, heartbeat_interval_ms=0, assignment=None)


def consumer_group_heartbeat(c: "CoordinatorState", ctx: "Ctx", req) -> None:
    try:
        validate(c, ctx.version, req)
        if req.member_epoch < 0:
            body = _leave(c, req)
        else:
            body = _heartbeat(c, ctx, req)
    except HeartbeatError as e:
        body = error_response(e.code, e.message)
    c.respond(ctx.token, body)


# ---------------------------------------------------------------------------------- validation (throwIfConsumerGroupHeartbeatRequestIsInvalid)
def _blank(s: str | None) -> bool:
    """Utils.throwIfEmptyString: Java's String.trim() drops every char <= U+0020 at both ends."""
    return s is not None and all(ch <= " " for ch in s)


def validate(c: "CoordinatorState", version: int, req) -> None:
    def invalid(msg: str):
        raise HeartbeatError(K.INVALID_REQUEST, msg)

    epoch = req.member_epoch
    # GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid: the member id first; a string
    # of blanks is empty
    if (version >= 1 or epoch > 0 or epoch == LEAVE_EPOCH) and _blank(req.member_id or ""):
        invalid("MemberId can't be empty.")
    if _blank(req.group_id):
        invalid("GroupId can't be empty.")
    if _blank(req.instance_id):
        invalid("InstanceId can't be empty.")
    if _blank(req.rack_id):
        invalid("RackId can't be empty.")
    if epoch == 0:
        if req.rebalance_timeout_ms == -1:
            invalid("RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or req.topic_partitions:
            invalid("TopicPartitions must be empty when (re-)joining.")
        regex = req.subscribed_topic_regex if version >= 1 else None
        if req.subscribed_topic_names is None and regex is None:
            invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            invalid("InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        invalid("MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in c.cfg.consumer_assignors:
        raise HeartbeatError(K.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                             f"{', '.join(c.cfg.consumer_assignors)}.")


# ---------------------------------------------------------------------------------- leaving (consumerGroupLeave)
def _leave(c: "CoordinatorState", req) -> ConsumerGroupHeartbeatResponse:
    g = c.consumer_groups.get(req.group_id)
    if g is None:                       # GroupMetadataManager.consumerGroup(groupId)
        raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group."
                             if _other_type(c, req.group_id) else f"Group {req.group_id} not found.")
    if req.instance_id is None:
        m = g.members.get(req.member_id)
        if m is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                 f"Member {req.member_id} is not a member of group {g.group_id}.")
    else:
        mid = g.static_members.get(req.instance_id)
        if mid is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if mid != req.member_id:
            raise HeartbeatError(E.FENCED_INSTANCE_ID, _fenced_message(req.member_id, req.instance_id, mid))
        m = g.members[mid]
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            assigned = {t: {p: 0 for p in ps} for t, ps in m.assigned.items()}
            g.set_current(m, STATIC_LEAVE_EPOCH, m.previous_member_epoch, m.state, assigned, {})
            write_current(c, g, m)
            c.timers.cancel(rebalance_key(g.group_id, m.member_id))
            c.event("member_left_temporarily", g.group_id, member=m.member_id, instance=m.instance_id)
            return ConsumerGroupHeartbeatResponse(member_id=m.member_id, member_epoch=STATIC_LEAVE_EPOCH)
    fence(c, g, m, "the member left the group")
    return ConsumerGroupHeartbeatResponse(member_id=m.member_id, member_epoch=LEAVE_EPOCH)


# ---------------------------------------------------------------------------------- joining and heartbeating (consumerGroupHeartbeat)
def kafka_uuid(c: "CoordinatorState") -> str:
    raw = c._uuid()
    try:
        b = uuid.UUID(raw).bytes
    except ValueError:
        return raw
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def _other_type(c: "CoordinatorState", gid: str) -> bool:
    g = c.groups.get(gid)
    return g is not None and g.state != DEAD


def _fenced_message(member_id: str, instance_id: str, holder: str) -> str:
    # GroupMetadataManager.throwIfInstanceIdIsFenced
    return f"Static member {member_id} with instance id {instance_id} was fenced by member {holder}."


def _group_for_join(c: "CoordinatorState", req) -> tuple[ConsumerGroup, bool, object]:
    """(group, created, classic group it upgrades or None); GroupMetadataManager
    .getOrMaybeCreateConsumerGroup's errors."""
    gid, epoch = req.group_id, req.member_epoch
    g = c.consumer_groups.get(gid)
    if g is not None:
        return g, False, None
    if epoch != 0:
        raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group."
                             if _other_type(c, gid) else f"Consumer group {gid} not found.")
    classic = c.groups.get(gid)
    if classic is not None and classic.state != DEAD:
        if classic.state != EMPTY or classic.members:
            try:
                return plan_upgrade(c, classic), True, classic
            except UpgradeRefused as e:
                raise HeartbeatError(e.code, e.message) from None
    # a new group's epochs: 1 from Kafka 4.3 (ModernGroup's groupEpoch.set(1), TargetAssignmentMetadata
    # .INITIAL); 0 before, and its first heartbeat bumps the epoch whatever it changed
    first = 1 if at_least(c.cfg.release, "4.3") else 0
    return ConsumerGroup(gid, group_epoch=first, assignment_epoch=first), True, None


def _reported(req) -> dict | None:
    if req.topic_partitions is None:
        return None
    return {tp.topic_id: frozenset(tp.partitions) for tp in req.topic_partitions}


def _heartbeat(c: "CoordinatorState", ctx: "Ctx", req) -> ConsumerGroupHeartbeatResponse:
    v, epoch = ctx.version, req.member_epoch
    g, created, upgraded = _group_for_join(c, req)
    member_id = req.member_id or ""
    if len(g.members) >= c.cfg.consumer_max_size and (not member_id or member_id not in g.members) and not (
            req.instance_id in g.static_members and at_least(c.cfg.release, "4.4")):
        # GroupMetadataManager.throwIfConsumerGroupIsFull; a static member coming back is not refused
        # from Kafka 4.4 (KAFKA-20601)
        raise HeartbeatError(E.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of "
                             f"{c.cfg.consumer_max_size} members.")
    if not member_id:
        member_id = kafka_uuid(c)
    reported = _reported(req)
    m, new, replaced = _member_for(c, g, req, member_id)
    # an instance id no member holds yet: without a new target computed by this heartbeat the broker reads
    # this member's target by that instance id, and finds none (UpdateTargetAssignmentResult
    # .fromLastTargetAssignment -> ConsumerGroup.targetAssignment(memberId, instanceId))
    unheld_instance = req.instance_id is not None and req.instance_id not in g.static_members
    # a rejoin (epoch 0) skips the epoch check from 4.2; before, only a static member's does (a dynamic
    # member's rejoin is checked as any heartbeat: getOrMaybeSubscribeDynamicConsumerGroupMember)
    rejoin = epoch == 0 and (req.instance_id is not None or at_least(c.cfg.release, "4.2"))
    if not new and not rejoin and epoch != m.member_epoch:
        if epoch > m.member_epoch or not (epoch == m.previous_member_epoch and reported is not None
                                          and _subset(reported, m.assigned)):
            raise HeartbeatError(K.FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a {'greater' if epoch > m.member_epoch else 'smaller'}"
                                 f" member epoch ({epoch}) than the one known by the group coordinator "
                                 f"({m.member_epoch}). The member must abandon all its partitions and rejoin.")
    regex = req.subscribed_topic_regex if v >= 1 else None
    unresolved = bool(regex) and regex_unresolved(g, regex)
    brought_new = unresolved and regex not in g.regex_counts
    if brought_new:                                  # new to the group: compiled now, resolved later
        try:
            validate_regex(regex)
        except InvalidRegex as e:
            raise HeartbeatError(K.INVALID_REGULAR_EXPRESSION, e.message) from None

    # -- the request is accepted from here on: state changes and records
    if upgraded is not None:                         # a non-empty classic group is upgraded (convertToConsumerGroup)
        install_upgrade(c, upgraded, g)
    elif created:
        if req.group_id in c.groups:                 # an empty classic group is replaced
            c.groups.pop(req.group_id)
            c.event("group_converted", req.group_id, to="consumer")
        c.consumer_groups[g.group_id] = g
        g.metadata_snapshot = {}
        g.topics_version = c.topics.version
        write_group(c, g)
    if replaced is not None:
        retire_static(c, g, replaced, m.member_id)
    if new:
        g.add(m)
    if unresolved:
        if ctx.topic_filter is not None and regex not in g.regex_filters:
            g.regex_filters[regex] = ctx.topic_filter
    elif ctx.topic_filter is not None:
        rx = regex or m.subscribed_topic_regex
        if rx and rx in g.regex_topics and rx not in g.regex_filters:
            g.regex_filters[rx] = ctx.topic_filter   # resolved without one (replayed): again, with it
            g.topics_version = -1
    refresh_group_metadata(c, g)
    old_names = set(m.subscribed_topic_names)
    resolved_before = bool(g.regex_topics)
    changed, sub_changed = _update_member(c, g, m, req, ctx, v)
    # maybeUpdateRegularExpressions: a switch to a regex not resolved yet bumps when its resolution arrives, not now
    bump = sub_changed and (set(m.subscribed_topic_names) != old_names or m.subscribed_topic_regex is None
                            or m.subscribed_topic_regex in g.regex_topics)
    if g.group_epoch == 0 and not at_least(c.cfg.release, "4.3"):   # 4.2 and before: "a newly created
        # group must move away from epoch 0" (GroupMetadataManager.consumerGroupHeartbeat)
        bump = True
    if not bump and at_least(c.cfg.release, "4.4"):
        # hasPreferredServerAssignorChanged (Kafka 4.4, KAFKA-20434), on every heartbeat: the group's preferred
        # assignor before it (map order) against the one with this member (copied map order) bumps the epoch
        # when they differ, also on a tie the two orders break differently with nothing changed
        bump = preferred_changed(g.assignor_counts, None if new else m.recorded_assignor, m.server_assignor,
                                 c.cfg.consumer_assignors[0])
    assignment_epoch = g.assignment_epoch
    member_updated(c, g, m, changed=changed, new=new, replaced=replaced is not None, sub_changed=bump)
    maybe_refresh(c, g, brought_new, resolved_before)
    no_target = unheld_instance and g.assignment_epoch == assignment_epoch

    # -- reconciliation of this member (CurrentAssignmentBuilder)
    old_assigned = m.assigned
    old_state = m.state
    try:
        reconcile_member(c, g, m, reported, sub_changed, keep=new or replaced is not None, no_target=no_target)
    except FencedEpoch:
        raise HeartbeatError(K.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. The member "
                             "must abandon all its partitions and rejoin.") from None
    if m.state == UNREVOKED:
        if old_state != UNREVOKED or new:
            arm_rebalance(c, g, m)
    else:
        c.timers.cancel(rebalance_key(g.group_id, m.member_id))
    arm_session(c, g, m)

    full = (req.rebalance_timeout_ms != -1 and (req.subscribed_topic_names is not None or regex is not None)
            and req.topic_partitions is not None)
    assignment = None
    if epoch == 0 or full or (m.assigned is not old_assigned and not _same_partitions(m.assigned, old_assigned)):
        assignment = Assignment(topic_partitions=[
            ConsumerGroupHeartbeatResponseTopicPartitions(topic_id=t, partitions=sorted(ps))
            for t, ps in m.assigned.items() if ps])
    return ConsumerGroupHeartbeatResponse(member_id=m.member_id, member_epoch=m.member_epoch,
                                          heartbeat_interval_ms=c.group_configs.consumer_heartbeat_interval_ms(g.group_id, c.cfg),
                                          assignment=assignment)


def _same_partitions(a: dict, b: dict) -> bool:
    ka = [t for t, ps in a.items() if ps]
    if len(ka) != sum(1 for ps in b.values() if ps):
        return False
    for t in ka:
        pb = b.get(t)
        if pb is None or a[t].keys() != pb.keys():
            return False
    return True


def _subset(reported: dict, assigned: dict) -> bool:
    for t, ps in reported.items():
        if not ps:
            continue
        have = assigned.get(t)
        if have is None or any(p not in have for p in ps):
            return False
    return True


def _member_for(c: "CoordinatorState", g: ConsumerGroup, req, member_id: str):
    """(member, is new, replaced static member or None); raises the identity errors of
    getOrMaybeSubscribeDynamicConsumerGroupMember / getOrMaybeSubscribeStaticConsumerGroupMember."""
    epoch, instance = req.member_epoch, req.instance_id
    if instance is None:
        m = g.members.get(member_id)
        if m is not None:
            return m, False, None
        if epoch != 0:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {g.group_id}.")
        return ConsumerMember(member_id, previous_member_epoch=-1), True, None
    held = g.static_members.get(instance)
    if epoch != 0:
        if held is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance} is unknown.")
        if held != member_id:
            raise HeartbeatError(E.FENCED_INSTANCE_ID, _fenced_message(member_id, instance, held))
        return g.members[held], False, None
    if held is None:
        m = g.members.get(member_id)
        if m is not None:
            return m, False, None
        return ConsumerMember(member_id, instance_id=instance, previous_member_epoch=-1), True, None
    old = g.members[held]
    if old.member_epoch != STATIC_LEAVE_EPOCH and old.classic is None:
        raise HeartbeatError(K.UNRELEASED_INSTANCE_ID,      # GroupMetadataManager.throwIfInstanceIdIsUnreleased
                             f"Static member {member_id} with instance id {instance} cannot join the group because "
                             f"the instance id is owned by {held} member.")
    # the new member id takes over the old one's subscription, assignment and target (no epoch bump);
    # the old one is removed once the request is accepted (_heartbeat)
    return static_successor(old, member_id), True, old


def _update_member(c: "CoordinatorState", g: ConsumerGroup, m: ConsumerMember, req, ctx: "Ctx",
                   v: int) -> tuple[bool, bool]:
    """Apply step 7; (anything changed, subscription changed)."""
    changed = m.classic is not None                  # a classic member switching to this protocol
    m.classic = None
    if req.instance_id is not None and (m.instance_id != req.instance_id or g.static_members.get(req.instance_id)
                                        != m.member_id):
        # a member (dynamic until now, or under another instance id) is static from here on: its instance
        # id finds it (ConsumerGroup.updateStaticMember)
        g.set_instance_id(m, req.instance_id, drop_old=at_least(c.cfg.release, "4.4"))
        changed = True
    if req.rack_id is not None and m.rack_id != req.rack_id:
        m.rack_id = req.rack_id
        changed = True
    if req.rebalance_timeout_ms != -1 and m.rebalance_timeout_ms != req.rebalance_timeout_ms:
        m.rebalance_timeout_ms = req.rebalance_timeout_ms
        changed = True
    if m.client_id != ctx.client_id or m.client_host != ctx.client_host:
        m.client_id, m.client_host = ctx.client_id, ctx.client_host
        changed = True
    names = m.subscribed_topic_names if req.subscribed_topic_names is None else tuple(req.subscribed_topic_names)
    regex = m.subscribed_topic_regex
    if v >= 1 and req.subscribed_topic_regex is not None:
        regex = req.subscribed_topic_regex or None
    assignor = m.server_assignor if req.server_assignor is None else req.server_assignor
    sub_changed = set(names) != set(m.subscribed_topic_names) or regex != m.subscribed_topic_regex
    if sub_changed or names != m.subscribed_topic_names or assignor != m.server_assignor:
        g.set_subscription(m, names, regex, assignor)
        changed = True
    return changed, sub_changed
