"""ACL bindings, filters and the authorizer: Apache Kafka's semantics, as pure logic (no I/O).

Kafka's rules (StandardAuthorizer / AclAuthorizer): a super user may do everything; otherwise the ACLs on
the resource (literal name, the wildcard `*`, and every PREFIXED pattern the name starts with) decide, for
the request's principal (or `User:*`) and host (or `*`): a matching DENY wins, then a matching ALLOW
(ALL implies every operation; READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
DESCRIBE_CONFIGS; implication holds for ALLOW only). A resource without any ACL at all is allowed exactly
when `allow.everyone.if.no.acl.found`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


E = TypeVar("E", ResourceType, PatternType, AclOperation, AclPermissionType)


def from_code(kind: type[E], code: int) -> E:
    """Kafka's fromCode: a code this broker does not know is UNKNOWN."""
    try:
        return kind(code)
    except ValueError:
        return kind(0)


WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"

_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                               AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})

# The operations each resource type has (Kafka's AclEntry.supportedOperations): what the "authorized
# operations" bitfields of Metadata, DescribeGroups and DescribeCluster are made of.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                         AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                           AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE, AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType


class InvalidAclError(ValueError):
    """An ACL or filter Kafka refuses with INVALID_REQUEST (the message is Kafka's)."""


def validate_new_acl(acl: AclBinding) -> None:
    """Kafka's checks of an ACL to create (AclApis.handleCreateAcls, then AclControlManager.validateNewAcl)."""
    if acl.resource_type == ResourceType.CLUSTER and acl.name != CLUSTER_NAME:
        raise InvalidAclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not acl.name:
        raise InvalidAclError("Invalid empty resource name")
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAclError(f"Invalid resourceType {acl.resource_type.name}")
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAclError(f"Invalid patternType {acl.pattern_type.name}")
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidAclError(f"Invalid operation {acl.operation.name}")
    if acl.permission not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        raise InvalidAclError(f"Invalid permissionType {acl.permission.name}")
    if ":" not in acl.principal:
        raise InvalidAclError(f"Could not parse principal from `{acl.principal}` (no colon is present separating "
                              "the principal type from the principal name)")


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Kafka's AclBindingFilter: None fields and ANY match anything; pattern type MATCH matches the ACLs
    that would apply to the named resource (literal, wildcard and prefixes of it)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def validate(self) -> None:
        """AclControlManager.validateFilter."""
        if self.pattern_type == PatternType.UNKNOWN or self.resource_type == ResourceType.UNKNOWN:
            raise InvalidAclError("Unknown patternFilter.")
        if self.operation == AclOperation.UNKNOWN or self.permission == AclPermissionType.UNKNOWN:
            raise InvalidAclError("Unknown entryFilter.")

    def matches(self, acl: AclBinding) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: AclBinding) -> bool:
        """ResourcePatternFilter.matches."""
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != acl.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return self.name == acl.name
        # MATCH
        if acl.pattern_type == PatternType.LITERAL:
            return self.name == acl.name or acl.name == WILDCARD
        if acl.pattern_type == PatternType.PREFIXED:
            return self.name.startswith(acl.name)
        return False

    def _matches_entry(self, acl: AclBinding) -> bool:
        """AccessControlEntryFilter.matches: exact strings, no wildcard expansion."""
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and (self.operation == AclOperation.ANY or self.operation == acl.operation)
                and (self.permission == AclPermissionType.ANY or self.permission == acl.permission))


def parse_super_users(text: str) -> frozenset[str]:
    """`super.users`: principals separated by semicolons ("User:alice;User:bob")."""
    return frozenset(p.strip() for p in text.split(";") if p.strip())


def _operation_matches(acl: AclBinding, operation: AclOperation) -> bool:
    if acl.operation in (AclOperation.ALL, operation):
        return True
    if acl.permission != AclPermissionType.ALLOW:
        return False  # a DENY of READ does not deny DESCRIBE
    if operation == AclOperation.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    if operation == AclOperation.DESCRIBE_CONFIGS:
        return acl.operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


def _applies_to(acl: AclBinding, name: str) -> bool:
    if acl.pattern_type == PatternType.LITERAL:
        return acl.name in (name, WILDCARD)
    return name.startswith(acl.name)


class Authorizer:
    """The broker's ACLs (in creation order) and the decisions made from them."""

    def __init__(self, acls: Iterable[AclBinding] = (), *, super_users: frozenset[str] = frozenset(),
                 allow_if_no_acl: bool = True) -> None:
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self._acls: dict[AclBinding, None] = {}
        self._by_type: dict[ResourceType, list[AclBinding]] = {}
        self.replace(acls)

    @property
    def acls(self) -> list[AclBinding]:
        return list(self._acls)

    def replace(self, acls: Iterable[AclBinding]) -> None:
        self._acls = dict.fromkeys(acls)
        self._by_type = {}
        for acl in self._acls:
            self._by_type.setdefault(acl.resource_type, []).append(acl)

    def matching(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def with_created(self, acls: Iterable[AclBinding]) -> list[AclBinding]:
        """All ACLs after adding these (an existing ACL is not added twice)."""
        return list(dict.fromkeys([*self._acls, *acls]))

    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        if principal in self.super_users:
            return True
        on_resource = [acl for acl in self._by_type.get(resource_type, ()) if _applies_to(acl, name)]
        if not on_resource:
            return self.allow_if_no_acl
        allowed = False
        for acl in on_resource:
            if acl.principal not in (principal, WILDCARD_PRINCIPAL) or acl.host not in (host, WILDCARD):
                continue
            if not _operation_matches(acl, operation):
                continue
            if acl.permission == AclPermissionType.DENY:
                return False
            allowed = True
        return allowed

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """Kafka's Authorizer.authorizeByResourceType: may the principal do `operation` on some resource of
        this type? (InitProducerId of an idempotent producer without IDEMPOTENT_WRITE on the cluster.)"""
        # A hard-coded name, as Kafka does: super users, and no ACLs with allow.everyone.if.no.acl.found.
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allow: list[AclBinding] = []
        for acl in self._by_type.get(resource_type, ()):
            if acl.host not in (host, WILDCARD) or acl.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if acl.operation not in (operation, AclOperation.ALL):
                continue
            if acl.permission == AclPermissionType.DENY:
                if acl.pattern_type == PatternType.LITERAL and acl.name == WILDCARD:
                    return False
                (deny_literal if acl.pattern_type == PatternType.LITERAL else deny_prefixed).add(acl.name)
            else:
                allow.append(acl)
        if any(acl.pattern_type == PatternType.LITERAL and acl.name == WILDCARD for acl in allow):
            return True
        for acl in allow:
            if acl.pattern_type == PatternType.LITERAL and acl.name in deny_literal:
                continue
            if not any(acl.name[:i] in deny_prefixed for i in range(1, len(acl.name) + 1)):
                return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """The bitfield of the resource type's operations the principal may do (1 << operation code)."""
        return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type]
                   if self.authorize(principal, host, op, resource_type, name))
