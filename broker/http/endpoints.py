"""The HTTP services a broker was asked for (`--admin-listen`, `--schema-registry`, `--console`), started in its
nursery: the services given one address share one app there; each other address gets its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from broker.config.options import CONSOLE_PORT, BrokerConfig, parse_host_port
from broker.http.admin import Inspect, admin_service
from broker.http.stack import HttpService, build_app, serve
from broker.observability.instruments import Instruments

if TYPE_CHECKING:
    from broker.app import Broker

ADMIN = "admin"
SCHEMA_REGISTRY = "schema-registry"
CONSOLE = "console"
_WILDCARDS = ("", "0.0.0.0", "::")
_DEFAULT_PORTS = {SCHEMA_REGISTRY: 8081, CONSOLE: CONSOLE_PORT}


async def serve_endpoints(nursery: trio.Nursery, config: BrokerConfig, broker: Broker, instruments: Instruments,
                          metrics: Callable[[], str], inspect: Inspect) -> dict[str, tuple[str, int]]:
    """Start the services; returns each one's bound (host, port) by name ("admin", "schema-registry",
    "console")."""
    faults = instruments.faults
    wanted: list[tuple[str, str, Callable[[], HttpService]]] = []
    if config.admin_listen:
        wanted.append((ADMIN, config.admin_listen, lambda: admin_service(faults, broker.now_ms, metrics, inspect)))
    registry = None
    if config.schema_registry:
        from broker.http.registry.api import registry_service
        from broker.http.registry.service import SchemaRegistry

        registry = SchemaRegistry(broker)
        wanted.append((SCHEMA_REGISTRY, config.schema_registry, lambda: registry_service(registry)))
    console = None
    if config.console:
        from broker.http.console.app import Console, console_service

        console = Console(broker, instruments, registry)
        wanted.append((CONSOLE, config.console, lambda: console_service(console)))
    groups: dict[tuple[str, int], list[tuple[str, Callable[[], HttpService]]]] = {}
    for index, (name, address, build) in enumerate(wanted):
        host, port = parse_host_port(address, default_port=_DEFAULT_PORTS.get(name, 0))
        key = (host, port) if port else (host, -index - 1)  # port 0: a port of its own each
        groups.setdefault(key, []).append((name, build))
    addresses: dict[str, tuple[str, int]] = {}
    for (host, port), services in groups.items():
        app = build_app([build() for _, build in services])
        bound = await nursery.start(serve, app, host, max(port, 0))
        addresses.update((name, bound) for name, _ in services)
    if registry is not None:
        host, port = addresses[SCHEMA_REGISTRY]
        if host in _WILDCARDS and broker.endpoints:
            host = broker.endpoints[0].host  # reachable by the other brokers: the advertised host
        await nursery.start(registry.run, f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}")
    if console is not None:
        await nursery.start(console.run)
    return addresses
