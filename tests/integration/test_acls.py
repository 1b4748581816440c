"""ACLs: CreateAcls / DescribeAcls / DeleteAcls through real admin clients, persistence across a restart,
and Kafka's validation errors."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KpResourceType
from kafka.errors import ClusterAuthorizationFailedError, NoError

from protocol.header import ApiKey
from tests.kafka_wire import WireClient


def _binding(name: str, principal: str, op: AclOperation, pattern: ResourcePatternType = ResourcePatternType.LITERAL,
             permission: AclPermissionType = AclPermissionType.ALLOW,
             rtype: ResourceType = ResourceType.TOPIC) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, "*", op, permission)


def _filter(name: str | None, pattern: ResourcePatternType = ResourcePatternType.ANY,
            rtype: ResourceType = ResourceType.ANY, principal: str | None = None,
            op: AclOperation = AclOperation.ANY) -> AclBindingFilter:
    return AclBindingFilter(rtype, name, pattern, principal, None, op, AclPermissionType.ANY)


def _describe(admin: AdminClient, f: AclBindingFilter) -> set[tuple]:
    return {(b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type)
            for b in admin.describe_acls(f).result(10)}


def test_create_describe_delete_confluent(minibroker, topic_name):
    admin = AdminClient({"bootstrap.servers": minibroker})
    acls = [_binding(topic_name, "User:alice", AclOperation.READ, ResourcePatternType.PREFIXED),
            _binding(topic_name, "User:bob", AclOperation.WRITE),
            _binding("other", "User:bob", AclOperation.WRITE),
            _binding("g1", "User:bob", AclOperation.READ, rtype=ResourceType.GROUP,
                     permission=AclPermissionType.DENY)]
    for future in admin.create_acls(acls).values():
        assert future.result(10) is None
    # Creating an existing ACL again succeeds and adds nothing.
    admin.create_acls([acls[1]])[acls[1]].result(10)

    everything = _describe(admin, _filter(None))
    assert len(everything) == 4
    # MATCH: the ACLs that apply to a name: the literal one and the prefix it starts with.
    assert {a[3] for a in _describe(admin, _filter(topic_name + "-x", ResourcePatternType.MATCH))} == {"User:alice"}
    assert {a[3] for a in _describe(admin, _filter(topic_name, ResourcePatternType.MATCH))} == \
        {"User:alice", "User:bob"}
    assert _describe(admin, _filter(topic_name, ResourcePatternType.LITERAL)) == {
        (ResourceType.TOPIC, topic_name, ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.WRITE,
         AclPermissionType.ALLOW)}
    assert len(_describe(admin, _filter(None, rtype=ResourceType.GROUP))) == 1
    assert len(_describe(admin, _filter(None, op=AclOperation.WRITE))) == 2

    # Two filters that match the same ACL: it is deleted once, reported under the first.
    results = admin.delete_acls([_filter(topic_name, ResourcePatternType.MATCH),
                                 _filter(None, principal="User:bob", op=AclOperation.WRITE)])
    deleted = [future.result(10) for future in results.values()]
    assert sorted(len(d) for d in deleted) == [1, 2]
    assert {b.principal for d in deleted for b in d} == {"User:alice", "User:bob"}
    remaining = _describe(admin, _filter(None))
    assert {(a[0], a[1]) for a in remaining} == {(ResourceType.GROUP, "g1")}


def test_invalid_acls_get_invalid_request(minibroker):
    """Kafka's validation (AclApis, AclControlManager): per creation and per filter, INVALID_REQUEST."""
    with WireClient(minibroker) as c:
        def creation(rtype: int = 2, name: str = "t", pattern: int = 3, principal: str = "User:a", op: int = 3,
                     permission: int = 3) -> dict:
            return {"resource_type": rtype, "resource_name": name, "resource_pattern_type": pattern,
                    "principal": principal, "host": "*", "operation": op, "permission_type": permission}
        response = c.request(ApiKey.CREATE_ACLS, 3, {"creations": [
            creation(), creation(rtype=4, name="other"), creation(name=""), creation(rtype=1),
            creation(pattern=2), creation(op=1), creation(permission=1), creation(principal="nocolon"),
            creation(rtype=99), creation(rtype=3, name="g", op=8)]})
        errors = [(r.error_code, r.error_message) for r in response.results]
        assert errors == [
            (0, None),
            (42, "The only valid name for the CLUSTER resource is kafka-cluster"),
            (42, "Invalid empty resource name"),
            (42, "Invalid resourceType ANY"),
            (42, "Invalid patternType MATCH"),
            (42, "Invalid operation ANY"),
            (42, "Invalid permissionType ANY"),
            (42, "Could not parse principal from `nocolon` (no colon is present separating the principal type "
                 "from the principal name)"),
            (42, "Invalid resourceType UNKNOWN"),
            (0, None)]
        describe = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                    "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}
        response = c.request(ApiKey.DESCRIBE_ACLS, 1, describe)
        assert response.error_code == 0
        assert sorted((r.resource_type, r.resource_name) for r in response.resources) == [(2, "t"), (3, "g")]
        response = c.request(ApiKey.DESCRIBE_ACLS, 2, {**describe, "pattern_type_filter": 9})
        assert (response.error_code, response.error_message) == (42, "Unknown patternFilter.")
        response = c.request(ApiKey.DELETE_ACLS, 3, {"filters": [
            {**describe, "operation": 77}, {**describe, "resource_type_filter": 2}]})
        assert [(r.error_code, r.error_message, len(r.matching_acls)) for r in response.filter_results] == [
            (42, "Unknown entryFilter.", 0), (0, None, 1)]
        assert response.filter_results[1].matching_acls[0].resource_name == "t"


