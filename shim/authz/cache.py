"""The broker's ACLs as kshim reads them: one DescribeAcls (v1+, match-everything filter) per
refresh, turned into `Acl`s for the Authorizer. Sans-IO: the request body and the reading of the
answer; shim/groupservice/authz.py sends it on kshim's own upstream connection every
`authorizer_refresh_ms`. kshim's upstream principal needs DESCRIBE on the CLUSTER (or to be a super
user) for the broker to answer."""

from __future__ import annotations

from kcodec import api
from kcodec.protocol import ApiKey, Error

from .acl import Acl

DESCRIBE_ACLS = ApiKey.DESCRIBE_ACLS
ANY = 1                         # ResourceType.ANY, PatternType.ANY, AclOperation.ANY, AclPermissionType.ANY
SECURITY_DISABLED, CLUSTER_AUTHORIZATION_FAILED = Error.SECURITY_DISABLED, Error.CLUSTER_AUTHORIZATION_FAILED


class AclReadError(ConnectionError):
    """The broker did not list its ACLs; the message says why and what to change."""


def describe_all_request():
    return api.REQUESTS[DESCRIBE_ACLS](resource_type_filter=ANY, resource_name_filter=None,
                                       pattern_type_filter=ANY, principal_filter=None, host_filter=None,
                                       operation=ANY, permission_type=ANY)


def acls_from_response(resp) -> list[Acl]:
    if resp.error_code == SECURITY_DISABLED:
        raise AclReadError("the upstream broker has no authorizer (DescribeAcls: SECURITY_DISABLED); "
                           "turn kshim's authorizer off or configure authorizer.class.name on the broker")
    if resp.error_code == CLUSTER_AUTHORIZATION_FAILED:
        raise AclReadError("kshim's upstream principal may not list ACLs (DescribeAcls: "
                           "CLUSTER_AUTHORIZATION_FAILED); allow it DESCRIBE on the CLUSTER "
                           "(kafka-acls --add --allow-principal User:<kshim user> --operation Describe --cluster)")
    if resp.error_code:
        raise AclReadError(f"DescribeAcls failed: error {resp.error_code} {resp.error_message or ''}".strip())
    return [Acl(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation,
                a.permission_type)
            for r in resp.resources for a in r.acls]
