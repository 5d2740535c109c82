"""The ACL matcher (shim/authz/acl.py) against StandardAuthorizer's rules, and the SASL principal
reading (shim/authz/principal.py); no broker. The differential check against a real broker with
StandardAuthorizer is testsuite/proxy/test_group_authz.py."""

from __future__ import annotations

from shim.authz.acl import (ALL, ALLOW, ALTER, ALTER_CONFIGS, CLUSTER, DELETE, DENY, DESCRIBE, DESCRIBE_CONFIGS, GROUP,
                            LITERAL, PREFIXED, READ, TOPIC, WRITE, Acl, Authorizer, Caller, parse_super_users)
from shim.authz.principal import SaslState, plain_username, scram_username

ALICE = Caller("User:alice", "10.0.0.1")
BOB = Caller("User:bob", "10.0.0.2")


def acl(rtype, name, op, perm=ALLOW, principal="User:alice", host="*", pattern=LITERAL):
    return Acl(rtype, name, pattern, principal, host, op, perm)


def test_no_acls_denies_unless_allow_everyone():
    assert not Authorizer().allowed(ALICE, READ, GROUP, "g")
    assert Authorizer(allow_if_no_acls=True).allowed(ALICE, READ, GROUP, "g")
    # ACLs on the resource for someone else: denied even with allow.everyone.if.no.acl.found
    a = Authorizer([acl(GROUP, "g", READ, principal="User:bob")], allow_if_no_acls=True)
    assert not a.allowed(ALICE, READ, GROUP, "g")
    assert a.allowed(ALICE, READ, GROUP, "other")     # no ACL on "other" at all


def test_literal_prefixed_and_wildcard_resources():
    a = Authorizer([acl(GROUP, "app", READ), acl(GROUP, "pre-", READ, pattern=PREFIXED),
                    acl(TOPIC, "*", READ)])
    assert a.allowed(ALICE, READ, GROUP, "app")
    assert not a.allowed(ALICE, READ, GROUP, "app2")          # literal is exact
    assert a.allowed(ALICE, READ, GROUP, "pre-x")
    assert a.allowed(ALICE, READ, GROUP, "pre-")
    assert not a.allowed(ALICE, READ, GROUP, "pre")
    assert a.allowed(ALICE, READ, TOPIC, "anything")          # wildcard literal
    assert not a.allowed(ALICE, READ, GROUP, "*x")
    # a PREFIXED "*" is not a wildcard: it matches names starting with "*"
    b = Authorizer([acl(GROUP, "*", READ, pattern=PREFIXED)])
    assert not b.allowed(ALICE, READ, GROUP, "g") and b.allowed(ALICE, READ, GROUP, "*g")


def test_deny_wins_over_allow_from_any_pattern():
    a = Authorizer([acl(GROUP, "*", READ), acl(GROUP, "secret", READ, perm=DENY, pattern=PREFIXED)])
    assert a.allowed(ALICE, READ, GROUP, "public")
    assert not a.allowed(ALICE, READ, GROUP, "secret-1")
    b = Authorizer([acl(GROUP, "g", ALL), acl(GROUP, "*", READ, perm=DENY, principal="User:*")])
    assert not b.allowed(ALICE, READ, GROUP, "g")
    assert b.allowed(ALICE, DELETE, GROUP, "g")               # DENY READ does not deny DELETE


def test_implied_operations_only_for_allow():
    for op in (READ, WRITE, DELETE, ALTER, DESCRIBE):
        assert Authorizer([acl(TOPIC, "t", op)]).allowed(ALICE, DESCRIBE, TOPIC, "t"), op
    assert not Authorizer([acl(TOPIC, "t", DESCRIBE_CONFIGS)]).allowed(ALICE, DESCRIBE, TOPIC, "t")
    assert Authorizer([acl(TOPIC, "t", ALTER_CONFIGS)]).allowed(ALICE, DESCRIBE_CONFIGS, TOPIC, "t")
    assert not Authorizer([acl(TOPIC, "t", DESCRIBE)]).allowed(ALICE, READ, TOPIC, "t")
    # a DENY READ does not deny DESCRIBE; DENY ALL denies everything
    a = Authorizer([acl(TOPIC, "t", ALL), acl(TOPIC, "t", READ, perm=DENY)])
    assert a.allowed(ALICE, DESCRIBE, TOPIC, "t") and not a.allowed(ALICE, READ, TOPIC, "t")
    assert not Authorizer([acl(TOPIC, "t", ALL), acl(TOPIC, "t", ALL, perm=DENY)]).allowed(ALICE, DESCRIBE, TOPIC, "t")


def test_principals_wildcard_and_hosts():
    a = Authorizer([acl(GROUP, "g", READ, principal="User:*")])
    assert a.allowed(ALICE, READ, GROUP, "g") and a.allowed(BOB, READ, GROUP, "g")
    h = Authorizer([acl(GROUP, "g", READ, host="10.0.0.1")])
    assert h.allowed(ALICE, READ, GROUP, "g")
    assert not h.allowed(Caller("User:alice", "10.0.0.9"), READ, GROUP, "g")
    d = Authorizer([acl(GROUP, "g", READ), acl(GROUP, "g", READ, perm=DENY, host="10.0.0.9")])
    assert d.allowed(ALICE, READ, GROUP, "g")
    assert not d.allowed(Caller("User:alice", "10.0.0.9"), READ, GROUP, "g")