def test_acls_survive_restart(minibroker_server, topic_name):
    admin = AdminClient({"bootstrap.servers": minibroker_server.bootstrap})
    acl = _binding(topic_name, "User:carol", AclOperation.DESCRIBE, ResourcePatternType.PREFIXED,
                   AclPermissionType.DENY)
    admin.create_acls([acl])[acl].result(10)
    minibroker_server.restart()
    admin = AdminClient({"bootstrap.servers": minibroker_server.bootstrap})
    assert _describe(admin, _filter(None)) == {
        (ResourceType.TOPIC, topic_name, ResourcePatternType.PREFIXED, "User:carol", "*", AclOperation.DESCRIBE,
         AclPermissionType.DENY)}
    deleted = list(admin.delete_acls([_filter(None)]).values())[0].result(10)
    assert len(deleted) == 1
    minibroker_server.restart()
    admin = AdminClient({"bootstrap.servers": minibroker_server.bootstrap})
    assert _describe(admin, _filter(None)) == set()


def test_kafka_python_admin(minibroker, topic_name):
    kp = KafkaAdminClient(bootstrap_servers=minibroker)
    try:
        pattern = ResourcePattern(KpResourceType.TOPIC, topic_name, ACLResourcePatternType.PREFIXED)
        acl = ACL("User:test", "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
        result = kp.create_acls([acl])
        assert (len(result["succeeded"]), len(result["failed"])) == (1, 0)
        acls, error = kp.describe_acls(ACLFilter(None, "*", ACLOperation.ANY, ACLPermissionType.ANY,
                                                 ResourcePatternFilter(KpResourceType.TOPIC, topic_name,
                                                                       ACLResourcePatternType.ANY)))
        assert error is NoError
        assert [(a.principal, a.operation, a.resource_pattern.pattern_type) for a in acls] == [
            ("User:test", ACLOperation.READ, ACLResourcePatternType.PREFIXED)]
        deleted = kp.delete_acls([ACLFilter("User:test", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                                            pattern)])
        assert len(deleted) == 1 and len(deleted[0][1]) == 1
    finally:
        kp.close()


def test_acl_apis_need_cluster_permissions(minibroker):
    """ALTER on the cluster for Create/DeleteAcls, DESCRIBE for DescribeAcls (a DENY ACL for everyone)."""
    admin = AdminClient({"bootstrap.servers": minibroker})
    deny = _binding("kafka-cluster", "User:*", AclOperation.ALTER, permission=AclPermissionType.DENY,
                    rtype=ResourceType.BROKER)  # code 4: the CLUSTER resource
    admin.create_acls([deny])[deny].result(10)
    other = _binding("t", "User:x", AclOperation.READ)
    with pytest.raises(KafkaException) as info:
        admin.create_acls([other])[other].result(10)
    assert info.value.args[0].name() == "CLUSTER_AUTHORIZATION_FAILED"
    with pytest.raises(KafkaException) as info:
        list(admin.delete_acls([_filter(None)]).values())[0].result(10)
    assert info.value.args[0].name() == "CLUSTER_AUTHORIZATION_FAILED"
    # The cluster now has an ACL, so allow.everyone.if.no.acl.found no longer opens it: DESCRIBE is denied
    # too (a DENY of ALTER does not imply one of DESCRIBE, but nothing allows it).
    kp = KafkaAdminClient(bootstrap_servers=minibroker)
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            kp.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                       ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY)))
    finally:
        kp.close()
