"""A minibroker for tests, from outside: `BrokerThread` runs one in a thread of this process (restart, data
dir, `call` into the broker, introspection, waits, virtual time, fault rules), `BrokerProcess` in a child
process (for SIGKILL and restart tests). Both are usable without pytest; the pytest fixtures
(broker.testkit.plugin) hand out BrokerThreads.

    with BrokerThread(tmp_path) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from broker.config.options import BrokerConfig, Listener


class BrokerThread:
    """A broker running `trio.run` in its own thread of this process, on a kernel-chosen port.

    `fsync` is its log.flush.policy: "none" by default, unlike `python -m broker` (grouped): acks=all is
    answered without waiting for an fdatasync and the data stays in the page cache, as with Kafka's default;
    a test's data is thrown away, and a restart (a clean stop) still finds it all. `fsync="grouped"` (or
    "always") for a test of what an fdatasync guarantees.

    `security="SASL_SSL"` (or SSL, SASL_PLAINTEXT) makes its listener a secured one, with `users` (PLAIN and
    SCRAM users; `{"alice": "secret"}`), a throw-away CA and certificates (broker.testkit.security), and
    `client_auth` none|requested|required for SSL; `kafka_python()`, `confluent()` and `aiokafka()` give the
    clients' settings for it. `security_settings` adds Kafka-named settings (`connections.max.reauth.ms`...).

    `schema_registry=True` (or "HOST:PORT") serves a schema registry beside it: `schema_registry_url`;
    `console=True` (or "HOST:PORT") the web console: `console_url`.
    """

    def __init__(self, data_dir: Path | str, *, security: str | None = None, users: dict[str, str] | None = None,
                 client_auth: str = "none", security_settings: dict[str, str] | None = None,
                 sasl_mechanisms: tuple[str, ...] | None = None, fsync: str = "none", **config: Any) -> None:
        self.data_dir = Path(data_dir)
        for service in ("schema_registry", "console"):
            if config.get(service) is True:
                config[service] = "127.0.0.1:0"
        self._config_changes = {"fsync": fsync, **config}
        self.security: Any = None  # broker.testkit.security.SecurityKit of a secured listener
        self._security_settings = dict(security_settings or {})
        if security is not None and security != "PLAINTEXT":
            from broker.testkit.security import MECHANISMS, SecurityKit

            self.security = SecurityKit(security, users, directory=self.data_dir.parent / f"{self.data_dir.name}-pki",
                                        client_auth=client_auth, mechanisms=sasl_mechanisms or MECHANISMS)
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self._token: Any = None
        self._error: BaseException | None = None
        self.port: int | None = None

    @property
    def bootstrap(self) -> str:
        """"127.0.0.1:PORT": what clients take as bootstrap.servers (the port stays the same across restarts)."""
        if self.port is None:
            raise RuntimeError("broker is not running")
        return f"127.0.0.1:{self.port}"

    def config(self) -> BrokerConfig:
        """The broker's configuration, as the next start() will use it."""
        # Keep the same port across restarts so clients can reconnect to the address they know.
        name = self.security.protocol if self.security is not None else "PLAINTEXT"
        cfg = BrokerConfig(listeners=[Listener("127.0.0.1", self.port or 0, name=name)], data_dir=self.data_dir)
        if self.security is not None:
            cfg.security.update(self.security.broker_settings())
        cfg.security.update(self._security_settings)
        for key, value in self._config_changes.items():
            setattr(cfg, key, value)
        cfg.validate()
        return cfg

    def start(self, timeout: float = 30.0) -> BrokerThread:
        """Start the broker and return once it accepts clients (on the port it had, after a stop)."""
        import trio

        from broker.server.server import Server

        started = threading.Event()
        server = Server(self.config())

        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            async with trio.open_nursery() as nursery:
                await nursery.start(server.run)
                self._server = server
                self.port = server.listen_addresses[0][1]
                started.set()

        def run() -> None:
            try:
                trio.run(main)
            except BaseException as exc:  # reported to the thread that waits in start()
                self._error = exc
            finally:
                started.set()

        self._thread = threading.Thread(target=run, name="minibroker", daemon=True)
        self._thread.start()
        if not started.wait(timeout) or self._error is not None:
            raise RuntimeError(f"minibroker did not start: {self._error!r}")
        self._store_scram_users()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Shut the broker down as SIGTERM would (in-flight requests finish, logs are flushed), and wait."""
        import trio

        if self._thread is None:
            return
        if self._server is not None and self._thread.is_alive():
            try:
                trio.from_thread.run_sync(self._server.shutdown, trio_token=self._token)
            except trio.RunFinishedError:
                pass
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError("minibroker did not stop in time")
        self._thread = None
        self._server = None

    def restart(self) -> None:
        """Stop and start again, on the same port and data dir: what it stored is still there."""
        self.stop()
        self.start()

    # -- secured listeners (broker.testkit.security) ---------------------------------------------------------
    def _store_scram_users(self) -> None:
        """The users' SCRAM credentials, as AlterUserScramCredentials stores them (before any client comes)."""
        from types import SimpleNamespace

        if self.security is None or not self.security.users:
            return
        upsertions = [SimpleNamespace(name=user, mechanism=1 if mechanism == "SCRAM-SHA-256" else 2,
                                      iterations=iterations, salt=salt, salted_password=salted)
                      for user, creds in self.security.scram_credentials().items()
                      for mechanism, (salt, salted, iterations) in creds.items()]
        errors = self.call(lambda broker: broker.scram_credentials.alter([], upsertions))
        if any(errors.values()):
            raise RuntimeError(f"storing the test users' SCRAM credentials failed: {errors}")

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """Every bound (host, port), listener by listener (the first is `bootstrap`'s)."""
        return list(self._require_server().listen_addresses)

    def kafka_python(self, user: str | None = None, **kw: Any) -> dict[str, Any]:
        """kafka-python settings for this broker's listener (security_protocol, ssl_*, sasl_*); `password`,
        `mechanism` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER) and `client_cert` may be given."""
        return {} if self.security is None else self.security.kafka_python(user, **kw)

    def confluent(self, user: str | None = None, **kw: Any) -> dict[str, Any]:
        """confluent-kafka (librdkafka) settings for this broker's listener."""
        return {} if self.security is None else self.security.confluent(user, **kw)

    def aiokafka(self, user: str | None = None, **kw: Any) -> dict[str, Any]:
        """aiokafka settings for this broker's listener."""
        return {} if self.security is None else self.security.aiokafka(user, **kw)

    def principals_seen(self) -> dict[str, int]:
        """{principal: authentications}: who authenticated (SASL, or an SSL client certificate) so far."""
        import trio

        server = self._require_server()
        return trio.from_thread.run_sync(lambda: dict(server.metrics.principals), trio_token=self._token)

    def authentications(self) -> dict[tuple[str, str, str], int]:
        """{(listener, mechanism or "SSL", outcome ok|failed|expired): count} so far."""
        import trio

        server = self._require_server()
        return trio.from_thread.run_sync(lambda: dict(server.metrics.authentications), trio_token=self._token)

    def call(self, fn: Any, *args: Any) -> Any:
        """Run `fn(broker, *args)` in the broker's trio thread (between requests, as a handler would) and
        return its result: for tests that reach into the running broker (broker.app.Broker)."""
        import trio

        if self._server is None:
            raise RuntimeError("broker is not running")
        return trio.from_thread.run_sync(fn, self._server.broker, *args, trio_token=self._token)

    # -- virtual time (broker/clock.py) ---------------------------------------------------------------
    def advance(self, seconds: float) -> int:
        """Move the broker's virtual clock (start it with virtual_time=True) forward; the coordinators'
        timeouts, expiries and retention that fall due run at once. Returns the new time in ms."""
        import trio

        server = self._require_server()
        clock = server.broker.clock
        if not clock.virtual:
            raise RuntimeError("the broker runs on the wall clock: start it with virtual_time=True")

        def step() -> int:
            clock.advance(int(seconds * 1000))
            return clock.now_ms()

        now = trio.from_thread.run_sync(step, trio_token=self._token)
        # Let the woken timers run before the test looks: a round trip through the broker's loop.
        trio.from_thread.run(trio.sleep, 0, trio_token=self._token)
        return now

    # -- introspection (broker/observability/introspect.py) and waits ------------------------------------------
    def topics(self, include_internal: bool = False) -> dict[str, dict[str, Any]]:
        """{topic: {"topic_id", "internal", "partitions": [{"partition", "log_start_offset", "log_end_offset",
        "high_watermark", "last_stable_offset", "size_bytes"}]}}"""
        from broker.observability import introspect

        return self.call(introspect.topics, include_internal)

    def groups(self) -> dict[str, dict[str, Any]]:
        """{group: {"type", "state", "generation", "protocol", "leader", "members": [...],
        "offsets": {"topic-p": n}, "timeline": [{"time_ms", "event"}]}}: the timeline says why each rebalance
        started. KIP-848 groups ("type": "consumer") have "group_epoch", "assignment_epoch", "assignor" and
        members with "member_epoch", "state", "protocol" (the one they speak: "consumer", or "classic" after an
        online upgrade), "assigned", "revoking" and "target" partitions ("topic-p")."""
        from broker.observability import introspect

        return self.call(introspect.groups)

    def share_partitions(self) -> dict[str, dict[str, dict[str, Any]]]:
        """{share group: {"topic-p": {"start_offset", "end_offset", "in_flight": {state: count}}}}: what each
        share group has delivered and acknowledged (KIP-932)."""
        from broker.observability import introspect

        return self.call(introspect.share_partitions)

    def transactions(self) -> dict[str, dict[str, Any]]:
        """{transactional id: {"state", "producer_id", "producer_epoch", "partitions", "timeout_ms", ...}}"""
        from broker.observability import introspect

        return self.call(introspect.transactions)

    def fetch_sessions(self) -> list[dict[str, Any]]:
        """The fetch sessions (KIP-227) the broker keeps: [{"session_id", "epoch" (the next incremental fetch's),
        "partitions", "privileged" (a follower's), "uses_topic_ids", "created_ms", "last_used_ms"}]."""
        from broker.observability import introspect

        return self.call(introspect.fetch_sessions)

    def producers(self, topic: str, partition: int) -> list[dict[str, Any]]:
        """The idempotent and transactional producers the partition knows: [{"producer_id", "epoch",
        "last_sequence", "last_offset", "last_timestamp", "open_transaction_first_offset"}]."""
        from broker.observability import introspect

        return self.call(introspect.producers, topic, partition)

    def zookeeper_session(self) -> dict[str, Any]:
        """As BrokerProcess.zookeeper_session: the ZooKeeper session of a cluster broker (empty otherwise)."""
        from broker.observability import introspect

        return self.call(introspect.zookeeper)

    def wait_group_stable(self, group: str, timeout: float = 30.0, members: int | None = None) -> dict[str, Any]:
        """Wait until the group is Stable (with `members` members, if given); returns its description."""
        return self.wait_until(lambda: self._stable(group, members), timeout, f"group {group} stable")

    def _stable(self, group: str, members: int | None) -> dict[str, Any] | None:
        found = self.groups().get(group)
        if found and found["state"] == "Stable" and (members is None or len(found["members"]) == members):
            return found
        return None

    def wait_committed(self, group: str, topic: str, partition: int, offset: int, timeout: float = 30.0) -> int:
        """Wait until the group has committed at least `offset` for the partition; returns the offset."""
        key = f"{topic}-{partition}"

        def committed() -> int | None:
            value = self.groups().get(group, {}).get("offsets", {}).get(key)
            return value if value is not None and value >= offset else None

        return self.wait_until(committed, timeout, f"group {group} to commit {offset} on {key}")

    @staticmethod
    def wait_until(check: Any, timeout: float = 30.0, what: str = "a condition") -> Any:
        """Call `check` until it returns something other than None (returned), for up to `timeout` s."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            result = check()
            if result is not None:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(f"waited {timeout} s for {what}")
            time.sleep(0.02)

    def reset(self) -> None:
        """Drop every topic, group, transaction and fault rule: the broker restarts on an empty data dir
        (same port, a fraction of a second), so a session-scoped broker serves independent tests.
        Connected clients see a disconnection."""
        import shutil

        self.stop()
        for entry in self.data_dir.iterdir():
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        self.start()

    # -- fault injection (broker/observability/faults.py); each returns the rule's id ------------------------------
    def inject(self, action: str, **rule: Any) -> int:
        """Add a fault rule: action is one of broker.observability.faults.FaultAction's values; `rule` takes api, error,
        count (None: every match), topic, partition, client_id, delay_ms, duration_ms."""
        import trio

        server = self._require_server()

        def add() -> int:
            return server.faults.add(action, now_ms=server.broker.now_ms(), **rule).id

        return trio.from_thread.run_sync(add, trio_token=self._token)

    def inject_error(self, api: str | int, error: str | int, count: int | None = 1, **match: Any) -> int:
        """The next `count` requests of `api` (e.g. "PRODUCE"), optionally only for topic/partition/client_id,
        are answered with `error` (e.g. "NOT_LEADER_OR_FOLLOWER") without being run."""
        return self.inject("error", api=api, error=error, count=count, **match)

    def delay(self, api: str | int, ms: int, count: int | None = 1, **match: Any) -> int:
        """The next `count` requests of `api` (None: all) are answered `ms` later."""
        return self.inject("delay", api=api, delay_ms=ms, count=count, **match)

    def drop_connection(self, api: str | int, when: str = "after_response", count: int | None = 1,
                        **match: Any) -> int:
        """Close the connection on the request (`when="request"`, not run), instead of its response
        (`"response"`: run, not answered) or after its response (`"after_response"`)."""
        actions = {"request": "drop_request", "response": "drop_response", "after_response": "drop_after_response"}
        return self.inject(actions[when], api=api, count=count, **match)

    def drop_produce_response(self, count: int = 1, **match: Any) -> int:
        """The next Produce is appended, but the connection closes instead of answering: the client retries."""
        return self.drop_connection("PRODUCE", "response", count, **match)

    def leader_unavailable(self, topic: str, partition: int, seconds: float) -> int:
        """For `seconds`, the partition has no leader: Metadata says LEADER_NOT_AVAILABLE, Produce, Fetch and
        ListOffsets get NOT_LEADER_OR_FOLLOWER."""
        return self.inject("leader_unavailable", topic=topic, partition=partition,
                           duration_ms=int(seconds * 1000))

    def faults(self) -> list[dict[str, Any]]:
        """The fault rules left, each with its id, what it matches, how often it matched and what is left."""
        import trio

        server = self._require_server()
        return trio.from_thread.run_sync(lambda: server.faults.describe(server.broker.now_ms()),
                                         trio_token=self._token)

    def remove_fault(self, rule_id: int) -> bool:
        """Remove one rule; False if there was none of that id."""
        import trio

        server = self._require_server()
        return trio.from_thread.run_sync(server.faults.remove, rule_id, trio_token=self._token)

    def clear_faults(self) -> None:
        """Remove every fault rule."""
        import trio

        server = self._require_server()
        trio.from_thread.run_sync(server.faults.clear, trio_token=self._token)

    @property
    def trace_file(self) -> str | None:
        """The protocol trace's path (JSON lines), or None when the broker does not trace."""
        return self._config_changes.get("trace_file")

    def flush_trace(self) -> None:
        """Write out the buffered trace lines (they are flushed every half second anyway)."""
        import trio

        server = self._server
        if server is not None and server.tracer is not None:
            trio.from_thread.run_sync(server.tracer.flush, trio_token=self._token)

    @property
    def admin_url(self) -> str:
        """http://HOST:PORT of the admin endpoint (start the broker with admin_listen="127.0.0.1:0")."""
        return self._http_url("admin", "the broker runs without an admin endpoint (admin_listen)")

    @property
    def schema_registry_url(self) -> str:
        """http://HOST:PORT of its schema registry (start the broker with schema_registry=True)."""
        return self._http_url("schema-registry", "the broker runs without a schema registry (schema_registry=True)")

    @property
    def console_url(self) -> str:
        """http://HOST:PORT of its web console (start the broker with console=True)."""
        return self._http_url("console", "the broker runs without a console (console=True)")

    def _http_url(self, service: str, missing: str) -> str:
        address = self._require_server().http_addresses.get(service)
        if address is None:
            raise RuntimeError(missing)
        host, port = address
        return f"http://{host}:{port}"

    def _require_server(self) -> Any:
        if self._server is None:
            raise RuntimeError("broker is not running")
        return self._server

    def open_connections(self) -> int:
        """Client connections the broker serves now: a test that closed its clients can wait for 0."""
        import trio

        if self._server is None:
            raise RuntimeError("broker is not running")
        server = self._server
        return trio.from_thread.run_sync(lambda: server.connection_count, trio_token=self._token)

    def __enter__(self) -> BrokerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_READY = re.compile(r"minibroker ready on (\S+?):(\d+)")
