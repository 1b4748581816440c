"""The security page's snippets (docs/running/security.md, "Trying it out"), run: the `make run ARGS=...`
SASL_SSL command line (with `make certs`' files) starts a broker that the page's client settings of
kafka-python, confluent-kafka and aiokafka produce to; the compose file's secured broker takes its command
line."""

from __future__ import annotations

import asyncio
import re
import shlex
from pathlib import Path

import pytest

from broker.cli import build_parser, config_from_args
from broker.testkit import BrokerThread
from broker.testkit.security import main as make_certs
from tests.compose_file import resolved

REPO = Path(__file__).resolve().parents[2]
DOCS = (REPO / "docs" / "running" / "security.md").read_text()


def make_run_args(text: str) -> list[str]:
    match = re.search(r'^make run ARGS="(.*)"$', text, re.M)
    assert match, "no `make run ARGS=...` example"
    return shlex.split(match.group(1))


def client_rows() -> dict[str, str]:
    rows = re.findall(r"^\| (kafka-python|confluent-kafka|aiokafka) \| `(.*)` \|$", DOCS, re.M)
    assert len(rows) == 3
    return dict(rows)


@pytest.fixture
def certs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """What `make certs` and the echo before `make run` leave, in a working directory of their own."""
    monkeypatch.chdir(tmp_path)
    assert "make certs" in DOCS and "echo 'alice=alice-secret' > certs/users.properties" in DOCS
    make_certs(["certs", "--host", "localhost", "--host", "127.0.0.1", "--user", "alice"])
    (tmp_path / "certs" / "users.properties").write_text("alice=alice-secret\n")
    return tmp_path


def test_make_run_example_serves_the_readme_client_settings(certs: Path) -> None:
    config = config_from_args(build_parser().parse_args(make_run_args(DOCS)))
    [listener] = config.listeners
    assert (listener.name, config.listener_protocol(listener)) == ("SASL_SSL", "SASL_SSL")
    listener = listener.__class__(listener.host, 0, name=listener.name)  # a free port for the test
    with BrokerThread(certs / "data", listeners=[listener], security_settings=config.security) as broker:
        rows = client_rows()
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, **eval(f"dict({rows['kafka-python']})"))
        producer.send("docs", b"kafka-python").get(timeout=30)
        producer.close()

        from confluent_kafka import Producer

        conf = eval("{" + rows["confluent-kafka"] + "}")
        confluent = Producer({"bootstrap.servers": broker.bootstrap, **conf})
        confluent.produce("docs", b"confluent")
        assert confluent.flush(30) == 0

        from aiokafka import AIOKafkaProducer
        from aiokafka.helpers import create_ssl_context

        async def aiokafka_send() -> None:
            settings = eval(f"dict({rows['aiokafka']})", {"create_ssl_context": create_ssl_context})
            aio = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, **settings)
            await aio.start()
            try:
                await aio.send_and_wait("docs", b"aiokafka")
            finally:
                await aio.stop()

        asyncio.run(aiokafka_send())
        assert broker.principals_seen().keys() == {"User:alice"}
        assert broker.topics()["docs"]["partitions"][0]["log_end_offset"] == 3


def test_compose_secure_broker_command_line(certs: Path) -> None:
    service = resolved()["services"]["broker-secure"]
    args = [str(a).replace("/certs/", str(certs / "certs") + "/") for a in service["command"]]
    config = config_from_args(build_parser().parse_args(args))
    assert [(li.name, li.port, li.advertised_host) for li in config.listeners] == [("SASL_SSL", 9093, "localhost")]
    assert service["ports"] == ["127.0.0.1:9093:9093/tcp"]
    assert any(v.endswith(":/certs:ro") for v in service["volumes"])
    from broker.security.listener_security import SecurityProtocol, build_listener_security

    security = build_listener_security("SASL_SSL", SecurityProtocol.SASL_SSL, config.security,
                                       scram_lookup=lambda user, mechanism: None, now_ms=lambda: 0)
    assert security.ssl_context is not None and security.sasl is not None
    assert dict(security.sasl.create("PLAIN").users) == {"admin": "admin-secret", "alice": "alice-secret"}
