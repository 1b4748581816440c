"""Kafka 4.2-4.4's streams group protocol (KIP-1071): StreamsGroupHeartbeat's checks and errors, a member's
join (the internal topics the broker creates, the initial rebalance delay), its tasks, heartbeats with wrong
ids and epochs, StreamsGroupDescribe, the other group APIs on a streams group (ListGroups, DescribeGroups,
OffsetCommit/OffsetFetch with member epochs, DeleteGroups), missing and copartitioned source topics, a second
member taking half the tasks after the first revoked them, static members (4.4), the topology description
update (KIP-1331, 4.4) and the streams group configs."""

from __future__ import annotations

from typing import Any

from tests.reference.harness import Session, scenario
from tests.reference.scenarios.common import (
    DELETE_GROUPS,
    DESCRIBE_CONFIGS,
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    INCREMENTAL_ALTER_CONFIGS,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    create_topic,
)

STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_DESCRIBE, STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE = 88, 89, 93
CONSUMER_GROUP_HEARTBEAT = 68
RELEASES = ("4.2", "4.4")
MEMBER_A = "member-a-0000000000000"
MEMBER_B = "member-b-0000000000000"
GROUP_RESOURCE = 32


def version(s: Session) -> int:
    """The release's highest StreamsGroupHeartbeat/Describe version."""
    return 1 if s.release == "4.4" else 0


def word_count(group: str, source: str, epoch: int = 1, **changes: Any) -> dict[str, Any]:
    """The topology of a word count: subtopology 0 reads `source` and writes a repartition topic, subtopology 1
    reads that and keeps its counts in a store with a changelog topic."""
    def info(name: str, configs: dict[str, str]) -> dict[str, Any]:
        return {"name": name, "partitions": 0, "replication_factor": 0,
                "topic_configs": [{"key": k, "value": v} for k, v in configs.items()]}

    sub0 = {"subtopology_id": "0", "source_topics": [source], "source_topic_regex": [], "state_changelog_topics": [],
            "repartition_sink_topics": [f"{group}-repartition"], "repartition_source_topics": [],
            "copartition_groups": []}
    sub1 = {"subtopology_id": "1", "source_topics": [], "source_topic_regex": [],
            "state_changelog_topics": [info(f"{group}-store-changelog", {"cleanup.policy": "compact"})],
            "repartition_sink_topics": [],
            "repartition_source_topics": [info(f"{group}-repartition", {"cleanup.policy": "delete",
                                                                         "retention.ms": "-1"})],
            "copartition_groups": []}
    sub0.update(changes.pop("sub0", {}))
    sub1.update(changes.pop("sub1", {}))
    return {"epoch": epoch, "subtopologies": [sub0, sub1], **changes}


NO_TASKS: dict[str, Any] = {"active_tasks": [], "standby_tasks": [], "warmup_tasks": []}
TASKS_UNCHANGED: dict[str, Any] = {"active_tasks": None, "standby_tasks": None, "warmup_tasks": None}


def heartbeat(s: Session, step: str, group: str, member: str, epoch: int, *, topology: dict[str, Any] | None = None,
              tasks: dict[str, Any] | None = None, rebalance_ms: int = -1, instance: str | None = None,
              process: str | None = "process-a", endpoint_epoch: int = 0, **fields: Any) -> dict[str, Any]:
    body = {"group_id": group, "member_id": member, "member_epoch": epoch, "endpoint_information_epoch": endpoint_epoch,
            "instance_id": instance, "rack_id": None, "rebalance_timeout_ms": rebalance_ms, "topology": topology,
            **(tasks if tasks is not None else TASKS_UNCHANGED), "process_id": process, "user_endpoint": None,
            "client_tags": None, "task_offsets": None, "task_end_offsets": None, "shutdown_application": False,
            **fields}
    return s.request(step, STREAMS_GROUP_HEARTBEAT, version(s), body) or {}