_ADMIN = re.compile(r"admin (http://[^\s,)]+)")
_SCHEMA_REGISTRY = re.compile(r"schema-registry (http://[^\s,)]+)")
_CONSOLE = re.compile(r"console (http://[^\s,)]+)")


class BrokerProcess:
    """`python -m broker` in a child process: for SIGKILL, SIGSTOP and restart tests. Started with
    `--admin-listen`, its fault rules and introspection are reachable as on a BrokerThread (over HTTP)."""

    def __init__(self, data_dir: Path | str, *extra_args: str, port: int = 0, host: str = "127.0.0.1",
                 command_prefix: tuple[str, ...] = ()) -> None:
        """`extra_args`: more options of `python -m broker` ("--fsync", "grouped", "--admin-listen",
        "127.0.0.1:0", ...); `port`: 0 for a free one; `host`: the address it listens on (and advertises);
        `command_prefix`: what runs the command (`nsenter --net=...` to start it in a network namespace), a
        program that execs it, so that the process started is the broker's."""
        self.data_dir = Path(data_dir)
        self.extra_args = list(extra_args)
        self.port = port
        self.host = host
        self.command_prefix = tuple(command_prefix)
        self.proc: subprocess.Popen[str] | None = None
        self.paused = False
        self.log_lines: list[str] = []
        self.admin_url: str | None = None
        self.schema_registry_url: str | None = None  # started with --schema-registry
        self.console_url: str | None = None  # started with --console

    @property
    def bootstrap(self) -> str:
        """"HOST:PORT" (the port is known once started, and kept across restarts)."""
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        """Start `python -m broker` and return once it prints that it is ready."""
        from broker.testkit.zookeeper import die_with_parent

        cmd = [*self.command_prefix, sys.executable, "-m", "broker", "--listen", f"{self.host}:{self.port}",
               "--data-dir", str(self.data_dir), *self.extra_args]
        # Started from the main thread, it dies with the test run (a run killed by a timeout leaves no broker).
        self.proc = subprocess.Popen(
            cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
            preexec_fn=die_with_parent if threading.current_thread() is threading.main_thread() else None)
        self.paused = False
        ready = threading.Event()

        def pump() -> None:
            assert self.proc is not None and self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log_lines.append(line)
                m = _READY.search(line)
                if m and not ready.is_set():
                    self.port = int(m.group(2))
                    admin = _ADMIN.search(line)
                    self.admin_url = admin.group(1) if admin else None
                    registry = _SCHEMA_REGISTRY.search(line)
                    self.schema_registry_url = registry.group(1) if registry else None
                    console = _CONSOLE.search(line)
                    self.console_url = console.group(1) if console else None
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(timeout) or self.proc.poll() is not None:
            raise RuntimeError("minibroker process did not start:\n" + "".join(self.log_lines[-30:]))
        return self

    def kill(self) -> None:
        """SIGKILL, and wait for the process to end: nothing is flushed, as after a crash."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)
            self.paused = False

    def pause(self) -> None:
        """SIGSTOP: the broker freezes (a long GC pause, a stalled VM) with its connections open; resume()."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        """SIGCONT: it runs on from where it was, unaware of the time that passed."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)
            self.paused = False

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (a clean shutdown), and wait; returns the exit status."""
        if self.proc is None:
            return 0
        if self.paused:
            self.resume()
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    @property
    def running(self) -> bool:
        """Whether the process is alive."""
        return self.proc is not None and self.proc.poll() is None

    # -- fault rules and introspection, through the admin endpoint (start with --admin-listen) ------------
    def _admin(self, method: str, path: str, body: Any = None) -> Any:
        import json
        import urllib.request

        if self.admin_url is None:
            raise RuntimeError("the broker runs without an admin endpoint (--admin-listen)")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.admin_url + path, data=data, method=method)
        with urllib.request.urlopen(request, timeout=30) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def inject(self, action: str, **rule: Any) -> int:
        """A fault rule, as BrokerThread.inject; returns its id."""
        return self._admin("POST", "/faults", {"action": action, **rule})["id"]

    def inject_error(self, api: str | int, error: str | int, count: int | None = 1, **match: Any) -> int:
        """As BrokerThread.inject_error."""
        return self.inject("error", api=api, error=error, count=count, **match)

    def faults(self) -> list[dict[str, Any]]:
        """As BrokerThread.faults."""
        return self._admin("GET", "/faults")

    def clear_faults(self) -> None:
        """As BrokerThread.clear_faults."""
        self._admin("DELETE", "/faults")

    def topics(self, include_internal: bool = False) -> dict[str, dict[str, Any]]:
        """As BrokerThread.topics."""
        return self._admin("GET", "/topics" + ("?internal=true" if include_internal else ""))

    def groups(self) -> dict[str, dict[str, Any]]:
        """As BrokerThread.groups."""
        return self._admin("GET", "/groups")

    def transactions(self) -> dict[str, dict[str, Any]]:
        """As BrokerThread.transactions."""
        return self._admin("GET", "/transactions")

    def producers(self, topic: str, partition: int) -> list[dict[str, Any]]:
        """As BrokerThread.producers."""
        return self._admin("GET", f"/producers/{topic}/{partition}")

    def zookeeper_session(self) -> dict[str, Any]:
        """{"session_id", "session_password" (hex), "connected", "broker_epoch", "controller"} of a cluster
        broker's ZooKeeper session; empty for a single broker."""
        return self._admin("GET", "/zookeeper")
