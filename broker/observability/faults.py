"""Fault injection for tests: rules that make the broker misbehave the way a real cluster sometimes does,
set from Python (`BrokerThread.inject_error` and friends) or from the admin HTTP endpoint.

A rule matches requests by API (or any), and optionally by topic, partition and client id; it applies to
the next `count` matching requests (None: until removed) and may expire at a time. What it does:

- ERROR: answer with error `error` without running the request (per partition where the response has
  partitions, else the response's error code), as a broker that refuses it would;
- DELAY: run the request `delay_ms` later;
- DROP_REQUEST: close the connection on receiving the request, which is not run;
- DROP_RESPONSE: run the request, then close the connection instead of answering (the retry that
  idempotence must deduplicate);
- DROP_AFTER_RESPONSE: run and answer it, then close the connection;
- IO_ERROR: run a Produce with its log appends failing (EIO), as a failing disk's writes: in a cluster the
  broker's log directory goes offline (broker.cluster.replica_manager.ReplicaManager.log_dir_failed);
- LEADER_UNAVAILABLE: for a partition, Metadata reports no leader (LEADER_NOT_AVAILABLE) and Produce,
  Fetch and ListOffsets touching it are answered NOT_LEADER_OR_FOLLOWER, as during a leader election.

Pure logic with time passed in; the server consults `FaultInjector.match` only while a rule exists.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

from protocol.header import ApiKey, ErrorCode


class FaultAction(Enum):
    ERROR = "error"
    DELAY = "delay"
    DROP_REQUEST = "drop_request"
    DROP_RESPONSE = "drop_response"
    DROP_AFTER_RESPONSE = "drop_after_response"
    IO_ERROR = "io_error"
    LEADER_UNAVAILABLE = "leader_unavailable"


# The APIs a LEADER_UNAVAILABLE rule refuses (their partitions' leader is the one missing).
_LEADER_APIS = frozenset({ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS})


@dataclass
class FaultRule:
    """A rule set by a test: what to do (error, delay, drop...) to which requests, how often."""

    id: int
    action: FaultAction
    api: ApiKey | None = None  # None: any API
    error: ErrorCode | None = None
    count: int | None = 1  # requests still to affect; None: every match until removed or expired
    topic: str | None = None
    partition: int | None = None
    client_id: str | None = None
    delay_ms: int = 0
    until_ms: int | None = None  # expiry (wall clock ms)
    matched: int = 0

    def describe(self) -> dict[str, Any]:
        out = asdict(self)
        out["action"] = self.action.value
        out["api"] = self.api.name if self.api is not None else None
        out["error"] = self.error.name if self.error is not None else None
        return out


def request_partitions(api: ApiKey, request: Any, topic_name_of: Any) -> list[tuple[str, int | None]]:
    """(topic, partition) pairs a request names; partition None for topic-level requests."""
    out: list[tuple[str, int | None]] = []
    if api == ApiKey.PRODUCE:
        for t in request.topic_data:
            name = t.name or topic_name_of(t.topic_id) or ""  # v13 names topics by id
            out += [(name, p.index) for p in t.partition_data]
    elif api == ApiKey.FETCH:
        for t in request.topics:
            name = t.topic or topic_name_of(t.topic_id)
            out += [(name, p.partition) for p in t.partitions]
    else:
        for t in getattr(request, "topics", None) or []:
            name = getattr(t, "name", None) or getattr(t, "topic", None)
            if name is None:
                continue
            partitions = getattr(t, "partitions", None) or getattr(t, "partition_indexes", None)
            if not partitions:
                out.append((name, None))
                continue
            for p in partitions:
                index = p if isinstance(p, int) else getattr(p, "partition_index", getattr(p, "partition", None))
                out.append((name, index))
    return out


class FaultInjector:
    def __init__(self) -> None:
        self.rules: list[FaultRule] = []
        self._ids = itertools.count(1)

    @property
    def active(self) -> bool:
        return bool(self.rules)

    def add(self, action: FaultAction | str, *, api: ApiKey | int | str | None = None,
            error: ErrorCode | int | str | None = None, count: int | None = 1, topic: str | None = None,
            partition: int | None = None, client_id: str | None = None, delay_ms: int = 0,
            duration_ms: int | None = None, now_ms: int = 0) -> FaultRule:
        action = FaultAction(action) if isinstance(action, str) else action
        api_key = _api_key(api)
        code = _error_code(error)
        if action is FaultAction.ERROR and code is None:
            raise ValueError("an error rule needs an error code")
        if action is FaultAction.IO_ERROR and api_key not in (None, ApiKey.PRODUCE):
            raise ValueError("io_error applies to Produce (its appends)")
        if action is FaultAction.IO_ERROR:
            api_key = ApiKey.PRODUCE
        if action is FaultAction.LEADER_UNAVAILABLE:
            if topic is None or partition is None or duration_ms is None:
                raise ValueError("leader_unavailable needs a topic, a partition and a duration")
            count = None
        if count is not None and count < 1:
            raise ValueError("count must be at least 1 (or None for every matching request)")
        rule = FaultRule(next(self._ids), action, api_key, code, count, topic, partition, client_id, delay_ms,
                         None if duration_ms is None else now_ms + duration_ms)
        self.rules.append(rule)
        return rule

    def remove(self, rule_id: int) -> bool:
        before = len(self.rules)
        self.rules = [r for r in self.rules if r.id != rule_id]
        return len(self.rules) < before

    def clear(self) -> None:
        self.rules.clear()

    def describe(self, now_ms: int) -> list[dict[str, Any]]:
        self._expire(now_ms)
        return [r.describe() for r in self.rules]

    def _expire(self, now_ms: int) -> None:
        if any(r.until_ms is not None and r.until_ms <= now_ms for r in self.rules):
            self.rules = [r for r in self.rules if r.until_ms is None or r.until_ms > now_ms]

    def match(self, api: ApiKey, client_id: str | None, request: Any, now_ms: int,
              topic_name_of: Any = lambda _id: None) -> FaultRule | None:
        """The first rule that applies to this request (and counts it), or None."""
        self._expire(now_ms)
        touched: list[tuple[str, int | None]] | None = None
        for rule in self.rules:
            if rule.action is FaultAction.LEADER_UNAVAILABLE:
                if api not in _LEADER_APIS:
                    continue
            elif rule.api is not None and rule.api != api:
                continue
            if rule.client_id is not None and rule.client_id != client_id:
                continue
            if rule.topic is not None:
                if touched is None:
                    touched = request_partitions(api, request, topic_name_of)
                if not any(t == rule.topic and (rule.partition is None or p in (None, rule.partition))
                           for t, p in touched):
                    continue
            rule.matched += 1
            if rule.count is not None:
                rule.count -= 1
                if rule.count == 0:
                    self.rules.remove(rule)
            return rule
        return None

    def unavailable_leaders(self, now_ms: int) -> set[tuple[str, int]]:
        """Partitions whose leader a rule hides from Metadata now."""
        self._expire(now_ms)
        return {(r.topic, r.partition) for r in self.rules
                if r.action is FaultAction.LEADER_UNAVAILABLE and r.topic is not None and r.partition is not None}

    def rewrite_response(self, api: ApiKey, response: Any, now_ms: int) -> None:
        """What a rule changes in a response that was answered: Metadata shows no leader for the partitions
        of LEADER_UNAVAILABLE rules, as during an election."""
        if api != ApiKey.METADATA or not isinstance(response, dict):
            return
        hidden = self.unavailable_leaders(now_ms)
        for topic in response.get("topics") or []:
            for partition in topic.get("partitions") or []:
                if (topic.get("name"), partition.get("partition_index")) in hidden:
                    partition.update(error_code=ErrorCode.LEADER_NOT_AVAILABLE, leader_id=-1, leader_epoch=-1,
                                     isr_nodes=[])


def _api_key(api: ApiKey | int | str | None) -> ApiKey | None:
    if api is None or isinstance(api, ApiKey):
        return api
    if isinstance(api, int):
        return ApiKey(api)
    return ApiKey[api.upper()]


def _error_code(error: ErrorCode | int | str | None) -> ErrorCode | None:
    if error is None or isinstance(error, ErrorCode):
        return error
    if isinstance(error, int):
        return ErrorCode(error)
    return ErrorCode[error.upper()]


def error_response(api: ApiKey, request: Any, error: ErrorCode, topic_name_of: Any) -> dict[str, Any]:
    """A response of the request's API carrying `error` where Kafka puts it: per partition for the APIs
    whose responses list partitions, else in the top-level error code. Fields not given take their
    defaults when encoded."""
    if api == ApiKey.PRODUCE:
        return {"responses": [{"name": t.name, "topic_id": t.topic_id, "partition_responses": [
            {"index": p.index, "error_code": error, "base_offset": -1, "log_append_time_ms": -1,
             "log_start_offset": -1, "record_errors": [], "error_message": None} for p in t.partition_data]}
            for t in request.topic_data], "throttle_time_ms": 0, "node_endpoints": []}
    if api == ApiKey.FETCH:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0, "responses": [
            {"topic": t.topic or topic_name_of(t.topic_id) or "", "topic_id": t.topic_id or uuid.UUID(int=0),
             "partitions": [{"partition_index": p.partition, "error_code": error, "high_watermark": -1,
                             "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                             "preferred_read_replica": -1, "records": b""} for p in t.partitions]}
            for t in request.topics]}
    if api == ApiKey.LIST_OFFSETS:
        return {"throttle_time_ms": 0, "topics": [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": error, "timestamp": -1, "offset": -1}
            for p in t.partitions]} for t in request.topics]}
    if api in (ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT):
        return {"throttle_time_ms": 0, "topics": [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": error} for p in t.partitions]}
            for t in request.topics]}
    if api == ApiKey.ADD_PARTITIONS_TO_TXN and getattr(request, "v3_and_below_topics", None) is not None:
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
            {"name": t.name, "results_by_partition": [{"partition_index": p, "partition_error_code": error}
                                                      for p in t.partitions]}
            for t in request.v3_and_below_topics]}
    if api == ApiKey.METADATA:
        return {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": -1, "topics": [
            {"error_code": error, "name": t.name or "", "topic_id": getattr(t, "topic_id", None) or uuid.UUID(int=0),
             "is_internal": False, "partitions": []} for t in request.topics or []]}
    if api in (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS):
        key = "topics" if api == ApiKey.CREATE_TOPICS else "responses"
        names = [t.name for t in request.topics] if api == ApiKey.CREATE_TOPICS else \
            (request.topic_names or [t.name for t in request.topics or []])
        return {"throttle_time_ms": 0, key: [{"name": n, "error_code": error, "error_message": None}
                                            for n in names]}
    if api == ApiKey.FIND_COORDINATOR and getattr(request, "coordinator_keys", None):
        return {"throttle_time_ms": 0, "coordinators": [
            {"key": k, "node_id": -1, "host": "", "port": -1, "error_code": error, "error_message": None}
            for k in request.coordinator_keys], "error_code": error, "node_id": -1, "host": "", "port": -1}
    if api == ApiKey.OFFSET_FETCH and getattr(request, "groups", None):
        return {"throttle_time_ms": 0, "groups": [{"group_id": g.group_id, "topics": [], "error_code": error}
                                                  for g in request.groups], "error_code": error}
    return {"throttle_time_ms": 0, "error_code": error}
