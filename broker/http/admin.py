"""The admin endpoint (`--admin-listen HOST:PORT`, off by default): fault rules, metrics and introspection for
tests that drive the broker from outside Python.

    GET    /faults          the rules, as JSON
    POST   /faults          add one: {"action": "error", "api": "PRODUCE", "error": "NOT_LEADER_OR_FOLLOWER",
                            "count": 2, "topic": "t", "partition": 0, "client_id": "c", "delay_ms": 0,
                            "duration_ms": 5000} -> 201 {"id": 1}
    DELETE /faults/ID       remove one
    DELETE /faults          remove all
    GET    /health          "ok"
    GET    /metrics         Prometheus metrics (text exposition format, broker/observability/metrics.py)
    GET    /topics          introspection (broker/observability/introspect.py), as BrokerThread.topics() gives it;
    GET    /topics?internal=true   likewise /groups, /transactions, /producers/TOPIC/PARTITION and /zookeeper

Errors are {"error": MESSAGE} with the HTTP status.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from broker.http.stack import HttpError, HttpService
from broker.observability.faults import FaultInjector

_RULE_FIELDS = {"api", "error", "count", "topic", "partition", "client_id", "delay_ms", "duration_ms"}

# inspect(route parts, query string): the introspection answer for GET /topics, /groups, ... (None: not found)
Inspect = Callable[[list[str], str], Any]


def add_rule(body: bytes, faults: FaultInjector, now_ms: int) -> int:
    """POST /faults: the new rule's id; HttpError(400) for a body that is no rule."""
    try:
        spec = json.loads(body or b"{}")
        if not isinstance(spec, dict) or "action" not in spec:
            raise ValueError('the body is a JSON object with an "action"')
        unknown = set(spec) - _RULE_FIELDS - {"action"}
        if unknown:
            raise ValueError(f"unknown fields {sorted(unknown)}")
        rule = faults.add(spec["action"], now_ms=now_ms, **{k: v for k, v in spec.items() if k != "action"})
    except (ValueError, KeyError, TypeError) as exc:
        raise HttpError(400, str(exc)) from None
    return rule.id


def admin_service(faults: FaultInjector, now_ms: Callable[[], int], metrics: Callable[[], str],
                  inspect: Inspect) -> HttpService:
    async def health(request: Request) -> Response:
        return JSONResponse("ok")

    async def rules(request: Request) -> Response:
        if request.method == "GET":
            return JSONResponse(faults.describe(now_ms()))
        if request.method == "DELETE":
            faults.clear()
            return Response(status_code=204)
        return JSONResponse({"id": add_rule(await request.body(), faults, now_ms())}, status_code=201)

    async def remove_rule(request: Request) -> Response:
        rule = request.path_params["rule"]
        if not rule.isdigit() or not faults.remove(int(rule)):
            raise HttpError(404, f"no such rule: {rule}")
        return Response(status_code=204)

    async def render_metrics(request: Request) -> Response:
        return PlainTextResponse(metrics(), media_type="text/plain; version=0.0.4")

    async def introspect(request: Request) -> Response:
        found = inspect([p for p in request.url.path.split("/") if p], request.url.query)
        if found is None:
            raise HttpError(404, f"no such resource: {request.url.path}")
        return JSONResponse(found)

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/faults", rules, methods=["GET", "POST", "DELETE"]),
        Route("/faults/{rule}", remove_rule, methods=["DELETE"]),
        Route("/metrics", render_metrics, methods=["GET"]),
        *(Route(path, introspect, methods=["GET"]) for path in
          ("/topics", "/groups", "/transactions", "/zookeeper", "/producers/{topic}/{partition}")),
    ]
    return HttpService("admin", routes, _error)


def _error(error: HttpError) -> Response:
    return JSONResponse({"error": error.message}, status_code=error.status)
