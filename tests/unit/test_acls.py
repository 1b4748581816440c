"""The authorizer's decisions and the ACL filters (Kafka's StandardAuthorizer / AclAuthorizer semantics)."""

from __future__ import annotations

import pytest

from broker.security.acl_store import AclStore
from broker.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Authorizer,
    InvalidAclError,
    PatternType,
    ResourceType,
    from_code,
    parse_super_users,
    validate_new_acl,
)

Op = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALICE = "User:alice"


def acl(name: str, op: AclOperation = Op.READ, permission: AclPermissionType = ALLOW, principal: str = ALICE,
        host: str = "*", pattern: PatternType = LITERAL, rtype: ResourceType = TOPIC) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def can(authorizer: Authorizer, op: AclOperation, name: str, principal: str = ALICE, host: str = "10.0.0.1",
        rtype: ResourceType = TOPIC) -> bool:
    return authorizer.authorize(principal, host, op, rtype, name)


def test_no_acl_on_the_resource_follows_allow_everyone():
    assert can(Authorizer(), Op.WRITE, "t")
    assert not can(Authorizer(allow_if_no_acl=False), Op.WRITE, "t")
    # An ACL for someone else on the resource: no longer "no ACL found", so alice is denied.
    authorizer = Authorizer([acl("t", principal="User:bob")])
    assert not can(authorizer, Op.READ, "t")
    assert can(authorizer, Op.READ, "other")
    assert can(authorizer, Op.READ, "t", principal="User:bob")


def test_deny_wins_over_allow_and_wildcards_match():
    authorizer = Authorizer([acl("*", Op.ALL, principal="User:*"), acl("secret", Op.READ, DENY)])
    assert can(authorizer, Op.READ, "public")
    assert can(authorizer, Op.READ, "secret", principal="User:bob")
    assert not can(authorizer, Op.READ, "secret")
    assert can(authorizer, Op.WRITE, "secret")  # the DENY is of READ only
    # DENY for a host only.
    authorizer = Authorizer([acl("t", Op.ALL), acl("t", Op.WRITE, DENY, host="10.0.0.9")])
    assert can(authorizer, Op.WRITE, "t", host="10.0.0.1")
    assert not can(authorizer, Op.WRITE, "t", host="10.0.0.9")


def test_prefixed_patterns():
    authorizer = Authorizer([acl("orders-", Op.WRITE, pattern=PREFIXED), acl("orders-eu", Op.WRITE, DENY,
                                                                             pattern=PREFIXED)])
    assert can(authorizer, Op.WRITE, "orders-us")
    assert not can(authorizer, Op.WRITE, "orders-eu-1")
    assert not can(authorizer, Op.WRITE, "orders-us", principal="User:bob")
    # "orders" does not start with "orders-": no ACL applies to it.
    assert can(authorizer, Op.WRITE, "orders", principal="User:bob")


def test_implied_operations_for_allow_only():
    authorizer = Authorizer([acl("t", Op.WRITE), acl("c", Op.ALTER_CONFIGS)])
    assert can(authorizer, Op.DESCRIBE, "t")
    assert not can(authorizer, Op.READ, "t")
    assert can(authorizer, Op.DESCRIBE_CONFIGS, "c")
    assert not can(authorizer, Op.DESCRIBE, "c")
    # A DENY of READ does not deny DESCRIBE (which READ would imply if it were allowed).
    authorizer = Authorizer([acl("t", Op.ALL), acl("t", Op.READ, DENY)])
    assert can(authorizer, Op.DESCRIBE, "t")
    assert not can(authorizer, Op.READ, "t")
    # ALL as a DENY denies everything.
    authorizer = Authorizer([acl("t", Op.ALL), acl("t", Op.ALL, DENY, principal="User:*")])
    assert not can(authorizer, Op.DESCRIBE, "t")


