"""ConsumerGroupDescribe v0-1 (api 69; GroupMetadataManager.consumerGroupDescribe): group state, epochs, assignor, and per member its
epoch, identity, subscription, current assignment (assigned + pending revocation), target assignment
and (v1) member type (0 for members of the classic protocol). Topic names come from the live catalog; a topic id it does not know any more is
left out, as the broker leaves out topics missing from its metadata image."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kcodec.generated.consumer_group_describe import (Assignment, ConsumerGroupDescribeResponse, DescribedGroup,
                                                      Member, TopicPartitions)

from .. import errors as E
from ..assignors.javaorder import java_hash_set_order
from ..admin import AUTHORIZED_OPERATIONS_OMITTED, all_group_operations
from . import codes as K

if TYPE_CHECKING:
    from ..coordinator_state import CoordinatorState
    from ..result import Ctx



def _assignment(c: "CoordinatorState", *parts: dict) -> Assignment:
    merged: dict = {}
    for src in parts:
        for t, ps in src.items():
            if ps:
                merged.setdefault(t, set()).update(ps)
    out = []
    for t, ps in merged.items():
        info = c.topics.topic(t)
        if info is not None:
            out.append(TopicPartitions(topic_id=t, topic_name=info.name, partitions=sorted(ps)))
    out.sort(key=lambda tp: tp.topic_name)
    return Assignment(topic_partitions=out)


def consumer_group_describe(c: "CoordinatorState", ctx: "Ctx", req) -> None:
    out = []
    for gid in req.group_ids:
        if not gid:
            # GroupCoordinatorService.consumerGroupDescribe: the error without a message
            out.append(DescribedGroup(error_code=E.INVALID_GROUP_ID, error_message=None,
                                      group_id="", group_state="", assignor_name="", members=[],
                                      authorized_operations=AUTHORIZED_OPERATIONS_OMITTED))
            continue
        g = c.uncommitted.consumer_group(c, gid)          # a read: the committed state
        if g is None:
            msg = (f"Group {gid} is not a consumer group."
                   if gid in c.groups and not c.uncommitted.hidden(c, gid) else f"Group {gid} not found.")
            out.append(DescribedGroup(error_code=E.GROUP_ID_NOT_FOUND, error_message=msg, group_id=gid,
                                      group_state="", assignor_name="", members=[],
                                      authorized_operations=AUTHORIZED_OPERATIONS_OMITTED))
            continue
        members = [Member(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=java_hash_set_order(m.subscribed_topic_names),   # a HashSet in ConsumerGroupMember
            subscribed_topic_regex=m.subscribed_topic_regex or "",   # ConsumerGroupMember's regex defaults to ""
            assignment=_assignment(c, m.assigned, m.pending_revocation), target_assignment=_assignment(c, m.target),
            member_type=(K.MEMBER_TYPE_CONSUMER if m.classic is None else K.MEMBER_TYPE_CLASSIC)
            if ctx.version >= 1 else -1)
            for m in g.members.values()]
        out.append(DescribedGroup(
            error_code=E.NONE, group_id=gid, group_state=g.state, group_epoch=g.group_epoch,
            assignment_epoch=g.assignment_epoch, assignor_name=g.preferred_assignor(c.cfg.consumer_assignors[0]),
            members=members, authorized_operations=all_group_operations(c.cfg.release) if req.include_authorized_operations
            else AUTHORIZED_OPERATIONS_OMITTED))
    c.respond(ctx.token, ConsumerGroupDescribeResponse(groups=out))


def unsupported(req) -> ConsumerGroupDescribeResponse:
    """Every group UNSUPPORTED_VERSION, without a message (the consumer protocol is off upstream)."""
    return ConsumerGroupDescribeResponse(groups=[
        DescribedGroup(error_code=E.UNSUPPORTED_VERSION, error_message=None, group_id=gid, group_state="",
                       assignor_name="", members=[], authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
        for gid in req.group_ids])
