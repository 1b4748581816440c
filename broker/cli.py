"""Command line: `minibroker` / `python -m broker`."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import logging
import os
import signal
import sys
from pathlib import Path

from broker.config import kafka_versions
from broker.config.options import (
    CONSOLE_PORT,
    OPTIONS,
    BrokerConfig,
    Listener,
    advertise,
    parse_host_port,
    parse_listener,
)

# The advertised addresses when no --advertised is given, comma-separated: how a container image says what a
# client outside it reaches (the Dockerfile sets localhost:9092, the port `docker run -p 9092:9092` publishes),
# as KAFKA_ADVERTISED_LISTENERS does for Kafka's image.
ADVERTISED_ENV = "MINIBROKER_ADVERTISED"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="minibroker",
        description="A Kafka-wire-compatible broker. Options named like Kafka's go through --override.",
        epilog="Kafka-named options for --override: " + ", ".join(o.kafka_name for o in OPTIONS),
    )
    p.add_argument("--listen", action="append", metavar="[NAME://]HOST:PORT",
                   help="address to accept clients on (repeatable; default 127.0.0.1:9092; "
                        "'localhost' binds IPv4 and IPv6); NAME is the listener's name, whose security protocol "
                        "listener.security.protocol.map gives (PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL name "
                        "themselves; no name: PLAINTEXT)")
    p.add_argument("--advertised", action="append", metavar="[NAME://]HOST:PORT",
                   help="address Metadata gives clients for the listener of that NAME, or without a name for "
                        "the matching --listen in order (repeatable; for containers and NAT; default: "
                        f"${ADVERTISED_ENV}, comma-separated, else the --listen addresses)")
    p.add_argument("--port", type=int, help="port of the first listener (shorthand)")
    p.add_argument("--data-dir", type=Path, help="directory for logs and state (default ./data)")
    p.add_argument("--broker-id", type=int, help="this broker's node id (default 0)")
    p.add_argument("--zookeeper", metavar="HOST:PORT[/chroot]",
                   help="run as one broker of a cluster in Kafka's ZooKeeper mode on this ZooKeeper (default: a single "
                        "broker, its state in the data dir)")
    p.add_argument("--fsync", choices=("none", "grouped", "always"),
                   help="acks=all durability: grouped fdatasync per partition (default), one per request, "
                        "or none (the OS flushes)")
    p.add_argument("--num-partitions", type=int, help="partitions of auto-created topics (default 1)")
    p.add_argument("--no-auto-create-topics", action="store_true",
                   help="do not create unknown topics on Metadata/Produce")
    p.add_argument("--override", "-o", action="append", default=[], metavar="NAME=VALUE",
                   help="set a Kafka-named option, e.g. -o log.retention.ms=60000 (repeatable)")
    p.add_argument("--admin-listen", metavar="HOST:PORT",
                   help="serve the admin HTTP endpoint (fault rules, introspection, Prometheus metrics) here; off by "
                        "default")
    p.add_argument("--schema-registry", metavar="HOST:PORT",
                   help="serve a schema registry (Confluent Schema Registry's REST API, schemas stored in the "
                        "_schemas topic) here; off by default")
    p.add_argument("--console", metavar="HOST:PORT",
                   help="serve the web console (topics, messages, groups and their lag, transactions, the live "
                        "protocol trace) here (port default 8080); off by default. Bound to anything but loopback "
                        "it needs --console-password-file")
    p.add_argument("--console-password-file", metavar="FILE",
                   help="the console's password (the file's first line): asked at a login form (or HTTP Basic)")
    p.add_argument("--trace", metavar="FILE",
                   help="write a decoded protocol trace (one JSON line per request and response) to FILE")
    p.add_argument("--kafka-version", metavar="RELEASE",
                   help=f"look like this Kafka release: its API versions, features and configs "
                        f"({', '.join(kafka_versions.releases())}; default {kafka_versions.DEFAULT})")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    p.add_argument("--log-format", default="text", choices=("text", "json"),
                   help="json: one JSON object per line (ts, level, logger, message, extra fields)")
    return p


def config_from_args(args: argparse.Namespace) -> BrokerConfig:
    config = BrokerConfig()
    if args.listen:
        listeners = []
        for text in args.listen:
            name, host, port = parse_listener(text, default_port=9092)
            listeners.append(Listener(host, port, name=name or "PLAINTEXT"))
        config.listeners = listeners
    for item in args.override:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--override takes NAME=VALUE, not {item!r}")
        config.set_option(name.strip(), value, validate=False)
    if args.advertised:
        config.listeners = advertise(config.listeners, args.advertised)
    elif os.environ.get(ADVERTISED_ENV, "").strip() and not any(
            item.partition("=")[0].strip() == "advertised.listeners" for item in args.override):
        addresses = [a.strip() for a in os.environ[ADVERTISED_ENV].split(",") if a.strip()]
        try:
            config.listeners = advertise(config.listeners, addresses)
        except ValueError as exc:
            raise ValueError(f"{ADVERTISED_ENV}={os.environ[ADVERTISED_ENV]!r}: {exc}") from None
    if args.port is not None:
        first = config.listeners[0]
        config.listeners[0] = dataclasses.replace(first, port=args.port,
                                                  advertised_port=first.advertised_port if first.advertised_host
                                                  else None)
    if args.data_dir is not None:
        config.data_dir = args.data_dir
    if args.broker_id is not None:
        config.broker_id = args.broker_id
    if args.zookeeper is not None:
        config.zookeeper_connect = args.zookeeper
    if args.fsync is not None:
        config.fsync = args.fsync
    if args.num_partitions is not None:
        config.num_partitions = args.num_partitions
    if args.no_auto_create_topics:
        config.auto_create_topics = False
    if args.trace is not None:
        config.trace_file = args.trace
    if args.kafka_version is not None:
        config.kafka_version = args.kafka_version
    if args.admin_listen is not None:
        parse_host_port(args.admin_listen, default_port=0)  # refuse a malformed address now
        config.admin_listen = args.admin_listen
    if args.schema_registry is not None:
        parse_host_port(args.schema_registry, default_port=8081)  # refuse a malformed address now
        config.schema_registry = args.schema_registry
    if args.console is not None:
        parse_host_port(args.console, default_port=CONSOLE_PORT)  # refuse a malformed address now
        config.console = args.console
    if args.console_password_file is not None:
        config.console_password_file = str(args.console_password_file)
    config.validate()
    return config


async def _serve(config: BrokerConfig) -> None:
    import trio

    from broker.server.server import Server

    server = Server(config)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            # What startup allocated lives as long as the process: kept out of every later collection.
            gc.freeze()
            gc.enable()
            addresses = ", ".join(f"{h}:{p}" for h, p in server.listen_addresses)
            extra = f", broker id {config.broker_id}" if config.cluster_mode else ""
            for name, (host, port) in server.http_addresses.items():
                extra += f", {name} http://{host}:{port}"
            print(f"minibroker ready on {addresses} (data dir {config.data_dir}{extra})", file=sys.stderr, flush=True)

            async def watch_signals() -> None:
                async for signum in signals:
                    logging.getLogger("broker").info("received %s", signal.Signals(signum).name)
                    server.shutdown()
                    return

            nursery.start_soon(watch_signals)
            # When the server finishes (after a signal), stop watching.
            await server.stopped.wait()
            nursery.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> int:
    gc.disable()  # until the listeners are up (_serve): startup allocates nothing short-lived to collect
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    try:
        config = config_from_args(args)
    except ValueError as exc:
        print(f"minibroker: {exc}", file=sys.stderr)
        return 2
    import trio

    try:
        trio.run(_serve, config)
    except BaseException as exc:  # noqa: BLE001 - a reason to refuse to start is told, not traced
        reason = _startup_error(exc)
        if reason is None:
            raise
        print(f"minibroker: {reason}", file=sys.stderr)
        return 1
    return 0


def configure_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler()
    if fmt == "json":
        from broker.log_format import JsonFormatter  # its json and datetime only when asked for (startup time)

        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    # kazoo logs every ZooKeeper packet at DEBUG: the broker's own debug lines would drown in them.
    logging.getLogger("kazoo").setLevel(max(logging.INFO, logging.getLevelName(level)))


def _startup_error(exc: BaseException) -> str | None:
    """The message of an error that stops a broker from starting (a port in use, a broker id another live broker
    holds, ZooKeeper out of reach, a data dir of another cluster), looked for inside trio's exception groups."""
    from zk.errors import ZooKeeperError

    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _startup_error(inner)
            if found is not None:
                return found
        return None
    if isinstance(exc, (OSError, ValueError, ZooKeeperError)):
        return str(exc)
    return None
