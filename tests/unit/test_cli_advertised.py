"""MINIBROKER_ADVERTISED: the advertised addresses when the command line gives none (the image's default for
`docker run -p 9092:9092`), as Kafka's image takes KAFKA_ADVERTISED_LISTENERS."""

from __future__ import annotations

import pytest

from broker.cli import ADVERTISED_ENV, build_parser, config_from_args


def listeners(monkeypatch: pytest.MonkeyPatch, env: str | None, *args: str) -> list[tuple]:
    if env is None:
        monkeypatch.delenv(ADVERTISED_ENV, raising=False)
    else:
        monkeypatch.setenv(ADVERTISED_ENV, env)
    config = config_from_args(build_parser().parse_args(list(args)))
    return [(li.name, li.port, li.advertised_host, li.advertised_port) for li in config.listeners]


def test_without_the_variable_a_listener_advertises_itself(monkeypatch) -> None:
    assert listeners(monkeypatch, None, "--listen", "0.0.0.0:9092") == [("PLAINTEXT", 9092, None, None)]
    assert listeners(monkeypatch, " ", "--listen", "0.0.0.0:9092") == [("PLAINTEXT", 9092, None, None)]


def test_the_variable_advertises_the_listeners_in_order_or_by_name(monkeypatch) -> None:
    assert listeners(monkeypatch, "localhost:9092", "--listen", "0.0.0.0:9092") == \
        [("PLAINTEXT", 9092, "localhost", 9092)]
    assert listeners(monkeypatch, "EXTERNAL://broker.example:19092, INTERNAL://broker:29092",
                     "--listen", "INTERNAL://0.0.0.0:29092", "--listen", "EXTERNAL://0.0.0.0:9092",
                     "-o", "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT") == \
        [("INTERNAL", 29092, "broker", 29092), ("EXTERNAL", 9092, "broker.example", 19092)]


def test_the_command_line_wins(monkeypatch) -> None:
    assert listeners(monkeypatch, "localhost:9092", "--listen", "0.0.0.0:9092", "--advertised", "h:1") == \
        [("PLAINTEXT", 9092, "h", 1)]
    assert listeners(monkeypatch, "localhost:9092", "--listen", "0.0.0.0:9092",
                     "-o", "advertised.listeners=PLAINTEXT://h:2") == [("PLAINTEXT", 9092, "h", 2)]


def test_a_bad_value_names_the_variable(monkeypatch) -> None:
    with pytest.raises(ValueError, match=f"{ADVERTISED_ENV}='a:1,b:2': more advertised addresses than listeners"):
        listeners(monkeypatch, "a:1,b:2", "--listen", "0.0.0.0:9092")
    with pytest.raises(ValueError, match=ADVERTISED_ENV):
        listeners(monkeypatch, "NOPE://a:1", "--listen", "0.0.0.0:9092")
