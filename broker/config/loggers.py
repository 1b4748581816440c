"""The broker's loggers as Kafka's BROKER_LOGGER config resource (`kafka-configs --entity-type broker-loggers
--entity-name 0`): every logger of the process with its effective level, described, and levels set or unset at
run time (not persisted: as Kafka's Log4jController, a restart returns to the configured levels).

Kafka's level names map onto Python's: TRACE (5, below DEBUG), DEBUG, INFO, WARN (WARNING), ERROR, FATAL
(CRITICAL)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

ROOT = "root"
TRACE = 5
# Kafka's LogLevelConfig.VALID_LOG_LEVELS, in the order its messages list them.
VALID_LEVELS = ("DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN")
_PYTHON_LEVELS = {"TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
                  "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


class LoggerConfigError(Exception):
    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error  # a Kafka error name
        self.message = message


@dataclass(frozen=True)
class LevelChange:
    operation: int  # SET or DELETE (IncrementalAlterConfigs' op codes)
    logger: str
    level: str | None


def kafka_level(level: int) -> str:
    """The Kafka name of a Python level: the highest Kafka level at or below it."""
    for name in ("FATAL", "ERROR", "WARN", "INFO", "DEBUG"):
        if level >= _PYTHON_LEVELS[name]:
            return name
    return "TRACE"


def _existing(name: str) -> logging.Logger | None:
    if name == ROOT:
        return logging.getLogger()
    logger = logging.Logger.manager.loggerDict.get(name)
    return logger if isinstance(logger, logging.Logger) else None


def levels() -> dict[str, str]:
    """{logger: Kafka level} of the root logger and every logger the process has created."""
    out = {ROOT: kafka_level(logging.getLogger().level)}
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            out[name] = kafka_level(logger.getEffectiveLevel())
    return out


def validate(changes: Iterable[LevelChange]) -> None:
    """Kafka's RuntimeLoggerManager.validateLogLevelConfigs: raises LoggerConfigError."""
    for c in changes:
        if c.operation in _OP_NAMES:
            raise LoggerConfigError("INVALID_REQUEST", f"{_OP_NAMES[c.operation]} operation is not allowed for "
                                                       "the BROKER_LOGGER resource")
        if c.operation not in (SET, DELETE):
            raise LoggerConfigError("INVALID_REQUEST", f"Unknown operation type {c.operation} is not allowed for "
                                                       "the BROKER_LOGGER resource")
        if _existing(c.logger) is None:
            raise LoggerConfigError("INVALID_CONFIG", f"Logger {c.logger} does not exist!")
        if c.operation == SET and c.level not in VALID_LEVELS:
            raise LoggerConfigError("INVALID_CONFIG", f"Cannot set the log level of {c.logger} to {c.level} as it "
                                                      f"is not a supported log level. Valid log levels are "
                                                      f"{', '.join(VALID_LEVELS)}")
        if c.operation == DELETE and c.logger == ROOT:
            raise LoggerConfigError("INVALID_REQUEST", "Removing the log level of the root logger is not allowed")


def apply(changes: Iterable[LevelChange]) -> None:
    """Sets (or, DELETE, unsets: the logger follows its parent again) the levels; validate() first."""
    logging.addLevelName(TRACE, "TRACE")
    for c in changes:
        logger = _existing(c.logger)
        assert logger is not None
        logger.setLevel(_PYTHON_LEVELS[c.level] if c.operation == SET and c.level else logging.NOTSET)
        logging.getLogger(__name__).warning("%s the log level of %s%s", "Updated" if c.operation == SET else "Unset",
                                            c.logger, f" to {c.level}" if c.operation == SET else "")
