"""docker-compose.yml, offline: Docker's own validator resolves it (Debian's `docker-compose config`, which `make
test` installs; its variables with their defaults, or as a user sets them), its broker command lines are ones the
real CLI takes, with listeners for the compose network and for the host, published on loopback unless asked
otherwise, health checks that both Docker and podman run, and the pipeline's job command lines are ones the
jobs' parsers take. tests/containers/ (`make compose-test`) runs the file for real."""

from __future__ import annotations

import re
import shlex

import pytest
import yaml

from broker.cli import ADVERTISED_ENV, build_parser, config_from_args
from jobs import kafka_to_spark, spark_to_kafka
from tests.compose_file import REPO, resolved


@pytest.fixture(scope="module")
def compose() -> dict:
    return resolved()


def cli_config(service: dict):  # noqa: ANN201 - a BrokerConfig
    return config_from_args(build_parser().parse_args([str(a) for a in service["command"]]))


def test_broker_command_line_is_one_the_cli_takes(compose) -> None:
    broker = compose["services"]["broker"]
    config = cli_config(broker)
    assert config.zookeeper_connect == "zookeeper:2181"
    advertised = {(l.advertised_host, l.advertised_port): (l.host, l.port) for l in config.listeners}
    # One listener for the compose network, one for clients on the host through the published port 9092.
    assert advertised[("broker", 29092)] == ("0.0.0.0", 29092)
    assert advertised[("localhost", 9092)] == ("0.0.0.0", 9092)
    assert broker["ports"] == ["127.0.0.1:9092:9092/tcp", "127.0.0.1:8081:8081/tcp", "127.0.0.1:8080:8080/tcp"]
    assert str(config.data_dir) == broker["volumes"][0].split(":")[1]
    assert config.inter_broker_listener().name == "INTERNAL"
    assert config.schema_registry == "0.0.0.0:8081"
    # The console: published on the host's loopback only, and with a password (it binds the container's address).
    assert config.console == "0.0.0.0:8080"
    assert config.console_password_file == "/tmp/console-password"
    assert "> /tmp/console-password" in broker["entrypoint"][2]
    assert broker["environment"]["MINIBROKER_CONSOLE_PASSWORD"] == "minibroker"  # the file's default


def test_cluster_profile_brokers_are_one_cluster(compose) -> None:
    """Three brokers on one ZooKeeper chroot, distinct ids, each reachable from the host on its own port."""
    services = compose["services"]
    configs = {name: cli_config(services[name]) for name in ("broker-1", "broker-2", "broker-3")}
    assert {c.zookeeper_connect for c in configs.values()} == {"zookeeper:2181/cluster"}
    assert sorted(c.broker_id for c in configs.values()) == [1, 2, 3]
    for name, config in configs.items():
        assert services[name]["profiles"] == ["cluster"]
        external = next(li for li in config.listeners if li.name == "EXTERNAL")
        assert external.advertised_host == "localhost" and external.advertised_port == external.port
        assert services[name]["ports"] == [f"127.0.0.1:{external.port}:{external.port}/tcp"]
        internal = next(li for li in config.listeners if li.name == "INTERNAL")
        assert internal.advertised_host == name and config.inter_broker_listener() is internal
        assert config.default_replication_factor == 3 and config.min_insync_replicas == 2


def test_ports_are_published_on_loopback_unless_asked_wider(compose) -> None:
    """By default every published port is on 127.0.0.1; MINIBROKER_BIND publishes wider, MINIBROKER_HOST is the
    name the EXTERNAL listeners advertise to clients elsewhere, MINIBROKER_PORT(_N) moves a host port."""
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)
    wider = resolved(MINIBROKER_BIND="0.0.0.0", MINIBROKER_HOST="broker.example", MINIBROKER_PORT="29999",
                     MINIBROKER_PORT_2="29993", MINIBROKER_REGISTRY_PORT="28081",
                     MINIBROKER_CONSOLE_PORT="28080")["services"]
    # The console stays on loopback: it serves the broker's data and actions behind a password.
    assert wider["broker"]["ports"] == ["0.0.0.0:29999:9092/tcp", "0.0.0.0:28081:8081/tcp", "127.0.0.1:28080:8080/tcp"]
    external = next(li for li in cli_config(wider["broker"]).listeners if li.name == "EXTERNAL")
    assert (external.advertised_host, external.advertised_port, external.port) == ("broker.example", 29999, 9092)
    assert wider["broker-2"]["ports"] == ["0.0.0.0:29993:19093/tcp"]
    external = next(li for li in cli_config(wider["broker-2"]).listeners if li.name == "EXTERNAL")
    assert (external.advertised_host, external.advertised_port) == ("broker.example", 29993)
    assert wider["broker-secure"]["ports"] == ["0.0.0.0:9093:9093/tcp"]


