"""Dynamic broker configs: precedence of the levels, validation, persistence, listeners."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config.dynamic import BROKER_LEVEL, DEFAULT_LEVEL, DynamicConfigError, DynamicConfigs
from broker.config.options import BrokerConfig, Listener


def make(tmp_path: Path, **static) -> tuple[BrokerConfig, DynamicConfigs]:
    config = BrokerConfig(listeners=[Listener("127.0.0.1", 9092)], data_dir=tmp_path, **static)
    return config, DynamicConfigs(config, tmp_path / "dynamic.json")


def test_levels_take_precedence_and_fall_back(tmp_path: Path) -> None:
    config, dynamic = make(tmp_path, log_retention_ms=1000)
    changes = []
    dynamic.on_change.append(lambda: changes.append(config.log_retention_ms))
    dynamic.alter(DEFAULT_LEVEL, {"log.retention.ms": "2000"})
    dynamic.alter(BROKER_LEVEL, {"log.retention.ms": "3000"})
    assert config.log_retention_ms == 3000
    dynamic.alter(BROKER_LEVEL, {})  # AlterConfigs replaces the level: back to the cluster default
    assert config.log_retention_ms == 2000
    dynamic.alter(DEFAULT_LEVEL, {})
    assert config.log_retention_ms == 1000  # the static value
    assert changes == [2000, 3000, 2000, 1000]


def test_refusals_change_nothing(tmp_path: Path) -> None:
    config, dynamic = make(tmp_path)
    for level, overrides, message in (
            (BROKER_LEVEL, {"num.partitions": "3"}, "Cannot update these configs dynamically"),
            (BROKER_LEVEL, {"log.retention.ms": "soon"}, "is not a number"),
            (BROKER_LEVEL, {"log.cleanup.policy": "shred"}, "must be some of"),
            (DEFAULT_LEVEL, {"advertised.listeners": "PLAINTEXT://h:1"}, "default cluster level"),
            (BROKER_LEVEL, {"advertised.listeners": "PLAINTEXT://h:1,PLAINTEXT://h:2"}, "one endpoint per"),
            (BROKER_LEVEL, {"advertised.listeners": "SSL://h:1"}, "unknown listener name")):
        with pytest.raises(DynamicConfigError, match=message):
            dynamic.alter(level, overrides)
    assert dynamic.levels == {BROKER_LEVEL: {}, DEFAULT_LEVEL: {}}
    assert not (tmp_path / "dynamic.json").exists()
    dynamic.alter(BROKER_LEVEL, {"log.retention.ms": "5"}, validate_only=True)
    assert config.log_retention_ms == BrokerConfig().log_retention_ms


def test_persisted_and_applied_at_start(tmp_path: Path) -> None:
    _config, dynamic = make(tmp_path)
    dynamic.alter(BROKER_LEVEL, {"advertised.listeners": "PLAINTEXT://[::1]:19092", "message.max.bytes": "5000"})
    config, reloaded = make(tmp_path)
    assert config.listeners == [Listener("127.0.0.1", 9092, "::1", 19092)]
    assert config.message_max_bytes == 5000
    assert reloaded.static.listeners == [Listener("127.0.0.1", 9092)]  # what the command line said


def test_kafka_reconfigurables_without_an_effect_here_are_validated_and_kept(tmp_path: Path) -> None:
    config, dynamic = make(tmp_path)
    dynamic.alter(BROKER_LEVEL, {"sasl.kerberos.min.time.before.relogin": "58000", "num.io.threads": "4"})
    assert dynamic.dynamic_value("num.io.threads") == ("4", 2)
    with pytest.raises(DynamicConfigError, match="at least 1"):
        dynamic.alter(BROKER_LEVEL, {"num.io.threads": "0"})
    with pytest.raises(DynamicConfigError, match="not a number"):
        dynamic.alter(BROKER_LEVEL, {"sasl.kerberos.min.time.before.relogin": "soon"})
    assert DynamicConfigs(config, tmp_path / "dynamic.json").levels[BROKER_LEVEL] == {
        "sasl.kerberos.min.time.before.relogin": "58000", "num.io.threads": "4"}