def join(s: Session, step: str, group: str, member: str, source: str, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("topology", word_count(group, source))
    kwargs.setdefault("tasks", NO_TASKS)
    kwargs.setdefault("rebalance_ms", 30000)
    return heartbeat(s, step, group, member, 0, **kwargs)


def owned(answer: dict[str, Any], previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a member runs after an answer: the tasks it got, or what it had when the answer left them out."""
    if answer.get("active_tasks") is None:
        return previous or NO_TASKS
    return {k: [{"subtopology_id": t["subtopology_id"], "partitions": t["partitions"]} for t in answer[k] or []]
            for k in ("active_tasks", "standby_tasks", "warmup_tasks")}


def count(tasks: dict[str, Any], kind: str = "active_tasks") -> int:
    return sum(len(t["partitions"]) for t in tasks[kind])


def wait_tasks(s: Session, step: str, group: str, member: str, epoch: int, tasks: dict[str, Any],
               until: Any = None, source: str = "", instance: str | None = None, process: str = "process-a"
               ) -> dict[str, Any]:
    """Heartbeats until the member is given tasks (the initial rebalance delay and the internal topics' creation
    come first); the last answer is recorded. A member still at epoch 0 (the group's first assignment has not
    been made) heartbeats as it joined."""
    joining = epoch == 0
    body = {"group_id": group, "member_id": member, "member_epoch": epoch, "endpoint_information_epoch": 0,
            "instance_id": instance, "rack_id": None, "rebalance_timeout_ms": 30000 if joining else -1,
            "topology": word_count(group, source) if joining else None, **(NO_TASKS if joining else tasks),
            "process_id": process if joining else None, "user_endpoint": None, "client_tags": None,
            "task_offsets": None, "task_end_offsets": None, "shutdown_application": False}
    return s.wait_for(step, STREAMS_GROUP_HEARTBEAT, version(s), body, timeout=60,
                      until=until or (lambda a: a["error_code"] != 0 or bool(a.get("active_tasks"))))


def find_coordinator(s: Session, group: str) -> None:
    s.wait_for("find coordinator", FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]},
               until=lambda a: a["coordinators"][0]["error_code"] == 0, timeout=60)
    s.wait_for("coordinator loaded", STREAMS_GROUP_DESCRIBE, 0, {"group_ids": [group],
                                                                 "include_authorized_operations": False},
               until=lambda a: a["groups"][0]["error_code"] not in (14, 15, 16), timeout=60, record=False)


def describe(s: Session, step: str, *groups: str, topology: bool = False) -> dict[str, Any]:
    return s.request(step, STREAMS_GROUP_DESCRIBE, version(s), {
        "group_ids": list(groups), "include_authorized_operations": False,
        "include_topology_description": topology}) or {}


@scenario(releases=RELEASES)
def streams_group_heartbeat_errors(s: Session) -> None:
    """StreamsGroupHeartbeat of one member: invalid joins and topologies, the join (internal topics created,
    the initial rebalance delay), its tasks, wrong ids and epochs, the other group APIs on the group, leaving
    and deleting it."""
    source, group = s.name("in"), s.name("g")
    create_topic(s, "create", source, partitions=2)
    find_coordinator(s, group)
    topology = word_count(group, source)
    join(s, "join: empty member id", group, "", source)
    join(s, "join: no rebalance timeout", group, MEMBER_A, source, rebalance_ms=-1)
    join(s, "join: no topology", group, MEMBER_A, source, topology=None)
    join(s, "join: owning tasks", group, MEMBER_A, source,
         tasks={**NO_TASKS, "active_tasks": [{"subtopology_id": "0", "partitions": [0]}]})
    join(s, "join: one task type only", group, MEMBER_A, source, tasks={**TASKS_UNCHANGED, "active_tasks": []})
    join(s, "join: source topic regex", group, MEMBER_A, source,
         topology=word_count(group, source, sub0={"source_topic_regex": ["in.*"]}))
    changelog = {"name": "c", "partitions": 3, "replication_factor": 0, "topic_configs": []}
    join(s, "join: changelog with a partition count", group, MEMBER_A, source,
         topology=word_count(group, source, sub1={"state_changelog_topics": [changelog]}))
    join(s, "join: an internal topic in the topology", group, MEMBER_A, source,
         topology=word_count(group, "__consumer_offsets"))
    join(s, "join: an invalid topic name", group, MEMBER_A, source, topology=word_count(group, "bad name!"))
    if s.release != "4.4":  # 4.4 takes static members (streams_group_static_member)
        join(s, "join: static member", group, MEMBER_A, source, instance="instance-1")
    heartbeat(s, "heartbeat: epoch -3", group, MEMBER_A, -3)
    heartbeat(s, "heartbeat: unknown group", group, MEMBER_A, 1)
    joined = join(s, "join", group, MEMBER_A, source)
    epoch = joined.get("member_epoch", -1)
    answer = wait_tasks(s, "tasks", group, MEMBER_A, epoch, owned(joined), source=source)
    mine = owned(answer, owned(joined))
    epoch = answer.get("member_epoch", epoch)
    s.note("tasks", {"active": count(mine), "standby": count(mine, "standby_tasks")})
    for name in (f"{group}-repartition", f"{group}-store-changelog"):
        s.request(f"configs of {name}", DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": 2, "resource_name": name, "configuration_keys": ["cleanup.policy", "retention.ms"]}],
            "include_synonyms": False, "include_documentation": False})
    heartbeat(s, "heartbeat with its tasks", group, MEMBER_A, epoch, tasks=mine)
    heartbeat(s, "heartbeat: nothing changed, tasks left out", group, MEMBER_A, epoch)
    heartbeat(s, "heartbeat: unknown member", group, MEMBER_B, epoch)
    heartbeat(s, "heartbeat: epoch ahead (fenced)", group, MEMBER_A, epoch + 5)
    heartbeat(s, "heartbeat: topology when not joining", group, MEMBER_A, epoch, topology=topology)
    heartbeat(s, "heartbeat: a task not in the topology", group, MEMBER_A, epoch,
              tasks={**NO_TASKS, "active_tasks": [{"subtopology_id": "9", "partitions": [0]}]})
    join(s, "join: another topology, same epoch", group, MEMBER_B, source,
         topology=word_count(group, source, sub0={"repartition_sink_topics": [f"{group}-other"]}))
    describe(s, "describe the group and an unknown one", group, s.name("nogroup"))
    s.request("DescribeGroups of a streams group", DESCRIBE_GROUPS, 5, {"groups": [group],
                                                                       "include_authorized_operations": False})
    s.request("ListGroups of streams groups", LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["streams"]})
    s.request("ConsumerGroupHeartbeat to a streams group", CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": group, "member_id": MEMBER_B, "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 30000, "subscribed_topic_names": [source], "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": []})
    commit = {"group_id": group, "generation_id_or_member_epoch": epoch, "member_id": MEMBER_A,
              "group_instance_id": None, "topics": [{"name": source, "partitions": [
                  {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                   "committed_metadata": ""}]}]}
    s.request("commit: member's epoch", OFFSET_COMMIT, 9, commit)
    s.request("commit: epoch ahead", OFFSET_COMMIT, 9, {**commit, "generation_id_or_member_epoch": epoch + 1})
    s.request("commit: unknown member", OFFSET_COMMIT, 9, {**commit, "member_id": MEMBER_B})
    s.request("commit v8 by a streams member", OFFSET_COMMIT, 8, commit)
    s.request("fetch offsets with the member epoch", OFFSET_FETCH, 9, {"groups": [
        {"group_id": group, "member_id": MEMBER_A, "member_epoch": epoch,
         "topics": [{"name": source, "partition_indexes": [0]}]}], "require_stable": False})
    s.request("fetch offsets, stale member epoch", OFFSET_FETCH, 9, {"groups": [
        {"group_id": group, "member_id": MEMBER_A, "member_epoch": epoch - 1,
         "topics": [{"name": source, "partition_indexes": [0]}]}], "require_stable": False})
    s.request("delete while it has a member", DELETE_GROUPS, 2, {"groups_names": [group]})
    heartbeat(s, "leave (epoch -1)", group, MEMBER_A, -1)
    heartbeat(s, "heartbeat after leaving", group, MEMBER_A, epoch)
    heartbeat(s, "leave again", group, MEMBER_A, -1)
    describe(s, "describe after leaving", group)
    s.request("delete the empty group", DELETE_GROUPS, 2, {"groups_names": [group]})
    describe(s, "describe after deleting", group)


@scenario(releases=RELEASES)
def streams_group_missing_topics(s: Session) -> None:
    """A topology whose source topic does not exist yet (MISSING_SOURCE_TOPICS, no tasks) until it is created;
    one whose copartitioned source topics differ (INCORRECTLY_PARTITIONED_TOPICS); an existing internal topic
    with the wrong partition count."""
    source, group = s.name("in"), s.name("g")
    find_coordinator(s, group)
    joined = join(s, "join: source topic missing", group, MEMBER_A, source)
    epoch = joined.get("member_epoch", -1)
    describe(s, "describe: not ready", group)
    create_topic(s, "create the source topic", source, partitions=3)
    answer = wait_tasks(s, "tasks once it exists", group, MEMBER_A, epoch, owned(joined), source=source)
    s.note("tasks", {"active": count(owned(answer, owned(joined)))})
    left, right, other = s.name("left"), s.name("right"), s.name("g2")
    create_topic(s, "create left", left, partitions=2)
    create_topic(s, "create right", right, partitions=3)
    join_topology = {"epoch": 1, "subtopologies": [{
        "subtopology_id": "0", "source_topics": [left, right], "source_topic_regex": [], "state_changelog_topics": [],
        "repartition_sink_topics": [], "repartition_source_topics": [],
        "copartition_groups": [{"source_topics": [0, 1], "source_topic_regex": [], "repartition_source_topics": []}]}]}
    find_coordinator(s, other)
    join(s, "join: copartitioned topics differ", other, MEMBER_A, left, topology=join_topology)
    third = s.name("g3")
    create_topic(s, "an internal topic made too small", f"{third}-store-changelog", partitions=1)
    find_coordinator(s, third)
    join(s, "join: internal topic with other partitions", third, MEMBER_A, source)


@scenario(releases=RELEASES)
def streams_group_two_members(s: Session) -> None:
    """A second member of another process: it joins with nothing (the first owns every task), the first is
    told to give up half and stays in its epoch until it reports them gone, then the second gets them."""
    source, group = s.name("in"), s.name("g")
    create_topic(s, "create", source, partitions=4)
    find_coordinator(s, group)
    a = join(s, "a joins", group, MEMBER_A, source, process="process-a")
    a = wait_tasks(s, "a's tasks", group, MEMBER_A, a.get("member_epoch", -1), owned(a), source=source)
    mine_a = owned(a)
    s.note("a has", {"active": count(mine_a)})
    b = join(s, "b joins", group, MEMBER_B, source, process="process-b")
    s.note("b has", {"active": count(owned(b))})
    a2 = wait_tasks(s, "a is told to give tasks up", group, MEMBER_A, a.get("member_epoch", -1), mine_a,
                    until=lambda x: x["error_code"] != 0 or x.get("active_tasks") is not None, source=source)
    kept = owned(a2, mine_a)
    s.note("a keeps", {"active": count(kept), "same epoch": a2.get("member_epoch") == a.get("member_epoch")})
    describe_answer = describe(s, "describe while a revokes", group)
    s.note("states", sorted(g["group_state"] for g in describe_answer.get("groups", [])))
    a3 = heartbeat(s, "a reports the tasks gone", group, MEMBER_A, a.get("member_epoch", -1), tasks=kept)
    s.note("a's epoch moved", {"by": a3.get("member_epoch", 0) - a.get("member_epoch", 0)})
    b2 = wait_tasks(s, "b gets the released tasks", group, MEMBER_B, b.get("member_epoch", -1), owned(b),
                    source=source, process="process-b")
    s.note("b has", {"active": count(owned(b2, owned(b)))})


@scenario(releases=("4.4",))
def streams_group_static_member(s: Session) -> None:
    """A static member (instance id): another member with the same instance id, leaving with epoch -2 for a
    while and coming back under a new member id with its tasks, leaving for good."""
    source, group = s.name("in"), s.name("g")
    create_topic(s, "create", source, partitions=2)
    find_coordinator(s, group)
    first = join(s, "static member joins", group, MEMBER_A, source, instance="instance-1")
    first = wait_tasks(s, "its tasks", group, MEMBER_A, first.get("member_epoch", -1), owned(first),
                       source=source, instance="instance-1")
    epoch = first.get("member_epoch", -1)
    join(s, "another member, same instance id", group, MEMBER_B, source, instance="instance-1")
    heartbeat(s, "leave for a while with a wrong instance id", group, MEMBER_A, -2, instance="instance-9")
    heartbeat(s, "leaves for a while (epoch -2)", group, MEMBER_A, -2, instance="instance-1")
    describe(s, "describe while away", group)
    back = join(s, "back under a new member id", group, MEMBER_B, source, instance="instance-1")
    s.note("back", {"same epoch": back.get("member_epoch") == epoch,
                    "same tasks": owned(back) == owned(first)})
    heartbeat(s, "old member id heartbeats", group, MEMBER_A, epoch, instance="instance-1")
    heartbeat(s, "leaves for good (epoch -1)", group, MEMBER_B, -1, instance="instance-1")
    describe(s, "describe after leaving", group)


@scenario(releases=("4.4",))
def streams_group_topology_description(s: Session) -> None:
    """KIP-1331 on a broker without a topology description plugin: the update is refused, heartbeats do not
    ask for it, describe v1 reports none."""
    source, group = s.name("in"), s.name("g")
    create_topic(s, "create", source, partitions=1)
    find_coordinator(s, group)
    joined = join(s, "join", group, MEMBER_A, source)
    s.note("description asked", {"required": joined.get("topology_description_required")})
    node = {"name": "KSTREAM-SOURCE-0000000000", "node_type": 1, "source_topics": [source], "sink_topic": None,
            "stores": [], "successors": []}
    s.request("topology description update", STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, {
        "group_id": group, "member_id": MEMBER_A, "topology_epoch": 1,
        "topology_description": {"subtopologies": [{"subtopology_id": "0", "nodes": [node]}], "global_stores": []}})
    s.request("topology description update of an unknown group", STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, {
        "group_id": s.name("nogroup"), "member_id": MEMBER_A, "topology_epoch": 1,
        "topology_description": {"subtopologies": [], "global_stores": []}})
    describe(s, "describe with the description asked for", group, topology=True)
    describe(s, "describe without", group)


@scenario(releases=("4.4",))
def streams_group_configs(s: Session) -> None:
    """The streams.* group configs: described with their defaults, set, refused outside their bounds."""
    group = s.name("g")
    keys = ["streams.session.timeout.ms", "streams.heartbeat.interval.ms", "streams.num.standby.replicas",
            "streams.initial.rebalance.delay.ms", "streams.assignment.interval.ms", "streams.task.offset.interval.ms",
            "streams.num.warmup.replicas", "streams.acceptable.recovery.lag"]

    def describe_configs(step: str) -> None:
        s.request(step, DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": GROUP_RESOURCE, "resource_name": group, "configuration_keys": keys}],
            "include_synonyms": False, "include_documentation": False})

    def alter(step: str, **values: str) -> None:
        s.request(step, INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
            {"resource_type": GROUP_RESOURCE, "resource_name": group,
             "configs": [{"name": k.replace("_", "."), "config_operation": 0, "value": v} for k, v in values.items()]}],
            "validate_only": False})

    describe_configs("defaults")
    alter("session timeout below the minimum", streams_session_timeout_ms="1000")
    alter("standby replicas above the maximum", streams_num_standby_replicas="5")
    alter("assignment interval above the maximum", streams_assignment_interval_ms="20000")
    alter("task offset interval below the minimum", streams_task_offset_interval_ms="1000")
    alter("heartbeat interval not below the session timeout", streams_session_timeout_ms="50000",
          streams_heartbeat_interval_ms="15000")
    alter("not a number", streams_num_warmup_replicas="many")
    alter("valid values", streams_num_standby_replicas="1", streams_initial_rebalance_delay_ms="0",
          streams_session_timeout_ms="50000")
    describe_configs("after setting them")
