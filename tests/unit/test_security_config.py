"""Listener names, their security protocols and the settings of secured listeners in the broker's config and
command line; the inter-broker client side chosen from them."""

from __future__ import annotations

import pytest

from broker.cli import build_parser, config_from_args
from broker.config.options import BrokerConfig, Listener, parse_listener, parse_protocol_map
from broker.security.client_side import inter_broker_security
from broker.security.listener_security import SecurityProtocol

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="pw" '
        'user_broker="pw";')


def config(*argv: str) -> BrokerConfig:
    return config_from_args(build_parser().parse_args(list(argv)))


def test_listener_forms() -> None:
    assert parse_listener("SASL_SSL://0.0.0.0:9093") == ("SASL_SSL", "0.0.0.0", 9093)
    assert parse_listener("internal://:9094") == ("INTERNAL", "", 9094)
    assert parse_listener("127.0.0.1:9092") == (None, "127.0.0.1", 9092)
    with pytest.raises(ValueError):
        parse_listener("BAD-NAME://h:1")


def test_protocol_map() -> None:
    assert parse_protocol_map("INTERNAL:SASL_SSL, external:ssl") == {"INTERNAL": "SASL_SSL", "EXTERNAL": "SSL"}
    for bad in ("INTERNAL", "INTERNAL:TLS"):
        with pytest.raises(ValueError):
            parse_protocol_map(bad)


def test_command_line_listeners_and_advertised_addresses() -> None:
    cfg = config("--listen", "PLAINTEXT://0.0.0.0:9092", "--listen", "SASL_SSL://0.0.0.0:9093",
                 "--advertised", "localhost:9092", "--advertised", "SASL_SSL://broker.example:19093")
    assert cfg.listeners == [Listener("0.0.0.0", 9092, "localhost", 9092, "PLAINTEXT"),
                             Listener("0.0.0.0", 9093, "broker.example", 19093, "SASL_SSL")]
    assert [cfg.listener_protocol(li) for li in cfg.listeners] == ["PLAINTEXT", "SASL_SSL"]
    # Named advertised addresses go to the listener of that name, unnamed ones by position; unnamed listeners
    # (today's form) are PLAINTEXT.
    plain = config("--listen", "127.0.0.1:9092", "--advertised", "h:1")
    assert plain.listeners == [Listener("127.0.0.1", 9092, "h", 1, "PLAINTEXT")]


def test_named_listeners_need_a_protocol_and_any_order_of_settings() -> None:
    with pytest.raises(ValueError, match="no security protocol"):
        config("--listen", "INTERNAL://:9094")
    cfg = config("--listen", "INTERNAL://:9094", "--listen", "EXTERNAL://:9095",
                 "-o", "inter.broker.listener.name=INTERNAL",
                 "-o", "listener.security.protocol.map=INTERNAL:SASL_PLAINTEXT,EXTERNAL:SSL",
                 "-o", "listener.name.internal.plain.sasl.jaas.config=" + JAAS,
                 "-o", "ssl.keystore.location=/etc/kafka/broker.pem")
    assert cfg.inter_broker_listener().name == "INTERNAL"
    assert cfg.security == {"listener.name.internal.plain.sasl.jaas.config": JAAS,
                            "ssl.keystore.location": "/etc/kafka/broker.pem"}
    with pytest.raises(ValueError, match="not a listener"):
        config("--listen", "INTERNAL://:9094", "-o", "listener.security.protocol.map=INTERNAL:SASL_SSL",
               "-o", "inter.broker.listener.name=OTHER")


def test_kafka_listeners_settings() -> None:
    cfg = BrokerConfig()
    cfg.set_option("listeners", "PLAINTEXT://127.0.0.1:9092,SSL://:9093")
    cfg.set_option("advertised.listeners", "SSL://public:443")
    assert cfg.listeners[1] == Listener("", 9093, "public", 443, "SSL")
    with pytest.raises(ValueError, match="unknown option"):
        cfg.set_option("no.such.option", "1")


def test_inter_broker_client_side() -> None:
    cfg = config("--listen", "INTERNAL://:9094", "-o", "listener.security.protocol.map=INTERNAL:SASL_PLAINTEXT",
                 "-o", "inter.broker.listener.name=INTERNAL", "-o", "listener.name.internal.plain.sasl.jaas.config=" +
                 JAAS)
    security = inter_broker_security(cfg)
    assert (security.listener, security.protocol, security.ssl_context) == ("INTERNAL",
                                                                            SecurityProtocol.SASL_PLAINTEXT, None)
    assert (security.mechanism, security.username, security.password) == ("PLAIN", "broker", "pw")
    assert security.sasl_client().first() == b"\x00broker\x00pw"
    assert inter_broker_security(config()).protocol is SecurityProtocol.PLAINTEXT
