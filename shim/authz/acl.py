"""ACLs and the authorization decision of Kafka's StandardAuthorizer (4.4, KRaft), sans-IO.

Follows `StandardAuthorizerData.authorize`/`findAclRule`/`findResult`:
- a super user (`super.users`, "User:name" strings) is allowed everything;
- the ACLs that apply to a resource (type, name) are the LITERAL ones with that exact name, the
  LITERAL wildcard `*`, and the PREFIXED ones whose name is a prefix of the resource name;
- of those, an ACL matches a request when its principal is the caller's or `User:*`, its host is
  `*`, the caller's IP address, or a CIDR range holding it (KIP-1276, Kafka 4.4: `CidrUtils.isInRange`,
  network and broadcast addresses included, an invalid range or another IP family matches nothing;
  a broker accepts such ACLs from metadata version 4.4-IV1), and its operation is the requested one or ALL - an ALLOW ACL for
  READ, WRITE, DELETE or ALTER also grants DESCRIBE, ALTER_CONFIGS grants DESCRIBE_CONFIGS (DENY
  ACLs imply nothing);
- any matching DENY wins; else any matching ALLOW allows; else, when the resource has ACLs at all
  (for anyone), deny; when it has none, `allow.everyone.if.no.acl.found` decides (default false).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, NamedTuple

# org.apache.kafka.common.resource.ResourceType / PatternType, acl.AclOperation / AclPermissionType codes
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
LITERAL, PREFIXED = 3, 4
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS = 9, 10, 11
DENY, ALLOW = 2, 3
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"

_IMPLIES_DESCRIBE = frozenset((DESCRIBE, READ, WRITE, DELETE, ALTER))
_IMPLIES_DESCRIBE_CONFIGS = frozenset((DESCRIBE_CONFIGS, ALTER_CONFIGS))
# AclEntry.supportedOperations: what DescribeGroups/ConsumerGroupDescribe report as authorized operations
SUPPORTED_OPERATIONS = {GROUP: (READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS)}


class Acl(NamedTuple):
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str          # "User:alice", "User:*"
    host: str               # "*" or an IP address
    operation: int
    permission: int


@dataclass(frozen=True)
class Caller:
    """Who asks: the session principal ("User:alice"; "User:ANONYMOUS" without SASL) and the
    client's IP address as the broker would see it."""
    principal: str
    host: str


def _operation_matches(acl: Acl, operation: int) -> bool:
    if acl.operation == ALL:
        return True
    if acl.permission == ALLOW:
        if operation == DESCRIBE:
            return acl.operation in _IMPLIES_DESCRIBE
        if operation == DESCRIBE_CONFIGS:
            return acl.operation in _IMPLIES_DESCRIBE_CONFIGS
    return acl.operation == operation


class Authorizer:
    """The broker's decision for (caller, operation, resource) from a set of ACLs."""

    def __init__(self, acls: Iterable[Acl] = (), super_users: Iterable[str] = (),
                 allow_if_no_acls: bool = False):
        self.super_users = frozenset(super_users)
        self.allow_if_no_acls = allow_if_no_acls
        self.set_acls(acls)

    def set_acls(self, acls: Iterable[Acl]) -> None:
        """Replace the ACLs (a refresh). Indexed by resource type, then literal name / prefixes."""
        literal: dict[tuple[int, str], list[Acl]] = {}
        prefixed: dict[int, list[Acl]] = {}
        count = 0
        for acl in acls:
            count += 1
            if acl.pattern_type == LITERAL:
                literal.setdefault((acl.resource_type, acl.resource_name), []).append(acl)
            elif acl.pattern_type == PREFIXED:
                prefixed.setdefault(acl.resource_type, []).append(acl)
        self._literal, self._prefixed, self.count = literal, prefixed, count

    def _applicable(self, resource_type: int, name: str) -> list[Acl]:
        out = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD:
            out += self._literal.get((resource_type, WILDCARD), ())
        out += [a for a in self._prefixed.get(resource_type, ()) if name.startswith(a.resource_name)]
        return out

    def allowed(self, caller: Caller, operation: int, resource_type: int, name: str) -> bool:
        if caller.principal in self.super_users:
            return True
        acls = self._applicable(resource_type, name)
        if not acls:
            return self.allow_if_no_acls
        allow = False
        for acl in acls:
            if acl.principal != caller.principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.host != WILDCARD and acl.host != caller.host and not in_range(caller.host, acl.host):
                continue
            if not _operation_matches(acl, operation):
                continue
            if acl.permission == DENY:
                return False
            if acl.permission == ALLOW:
                allow = True
        return allow

    def authorized_operations(self, caller: Caller, resource_type: int, name: str) -> int:
        """The bit field DescribeGroups / ConsumerGroupDescribe return (AuthHelper.authorizedOperations)."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            if self.allowed(caller, op, resource_type, name):
                bits |= 1 << op
        return bits


def parse_super_users(text: str) -> list[str]:
    """Kafka's `super.users` format: "User:admin;User:kshim" (semicolon separated)."""
    return [s.strip() for s in text.split(";") if s.strip()]


@lru_cache(maxsize=4096)
def in_range(host: str, pattern: str) -> bool:
    """CidrUtils.isInRange: is the IP address `host` in the CIDR range `pattern` (a host address with a
    prefix length, bits past it ignored, as SubnetUtils reads it)? False for no '/', an invalid range
    or host, or an address of the other family."""
    if "/" not in pattern:
        return False
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(pattern, strict=False)
    except ValueError:
        return False