def test_super_users_bypass_acls():
    a = Authorizer([acl(GROUP, "*", ALL, perm=DENY, principal="User:*")],
                   super_users=parse_super_users("User:admin; User:kshim"))
    assert a.allowed(Caller("User:admin", "1.2.3.4"), DELETE, GROUP, "g")
    assert a.allowed(Caller("User:kshim", "1.2.3.4"), DESCRIBE, CLUSTER, "kafka-cluster")
    assert not a.allowed(ALICE, READ, GROUP, "g")


def test_authorized_operations_bits():
    a = Authorizer([acl(GROUP, "g", READ)])
    assert a.authorized_operations(ALICE, GROUP, "g") == (1 << READ) | (1 << DESCRIBE)
    assert a.authorized_operations(BOB, GROUP, "g") == 0


def test_sasl_principals():
    assert plain_username(b"\0alice\0pw") == "alice"
    assert plain_username(b"alice\0alice\0pw") == "alice"
    assert plain_username(b"bob\0alice\0pw") is None        # the broker refuses another authzid
    assert scram_username(b"n,,n=a=3Db=2Cc,r=xyz") == "a=b,c"
    assert scram_username(b"n,a=u,n=u,r=1") == "u"
    s = SaslState()
    s.handshake("SCRAM-SHA-512")
    s.token(b"n,,n=alice,r=nonce")
    s.answered(0)
    assert not s.authenticated                                # server-first only
    s.token(b"c=biws,r=...,p=...")
    s.answered(0)
    assert s.authenticated and s.principal == "User:alice"
    s.handshake("SCRAM-SHA-512")                              # KIP-368 re-authentication
    s.token(b"n,,n=alice,r=again")
    s.answered(0)
    assert s.authenticated and s.principal == "User:alice"
    p = SaslState()
    p.handshake("PLAIN")
    p.token(b"\0bob\0wrong")
    p.answered(58)                                            # SASL_AUTHENTICATION_FAILED
    assert not p.authenticated and p.principal is None


def test_acls_read_from_describe_acls_answers():
    import pytest
    from kcodec.generated.describe_acls import AclDescription, DescribeAclsResource, DescribeAclsResponse
    from shim.authz.cache import AclReadError, acls_from_response
    resp = DescribeAclsResponse(error_code=0, resources=[DescribeAclsResource(
        resource_type=GROUP, resource_name="ok-", pattern_type=PREFIXED, acls=[
            AclDescription(principal="User:alice", host="*", operation=READ, permission_type=ALLOW)])])
    assert acls_from_response(resp) == [Acl(GROUP, "ok-", PREFIXED, "User:alice", "*", READ, ALLOW)]
    for code, text in ((54, "no authorizer"), (31, "DESCRIBE on the CLUSTER")):
        with pytest.raises(AclReadError, match=text):
            acls_from_response(DescribeAclsResponse(error_code=code, resources=[]))


def test_cidr_host_ranges_kip_1276():
    """Kafka 4.4 (KIP-1276): an ACL host may be a CIDR range (CidrUtils.isInRange: network and broadcast
    addresses included, bits past the prefix ignored; an invalid range or the other IP family: no match)."""
    a = Authorizer([acl(GROUP, "g", READ, host="10.0.0.0/24"), acl(GROUP, "g", READ, principal="User:bob",
                                                                    host="10.0.0.9/31")])
    assert a.allowed(ALICE, READ, GROUP, "g")                                    # 10.0.0.1 in 10.0.0.0/24
    assert a.allowed(Caller("User:alice", "10.0.0.255"), READ, GROUP, "g")       # broadcast included
    assert not a.allowed(Caller("User:alice", "10.0.1.1"), READ, GROUP, "g")
    assert a.allowed(Caller("User:bob", "10.0.0.8"), READ, GROUP, "g")           # 10.0.0.9/31 is 10.0.0.8-9
    assert not a.allowed(BOB, READ, GROUP, "g")                                  # 10.0.0.2
    deny = Authorizer([acl(GROUP, "g", READ), acl(GROUP, "g", READ, perm=DENY, host="10.0.0.0/30")])
    assert not deny.allowed(ALICE, READ, GROUP, "g") and deny.allowed(Caller("User:alice", "10.0.0.4"), READ, GROUP, "g")
    v6 = Authorizer([acl(GROUP, "g", READ, host="fd00::/64"), acl(GROUP, "h", READ, host="10.0.0.0/33")])
    assert v6.allowed(Caller("User:alice", "fd00::5"), READ, GROUP, "g")
    assert not v6.allowed(ALICE, READ, GROUP, "g")                               # IPv4 caller, IPv6 range
    assert not v6.allowed(ALICE, READ, GROUP, "h")                               # invalid range
