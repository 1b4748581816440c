"""The admin HTTP endpoint (`--admin-listen HOST:PORT`, off by default): fault rules for tests that drive
the broker from outside Python.

    GET    /faults          the rules, as JSON
    POST   /faults          add one: {"action": "error", "api": "PRODUCE", "error": "NOT_LEADER_OR_FOLLOWER",
                            "count": 2, "topic": "t", "partition": 0, "client_id": "c", "delay_ms": 0,
                            "duration_ms": 5000} -> {"id": 1}
    DELETE /faults/ID       remove one
    DELETE /faults          remove all
    GET    /health          "ok"
    GET    /metrics         Prometheus metrics (text exposition format, broker/observability/metrics.py)
    GET    /topics          introspection (broker/observability/introspect.py), as BrokerThread.topics() gives it;
    GET    /topics?internal=true   likewise /groups, /transactions, /producers/TOPIC/PARTITION and /zookeeper

HTTP/1.1 with one request per connection; a small, local tool, not a general web server.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import trio

from broker.observability.faults import FaultInjector

log = logging.getLogger(__name__)

MAX_REQUEST = 64 * 1024
_REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 404: "Not Found",
            405: "Method Not Allowed", 413: "Payload Too Large"}
_RULE_FIELDS = {"api", "error", "count", "topic", "partition", "client_id", "delay_ms", "duration_ms"}


def handle(method: str, path: str, body: bytes, faults: FaultInjector, now_ms: int) -> tuple[int, Any]:
    """(status, JSON-able body) for one request: pure, so it is tested without sockets."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts == ["health"] and method == "GET":
        return 200, "ok"
    if not parts or parts[0] != "faults" or len(parts) > 2:
        return 404, {"error": f"no such resource: {path}"}
    if len(parts) == 2:
        if method != "DELETE":
            return 405, {"error": "only DELETE /faults/ID"}
        if not parts[1].isdigit():
            return 404, {"error": f"no such rule: {parts[1]}"}
        return (204, None) if faults.remove(int(parts[1])) else (404, {"error": f"no such rule: {parts[1]}"})
    if method == "GET":
        return 200, faults.describe(now_ms)
    if method == "DELETE":
        faults.clear()
        return 204, None
    if method != "POST":
        return 405, {"error": "GET, POST or DELETE"}
    try:
        spec = json.loads(body or b"{}")
        if not isinstance(spec, dict) or "action" not in spec:
            raise ValueError('the body is a JSON object with an "action"')
        unknown = set(spec) - _RULE_FIELDS - {"action"}
        if unknown:
            raise ValueError(f"unknown fields {sorted(unknown)}")
        rule = faults.add(spec["action"], now_ms=now_ms, **{k: v for k, v in spec.items() if k != "action"})
    except (ValueError, KeyError, TypeError) as exc:
        return 400, {"error": str(exc)}
    return 201, {"id": rule.id}


async def serve(host: str, port: int, faults: FaultInjector, now_ms: Any, metrics: Any = None,
                inspect: Any = None,
                task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED) -> None:
    """`inspect(path, query)`: the introspection answer for GET /topics, /groups, ... (None: not found)."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    address = listeners[0].socket.getsockname()[:2]
    log.info("admin endpoint on http://%s:%d", *address)
    task_status.started(address)

    async def one(stream: trio.SocketStream) -> None:
        async with stream:
            try:
                with trio.move_on_after(10):
                    await _exchange(stream, faults, now_ms, metrics, inspect)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    await trio.serve_listeners(one, listeners)


async def _exchange(stream: trio.SocketStream, faults: FaultInjector, now_ms: Any, metrics: Any,
                    inspect: Any = None) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(4096)
        if not chunk:
            return
        data += chunk
        if len(data) > MAX_REQUEST:
            await _respond(stream, 413, {"error": "request too large"})
            return
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, path, _version = lines[0].split(" ", 2)
        length = next((int(v) for k, _, v in (line.partition(":") for line in lines[1:])
                       if k.strip().lower() == "content-length"), 0)
    except ValueError:
        await _respond(stream, 400, {"error": "malformed request"})
        return
    if length > MAX_REQUEST:
        await _respond(stream, 413, {"error": "request too large"})
        return
    while len(body) < length:
        chunk = await stream.receive_some(length - len(body))
        if not chunk:
            return
        body += chunk
    if method == "GET" and path.split("?", 1)[0] == "/metrics" and metrics is not None:
        text = metrics().encode()
        await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                              b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(text) + text)
        return
    if method == "GET" and inspect is not None:
        route, _, query = path.partition("?")
        found = inspect([p for p in route.split("/") if p], query)
        if found is not None:
            await _respond(stream, 200, found)
            return
    status, payload = handle(method, path, body[:length], faults, now_ms())
    await _respond(stream, status, payload)


async def _respond(stream: trio.SocketStream, status: int, payload: Any) -> None:
    body = b"" if payload is None else (json.dumps(payload) + "\n").encode()
    head = (f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    await stream.send_all(head + body)
