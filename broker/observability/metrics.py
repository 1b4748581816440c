"""Prometheus metrics (text exposition format, served at GET /metrics on the admin endpoint).

Per request, a few dictionary increments (answered requests, error codes, a latency histogram) and, for
Produce and Fetch, bytes and record counts per topic read from batch headers (no record is decoded);
everything else (groups, transactions, connections, log sizes) is read from the broker's state when
scraped.
"""

from __future__ import annotations

import bisect
import struct
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from protocol.header import ApiKey, ErrorCode

if TYPE_CHECKING:
    from broker.app import Broker

# Latency buckets, seconds.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_RECORDS_COUNT = struct.Struct(">i")  # at byte 57 of a v2 batch
_BATCH_LENGTH = struct.Struct(">i")  # at byte 8


def _batches(records: bytes | None) -> tuple[int, int]:
    """(bytes, records) of stored batches, from their headers."""
    if not records:
        return 0, 0
    pos, n, count = 0, len(records), 0
    while pos + 61 <= n:
        (length,) = _BATCH_LENGTH.unpack_from(records, pos + 8)
        (records_count,) = _RECORDS_COUNT.unpack_from(records, pos + 57)
        count += max(records_count, 0)
        pos += 12 + length
    return n, count


def _error_codes(value: Any, depth: int = 0) -> list[int]:
    """Non-zero error codes of a response mapping, down to partitions (three levels of lists)."""
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key.endswith("error_code"):
                if item:
                    out.append(int(item))
            elif isinstance(item, list) and depth < 3:
                for element in item:
                    out += _error_codes(element, depth + 1)
    return out


class Metrics:
    def __init__(self) -> None:
        self.requests: dict[tuple[str, int], int] = defaultdict(int)
        self.errors: dict[tuple[str, int, int], int] = defaultdict(int)
        self.latency_counts: dict[str, list[int]] = {}
        self.latency_sum: dict[str, float] = defaultdict(float)
        self.bytes_in: dict[str, int] = defaultdict(int)
        self.messages_in: dict[str, int] = defaultdict(int)
        self.bytes_out: dict[str, int] = defaultdict(int)
        self.messages_out: dict[str, int] = defaultdict(int)
        # SASL and SSL: (listener, mechanism, outcome) -> count; the principals that authenticated (test kit)
        self.authentications: dict[tuple[str, str, str], int] = defaultdict(int)
        self.principals: dict[str, int] = defaultdict(int)

    def authentication(self, listener: str, mechanism: str | None, outcome: str, principal: str | None) -> None:
        """An authentication ended: outcome ok, failed or expired (a session closed at its end)."""
        self.authentications[(listener, mechanism or "SSL", outcome)] += 1
        if principal is not None:
            self.principals[principal] += 1

    def observe(self, api: ApiKey, version: int, request: Any, response: Any, seconds: float,
                topic_name_of: Any = lambda _id: None) -> None:
        name = api.name
        self.requests[(name, version)] += 1
        counts = self.latency_counts.get(name)
        if counts is None:
            counts = self.latency_counts[name] = [0] * (len(BUCKETS) + 1)
        counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.latency_sum[name] += seconds
        if not isinstance(response, dict):
            return
        for code in _error_codes(response):
            self.errors[(name, version, code)] += 1
        if api == ApiKey.PRODUCE:
            for topic, answered in zip(request.topic_data, response["responses"], strict=False):
                for data, result in zip(topic.partition_data, answered["partition_responses"], strict=False):
                    if not result["error_code"]:
                        size, count = _batches(data.records)
                        self.bytes_in[topic.name] += size
                        self.messages_in[topic.name] += count
        elif api == ApiKey.FETCH:
            for topic in response.get("responses") or []:
                name = topic.get("topic") or topic_name_of(topic.get("topic_id")) or str(topic.get("topic_id"))
                for partition in topic["partitions"]:
                    size, count = _batches(partition.get("records"))
                    self.bytes_out[name] += size
                    self.messages_out[name] += count

    def render(self, broker: Broker, connections: int) -> str:
        lines: list[str] = []

        def family(name: str, kind: str, help_text: str) -> None:
            lines.append(f"# HELP minibroker_{name} {help_text}")
            lines.append(f"# TYPE minibroker_{name} {kind}")

        family("requests_total", "counter", "Requests answered, per API and version.")
        for (api, version), n in sorted(self.requests.items()):
            lines.append(f'minibroker_requests_total{{api="{api}",version="{version}"}} {n}')
        family("request_errors_total", "counter", "Error codes in answers (per partition where the API has them).")
        for (api, version, code), n in sorted(self.errors.items()):
            error = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
            lines.append(f'minibroker_request_errors_total{{api="{api}",version="{version}",error="{error}"}} {n}')
        family("request_latency_seconds", "histogram", "From a request's arrival to its answer.")
        for api, counts in sorted(self.latency_counts.items()):
            cumulative = 0
            for bound, n in zip((*BUCKETS, float("inf")), counts, strict=True):
                cumulative += n
                le = "+Inf" if bound == float("inf") else repr(bound)
                lines.append(f'minibroker_request_latency_seconds_bucket{{api="{api}",le="{le}"}} {cumulative}')
            lines.append(f'minibroker_request_latency_seconds_sum{{api="{api}"}} {self.latency_sum[api]:.6f}')
            lines.append(f'minibroker_request_latency_seconds_count{{api="{api}"}} {cumulative}')
        for name, values, text in (("topic_bytes_in_total", self.bytes_in, "Record batch bytes appended."),
                                   ("topic_messages_in_total", self.messages_in, "Records appended."),
                                   ("topic_bytes_out_total", self.bytes_out, "Record batch bytes fetched."),
                                   ("topic_messages_out_total", self.messages_out, "Records fetched.")):
            family(name, "counter", text)
            for topic, n in sorted(values.items()):
                lines.append(f'minibroker_{name}{{topic="{_escape(topic)}"}} {n}')
        family("authentications_total", "counter",
               "Authentications per listener, mechanism (SSL: a client certificate) and outcome (ok, failed, "
               "expired).")
        for (listener, mechanism, outcome), n in sorted(self.authentications.items()):
            lines.append(f'minibroker_authentications_total{{listener="{listener}",mechanism="{mechanism}",'
                         f'outcome="{outcome}"}} {n}')
        family("connections", "gauge", "Client connections open.")
        lines.append(f"minibroker_connections {connections}")
        groups = broker.__dict__.get("groups")  # only once the group coordinator has started
        family("groups", "gauge", "Consumer groups per state.")
        family("group_rebalances_total", "counter", "Rebalances started.")
        if groups is not None:
            per_state: dict[str, int] = defaultdict(int)
            for group in groups.coordinator.groups.values():
                per_state[group.state.value] += 1
            for name, n in sorted(per_state.items()):
                lines.append(f'minibroker_groups{{state="{name}"}} {n}')
            lines.append(f"minibroker_group_rebalances_total {groups.coordinator.rebalances}")
        txns = broker.__dict__.get("txns")
        family("transactions", "gauge", "Transactional ids per transaction state.")
        if txns is not None:
            per_state = defaultdict(int)
            for txn in txns.coordinator.txns.values():
                per_state[txn.state.value] += 1
            for name, n in sorted(per_state.items()):
                lines.append(f'minibroker_transactions{{state="{name}"}} {n}')
        family("partition_log_bytes", "gauge", "Bytes in each partition's log.")
        for partition in broker.topics.hosted():
            lines.append(f'minibroker_partition_log_bytes{{topic="{_escape(partition.topic)}",'
                         f'partition="{partition.index}"}} {partition.log.size_bytes}')
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
