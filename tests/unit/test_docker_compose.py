"""docker-compose.yml, offline: Docker's own validator accepts it (Debian's `docker-compose config -q`, which
`make test` installs), its broker command line is one the real CLI takes, with listeners for the compose
network and for the host, and the pipeline's job command lines are ones the jobs' parsers take. The images are
not built here (no Docker daemon needed)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from broker.cli import build_parser, config_from_args
from jobs import kafka_to_spark, spark_to_kafka

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_docker_compose_validates_the_file() -> None:
    if shutil.which("docker-compose") is None:
        missing = "docker-compose is not installed (Debian: apt-get install docker-compose; make test installs it)"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    result = subprocess.run(["docker-compose", "-f", str(COMPOSE), "config", "-q"], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_broker_command_line_is_one_the_cli_takes(compose) -> None:
    broker = compose["services"]["broker"]
    config = config_from_args(build_parser().parse_args([str(a) for a in broker["command"]]))
    assert config.zookeeper_connect == "zookeeper:2181"
    advertised = {(l.advertised_host, l.advertised_port): (l.host, l.port) for l in config.listeners}
    # One listener for the compose network, one for clients on the host through the published port 9092.
    assert advertised[("broker", 29092)] == ("0.0.0.0", 29092)
    assert advertised[("localhost", 9092)] == ("0.0.0.0", 9092)
    assert "9092:9092" in broker["ports"]
    assert str(config.data_dir) == broker["volumes"][0].split(":")[1]
    assert config.inter_broker_listener().name == "INTERNAL"
    assert config.schema_registry == "0.0.0.0:8081" and "8081:8081" in broker["ports"]
    # The console: published on the host's loopback only, and with a password (it binds the container's address).
    assert config.console == "0.0.0.0:8080" and "127.0.0.1:8080:8080" in broker["ports"]
    assert config.console_password_file == "/tmp/console-password"
    assert "> /tmp/console-password" in broker["entrypoint"][2]
    assert broker["environment"]["MINIBROKER_CONSOLE_PASSWORD"].startswith("${MINIBROKER_CONSOLE_PASSWORD")


def test_cluster_profile_brokers_are_one_cluster(compose) -> None:
    """Three brokers on one ZooKeeper chroot, distinct ids, each reachable from the host on its own port."""
    services = compose["services"]
    configs = {name: config_from_args(build_parser().parse_args([str(a) for a in services[name]["command"]]))
               for name in ("broker-1", "broker-2", "broker-3")}
    assert {c.zookeeper_connect for c in configs.values()} == {"zookeeper:2181/cluster"}
    assert sorted(c.broker_id for c in configs.values()) == [1, 2, 3]
    for name, config in configs.items():
        assert services[name]["profiles"] == ["cluster"]
        external = next(li for li in config.listeners if li.name == "EXTERNAL")
        published = services[name]["ports"][0]
        assert (external.advertised_host, f"{external.port}:{external.port}") == ("localhost", published)
        internal = next(li for li in config.listeners if li.name == "INTERNAL")
        assert internal.advertised_host == name and config.inter_broker_listener() is internal
        assert config.default_replication_factor == 3 and config.min_insync_replicas == 2


def test_services_start_in_order_behind_health_checks(compose) -> None:
    services = compose["services"]
    assert services["zookeeper"]["image"].startswith("zookeeper:")  # the official image
    assert services["broker"]["depends_on"] == {"zookeeper": {"condition": "service_healthy"}}
    assert services["pipeline"]["depends_on"] == {"broker": {"condition": "service_healthy"}}
    for name in ("zookeeper", "broker"):
        assert services[name]["healthcheck"]["test"][0] == "CMD"
    # The broker's health check probes the in-network listener.
    assert "29092" in " ".join(services["broker"]["healthcheck"]["test"])
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