def test_health_checks_run_under_docker_and_podman(compose) -> None:
    """CMD-form checks whose arguments hold no spaces: podman's Docker API (up to about 5.7, podman#26519)
    splits them on spaces, which broke a `python -c "..."` check."""
    services = compose["services"]
    checked = {name: s["healthcheck"]["test"] for name, s in services.items() if "healthcheck" in s}
    assert set(checked) == {"zookeeper", "broker", "broker-1", "broker-2", "broker-3"}
    for name, test in checked.items():
        assert test[0] == "CMD", (name, test)
        assert not any(re.search(r"\s", arg) for arg in test[1:]), (name, test)
    for name in ("broker", "broker-1", "broker-2", "broker-3"):
        internal = next(li for li in cli_config(services[name]).listeners if li.name == "INTERNAL")
        assert checked[name] == ["CMD", "python", "-m", "broker.healthcheck", f"127.0.0.1:{internal.port}"]


def test_services_start_in_order_behind_health_checks(compose) -> None:
    services = compose["services"]
    assert services["zookeeper"]["image"].startswith("zookeeper:")  # the official image
    assert services["broker"]["depends_on"] == {"zookeeper": {"condition": "service_healthy"}}
    assert services["pipeline"]["depends_on"] == {"broker": {"condition": "service_healthy"}}
    assert services["pipeline"]["restart"] == "no"


def test_pipeline_runs_both_jobs_with_options_they_take(compose) -> None:
    pipeline = compose["services"]["pipeline"]
    assert pipeline["entrypoint"] == ["sh", "-c"]
    script = pipeline["command"][0].replace("$$", "$")
    # The shell's variables: the service's environment, and the topic the script's first step sets.
    variables = {**pipeline["environment"], "topic": "pipeline-1700000000"}
    steps = [shlex.split(step) for step in script.split("&&")]
    assert steps[0][0].startswith("topic=")
    jobs = {step[2]: [re.sub(r"\$(\w+)", lambda m: variables[m.group(1)], arg) for arg in step[3:]]
            for step in steps if step[:2] == ["python", "-m"]}
    assert set(jobs) == {"jobs.spark_to_kafka", "jobs.kafka_to_spark"}
    write = spark_to_kafka.build_parser().parse_args(jobs["jobs.spark_to_kafka"])
    read = kafka_to_spark.build_parser().parse_args(jobs["jobs.kafka_to_spark"])
    assert write.bootstrap == read.bootstrap == "broker:29092"
    assert write.delivery == "exactly-once"
    assert read.verify and read.topic == write.topic
    assert pipeline["environment"]["ROWS"].isdigit()


def test_dockerfile_has_the_stages_compose_builds(compose) -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    stages = {name: image for image, name in re.findall(r"^FROM (\S+) AS (\S+)$", dockerfile, re.M)}
    assert stages["base"] == "python:3.11-slim"
    for service in ("broker", "pipeline"):
        assert compose["services"][service]["build"]["target"] in stages
    broker_stage = dockerfile.split("AS broker", 1)[1]
    assert 'ENTRYPOINT ["python", "-m", "broker"]' in broker_stage and "EXPOSE 9092" in broker_stage
    # the HTTP services: the schema registry and the console
    assert "pip install --no-cache-dir '.[registry,console]'" in dockerfile


def test_the_image_advertises_the_published_port_to_host_clients(monkeypatch) -> None:
    """`docker run -p 9092:9092 minibroker`: the broker stage's command with its environment advertises
    localhost:9092 (MINIBROKER_ADVERTISED), which a client on the host reaches; --advertised in a command (as
    the compose services give) wins over it."""
    broker_stage = (REPO / "Dockerfile").read_text().split("AS broker", 1)[1]
    env = dict(re.findall(r"^ENV (\w+)=(\S+)$", broker_stage, re.M))
    assert env == {ADVERTISED_ENV: "localhost:9092"}
    command = yaml.safe_load(re.search(r"^CMD (\[.*\])$", broker_stage, re.M).group(1))
    monkeypatch.setenv(ADVERTISED_ENV, env[ADVERTISED_ENV])
    (listener,) = config_from_args(build_parser().parse_args(command)).listeners
    assert (listener.host, listener.port, listener.advertised_host, listener.advertised_port) == \
        ("0.0.0.0", 9092, "localhost", 9092)
    monkeypatch.setenv(ADVERTISED_ENV, "broker.example:19092")
    (listener,) = config_from_args(build_parser().parse_args([*command, "--advertised", "other:1"])).listeners
    assert (listener.advertised_host, listener.advertised_port) == ("other", 1)