def test_super_users_bypass_deny():
    authorizer = Authorizer([acl("t", Op.ALL, DENY, principal="User:*")],
                            super_users=parse_super_users("User:admin; User:ops"))
    assert can(authorizer, Op.READ, "t", principal="User:admin")
    assert can(authorizer, Op.READ, "t", principal="User:ops")
    assert not can(authorizer, Op.READ, "t")


def test_authorized_operations_bitfield():
    authorizer = Authorizer([acl("t", Op.WRITE), acl("t", Op.ALTER_CONFIGS)])
    expected = (1 << Op.WRITE) | (1 << Op.DESCRIBE) | (1 << Op.ALTER_CONFIGS) | (1 << Op.DESCRIBE_CONFIGS)
    assert authorizer.authorized_operations(ALICE, "h", TOPIC, "t") == expected
    assert Authorizer().authorized_operations(ALICE, "h", GROUP, "g") == (1 << 3) | (1 << 6) | (1 << 8)


def test_authorize_by_resource_type():
    none = Authorizer(allow_if_no_acl=False)
    assert not none.authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)
    assert Authorizer().authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)
    some = Authorizer([acl("t", Op.WRITE)], allow_if_no_acl=False)
    assert some.authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)
    denied = Authorizer([acl("t", Op.WRITE), acl("t", Op.WRITE, DENY)], allow_if_no_acl=False)
    assert not denied.authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)
    dominated = Authorizer([acl("ab", Op.WRITE), acl("a", Op.WRITE, DENY, pattern=PREFIXED)], allow_if_no_acl=False)
    assert not dominated.authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)
    wildcard_deny = Authorizer([acl("x", Op.WRITE), acl("*", Op.ALL, DENY)], allow_if_no_acl=False)
    assert not wildcard_deny.authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)


@pytest.mark.parametrize(("acl_filter", "matches"), [
    (AclBindingFilter(), True),
    (AclBindingFilter(TOPIC, "orders-eu", PatternType.MATCH), True),  # the prefix applies to the name
    (AclBindingFilter(TOPIC, "orders-", PatternType.ANY), True),
    (AclBindingFilter(TOPIC, "orders-eu", PatternType.ANY), False),
    (AclBindingFilter(TOPIC, "orders-", LITERAL), False),
    (AclBindingFilter(TOPIC, None, PREFIXED), True),
    (AclBindingFilter(GROUP), False),
    (AclBindingFilter(principal="User:*"), False),  # filters compare strings, no wildcard expansion
    (AclBindingFilter(principal=ALICE, host="*", operation=Op.READ, permission=ALLOW), True),
    (AclBindingFilter(operation=Op.ALL), False),
    (AclBindingFilter(permission=DENY), False),
])
def test_filter_matching(acl_filter: AclBindingFilter, matches: bool):
    assert acl_filter.matches(acl("orders-", pattern=PREFIXED)) is matches


def test_match_filter_and_literal_wildcard():
    wildcard = acl("*")
    assert AclBindingFilter(TOPIC, "anything", PatternType.MATCH).matches(wildcard)
    assert not AclBindingFilter(TOPIC, "anything", PatternType.ANY).matches(wildcard)


def test_validation():
    validate_new_acl(acl("t"))
    with pytest.raises(InvalidAclError, match="Invalid patternType MATCH"):
        validate_new_acl(acl("t", pattern=PatternType.MATCH))
    with pytest.raises(InvalidAclError, match="only valid name for the CLUSTER"):
        validate_new_acl(acl("c", rtype=CLUSTER))
    assert from_code(ResourceType, 99) == ResourceType.UNKNOWN
    with pytest.raises(InvalidAclError, match="Unknown patternFilter"):
        AclBindingFilter(pattern_type=from_code(PatternType, 42)).validate()


def test_store_round_trip(tmp_path):
    store = AclStore(tmp_path)
    assert store.load() == []
    acls = [acl("t"), acl("p-", Op.ALL, DENY, "User:*", "1.2.3.4", PREFIXED, GROUP)]
    store.save(acls)
    assert AclStore(tmp_path).load() == acls
    assert not list(tmp_path.glob("*.tmp"))
