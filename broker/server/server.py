"""The trio server: listeners, one task per connection (broker.server.connection), graceful shutdown.

It builds the Broker (broker.app) from the config when it starts, with the version profile its dispatch
table serves, and stops it after the last connection.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

import trio

from broker.app import Broker, Endpoint
from broker.config.options import BrokerConfig
from broker.observability.faults import FaultInjector
from broker.observability.instruments import Instruments
from broker.observability.metrics import Metrics
from broker.observability.trace import Tracer
from broker.server.connection import Connection, peer_name
from broker.server.dispatch import load_handlers, version_profile
from broker.server.listeners import advertised_host, open_listeners
from broker.server.tls_connection import TlsConnection

log = logging.getLogger(__name__)


COORDINATOR_START_DELAY_S = 0.5
TRACE_KEPT_FOR_CONSOLE = 2000  # protocol trace events the console's trace page starts with


class Server:
    """Runs the broker until `shutdown()`; `listen_addresses` are the bound (host, port) pairs."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker: Broker | None = None
        self.listen_addresses: list[tuple[str, int]] = []
        self._shutdown = trio.Event()
        self.stopped = trio.Event()
        self._connections: set[Connection] = set()
        self._handshakes = 0  # TLS handshakes under way (a connection not yet served)
        # Rules set by tests (BrokerThread, the admin endpoint), metrics, the trace (--trace FILE).
        self.instruments = Instruments(FaultInjector(), Metrics())
        self.http_addresses: dict[str, tuple[str, int]] = {}  # bound (host, port) of each HTTP service by name

    @property
    def admin_address(self) -> tuple[str, int] | None:
        return self.http_addresses.get("admin")

    @property
    def schema_registry_address(self) -> tuple[str, int] | None:
        return self.http_addresses.get("schema-registry")

    @property
    def console_address(self) -> tuple[str, int] | None:
        return self.http_addresses.get("console")

    @property
    def faults(self) -> FaultInjector:
        return self.instruments.faults

    @property
    def metrics(self) -> Metrics:
        return self.instruments.metrics

    @property
    def tracer(self) -> Tracer | None:
        return self.instruments.tracer

    def shutdown(self) -> None:
        self._shutdown.set()

    def render_metrics(self) -> str:
        """The Prometheus text of GET /metrics."""
        assert self.broker is not None
        return self.metrics.render(self.broker, self.connection_count)

    def _inspect(self, route: list[str], query: str) -> object:
        """GET /topics, /groups, /transactions, /producers/TOPIC/PARTITION, /zookeeper on the admin endpoint."""
        from broker.observability import introspect

        assert self.broker is not None
        if route == ["topics"]:
            return introspect.topics(self.broker, "internal=true" in query)
        if route == ["groups"]:
            return introspect.groups(self.broker)
        if route == ["transactions"]:
            return introspect.transactions(self.broker)
        if route == ["zookeeper"]:
            return introspect.zookeeper(self.broker)
        if len(route) == 3 and route[0] == "producers" and route[2].isdigit():
            return introspect.producers(self.broker, route[1], int(route[2]))
        return None

    @property
    def connection_count(self) -> int:
        """Client connections being served now (TLS ones from the start of their handshake)."""
        return len(self._connections) + self._handshakes

    async def run(self, *, task_status: trio.TaskStatus[Server] = trio.TASK_STATUS_IGNORED) -> None:
        cluster = None
        if self.config.cluster_mode:
            # A broker of a ZooKeeper-mode cluster: its id and the cluster id come from ZooKeeper first.
            from broker.cluster.zk_cluster import ZkCluster

            cluster = await ZkCluster.connect(self.config)
        try:
            self.broker = Broker(self.config, version_profile(self.config.kafka_version, cluster=cluster is not None),
                                 cluster)
            # Checked before anything starts: a listener's bad key store or JAAS config stops the broker here.
            securities = self._listener_securities()
        except BaseException:
            if cluster is not None:
                await cluster.aclose()
            raise
        try:
            async with trio.open_nursery() as nursery:
                await self.broker.run(nursery)
                if self.config.trace_file or self.config.console:
                    # The console's live trace keeps the newest events in memory.
                    self.instruments.tracer = Tracer(str(self.config.trace_file) if self.config.trace_file else None,
                                                     keep=TRACE_KEPT_FOR_CONSOLE if self.config.console else 0)
                    if self.config.trace_file:
                        nursery.start_soon(self._flush_trace)
                async with trio.open_nursery() as conn_nursery:
                    accept_scopes = await self._start_listeners(conn_nursery, securities)
                    nursery.start_soon(self._close_idle_connections)
                    if self.config.admin_listen or self.config.schema_registry or self.config.console:
                        from broker.http.endpoints import serve_endpoints  # HTTP only when asked for

                        self.http_addresses = await serve_endpoints(nursery, self.config, self.broker, self.instruments,
                                                                    self.render_metrics, self._inspect)
                    if cluster is not None:
                        # Registered once the listeners are bound: the registration names their ports.
                        await nursery.start(cluster.run, self._registered_endpoints())
                    task_status.started(self)
                    nursery.start_soon(self._start_coordinators)
                    await self._shutdown.wait()
                    if cluster is not None:
                        with trio.move_on_after(self.config.shutdown_timeout_ms / 1000 * 3):
                            await cluster.controlled_shutdown()
                    log.info("shutting down: no new connections, finishing in-flight requests")
                    for scope in accept_scopes:
                        scope.cancel()
                    for conn in list(self._connections):
                        conn.read_scope.cancel()
                    conn_nursery.cancel_scope.deadline = trio.current_time() + \
                        self.config.shutdown_timeout_ms / 1000
                nursery.cancel_scope.cancel()
        finally:
            if cluster is not None:
                await cluster.aclose()
            if self.tracer is not None:
                self.tracer.close()
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(self.broker.close)
            self.stopped.set()
            log.info("broker stopped")

    def _registered_endpoints(self) -> list:
        """The endpoints this broker registers in ZooKeeper: each listener's advertised address, by name."""
        from zk.znodes import Endpoint as ZkEndpoint

        out = []
        seen = set()
        for endpoint in self.broker.endpoints:
            listener = self.config.listeners[endpoint.listener]
            if listener.name in seen:
                continue  # one address per listener name (localhost binds IPv4 and IPv6 on one port)
            seen.add(listener.name)
            protocol = self.config.listener_protocol(listener)  # listener.security.protocol.map
            out.append(ZkEndpoint(listener.name, endpoint.host, endpoint.port, protocol))
        return out

    async def _flush_trace(self) -> None:
        assert self.tracer is not None
        while True:
            await trio.sleep(0.5)
            self.tracer.flush()

    async def _close_idle_connections(self) -> None:
        """connections.max.idle.ms: an idle connection is closed (Kafka's Selector looks at the least recently
        active one at each poll; here a look at all of them a few times per idle period, at most each second,
        which spares the connections a timer per read)."""
        idle_s = self.config.connections_max_idle_ms / 1000
        if idle_s <= 0:
            return
        while True:
            await trio.sleep(min(idle_s / 4, 1.0))
            now = trio.current_time()
            for conn in list(self._connections):
                if conn.idle(now, idle_s):
                    conn.close_idle()

    async def _start_coordinators(self) -> None:
        """The group and transaction coordinators start with the first request that needs them, or here,
        shortly after the listeners (a transaction left in Prepare* by a crash is completed then); the
        remaining handler modules are loaded then too."""
        await trio.sleep(COORDINATOR_START_DELAY_S)
        assert self.broker is not None
        self.broker.start_coordinators()
        load_handlers()

    def _listener_securities(self) -> list[object]:
        """Each listener's ListenerSecurity (None for PLAINTEXT: then nothing of broker.security's TLS and SASL
        is imported)."""
        out: list[object] = []
        for listener in self.config.listeners:
            protocol = self.config.listener_protocol(listener)
            if protocol == "PLAINTEXT":
                out.append(None)
                continue
            from broker.security.listener_security import (
                SecurityProtocol,
                build_listener_security,
                scram_lookup_from,
            )

            assert self.broker is not None
            out.append(build_listener_security(listener.name, SecurityProtocol(protocol), self.config.security,
                                               scram_lookup=scram_lookup_from(self.broker.scram_credentials),
                                               now_ms=self.broker.now_ms,
                                               token_lookup=self._token_lookup))
        return out

    def _token_lookup(self, token_id: str, mechanism: str) -> Any:
        """A delegation token's SCRAM credentials (its service loads when a client first logs in with one)."""
        assert self.broker is not None
        return self.broker.delegation_tokens.scram_keys(token_id, mechanism)

    async def _start_listeners(self, conn_nursery: trio.Nursery, securities: list[object]) -> list[trio.CancelScope]:
        scopes = []
        for index, listener in enumerate(self.config.listeners):
            sockets = await open_listeners(listener)
            for sock_listener in sockets:
                host, port = sock_listener.socket.getsockname()[:2]
                self.listen_addresses.append((host, port))
                bound_host = advertised_host(listener.host, host)
                endpoint = Endpoint(listener.advertised_host or bound_host, listener.advertised_port or port,
                                    index, bound_host, port, securities[index])
                self.broker.endpoints.append(endpoint)
                scope = trio.CancelScope()
                scopes.append(scope)
                conn_nursery.start_soon(self._accept_loop, sock_listener, endpoint, conn_nursery, scope)
                log.info("listening on %s:%d (%s, %s, advertised as %s:%d)", host, port, listener.name,
                         self.config.listener_protocol(listener), endpoint.host, endpoint.port)
        return scopes

    async def _accept_loop(self, listener: trio.SocketListener, endpoint: Endpoint,
                           conn_nursery: trio.Nursery, scope: trio.CancelScope) -> None:
        with scope:
            async with listener:
                while True:
                    try:
                        stream = await listener.accept()
                    except OSError as exc:  # EMFILE and friends: back off rather than spin
                        log.error("accept failed: %s", exc)
                        await trio.sleep(0.1)
                        continue
                    try:
                        stream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    except OSError:
                        pass
                    conn_nursery.start_soon(self._serve_connection, stream, endpoint)

    async def _serve_connection(self, stream: trio.SocketStream, endpoint: Endpoint) -> None:
        security = endpoint.security
        assert self.broker is not None  # connections are accepted once it is built
        if security is not None and security.ssl_context is not None:
            self._handshakes += 1
            try:
                accepted = await self._tls_handshake(stream, security)
            finally:
                self._handshakes -= 1
            if accepted is None:
                return
            ssl_stream, peer, principal = accepted
            conn: Connection = TlsConnection(self.broker, self.instruments, ssl_stream, endpoint, peer=peer,
                                             principal=principal)
        else:
            conn = Connection(self.broker, self.instruments, stream, endpoint)
        self._connections.add(conn)
        try:
            await conn.run()
        finally:
            self._connections.discard(conn)

    async def _tls_handshake(self, stream: trio.SocketStream, security: Any) -> tuple[trio.SSLStream, str, str] | None:
        """The TLS handshake of a new connection, bounded by ssl.handshake.timeout.ms; the principal of its
        client certificate (ssl.principal.mapping.rules), or ANONYMOUS. None: closed, with the reason logged."""
        from broker.security.principal import NoMatchingRule, ssl_principal

        peer = peer_name(stream)
        ssl_stream = trio.SSLStream(stream, security.ssl_context, server_side=True)
        reason = None
        with trio.move_on_after(security.handshake_timeout_ms / 1000) as timeout:
            try:
                await ssl_stream.do_handshake()
            except trio.BrokenResourceError as exc:  # a plaintext client, a bad or untrusted certificate
                reason = f"TLS handshake failed: {exc.__cause__ or exc}"
        if timeout.cancelled_caught:
            reason = f"TLS handshake not finished within {security.handshake_timeout_ms} ms"
        principal = ""
        if reason is None:
            try:
                principal = ssl_principal(ssl_stream.getpeercert(binary_form=True), security.principal_mapper)
            except (NoMatchingRule, ValueError) as exc:
                reason = f"no principal for the client certificate: {exc}"
        if reason is not None:
            log.warning("closing %s on listener %s: %s", peer, security.name, reason)
            self.metrics.authentication(security.name, None, "failed", None)
            await trio.aclose_forcefully(ssl_stream)
            return None
        if security.sasl is None:
            self.metrics.authentication(security.name, None, "ok", principal)
        return ssl_stream, peer, principal
