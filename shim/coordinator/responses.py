"""The JoinGroup and SyncGroup answers of classic groups at each request version (fields a version
does not have are left at their defaults, as Kafka's JoinGroupResponse/SyncGroupResponse builders do)."""

from __future__ import annotations

from kcodec.generated.join_group import JoinGroupResponse, JoinGroupResponseMember
from kcodec.generated.sync_group import SyncGroupResponse


def _for_version(members: list[JoinGroupResponseMember], version: int) -> list[JoinGroupResponseMember]:
    if version >= 5:
        return members
    return [JoinGroupResponseMember(member_id=m.member_id, metadata=m.metadata) for m in members]


def join_response(version: int, error: int, *, generation_id: int = -1, protocol_type: str | None = None,
                  protocol_name: str | None = None, leader: str = "", member_id: str = "",
                  members: list | None = None, skip_assignment: bool = False) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=error, generation_id=generation_id,
        protocol_type=protocol_type if version >= 7 else None,
        protocol_name=protocol_name if (protocol_name is not None or version >= 7) else "",
        leader=leader, skip_assignment=skip_assignment if version >= 9 else False,
        member_id=member_id, members=members or [])


def join_error(version: int, error: int, member_id: str = "") -> JoinGroupResponse:
    return join_response(version, error, member_id=member_id)


def sync_response(version: int, error: int, protocol_type: str | None = None, protocol_name: str | None = None,
                  assignment: bytes = b"") -> SyncGroupResponse:
    if version < 5:
        protocol_type = protocol_name = None
    return SyncGroupResponse(error_code=error, protocol_type=protocol_type, protocol_name=protocol_name,
                             assignment=assignment)
