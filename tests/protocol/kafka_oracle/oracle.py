"""Apache Kafka's own generated message classes (its kafka-clients and coordinator jars) as the byte-level
oracle for the message definitions kafka-python lacks: MessageOracle.java runs once per test session in a
JVM (Java's single-file source mode) and answers, one line at a time, what Kafka writes for a value and how
Kafka re-writes bytes it parsed.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

from tests import kafka_jars

RELEASE = "4.4"  # the newest release: its classes know every version served
ARTIFACTS = ["kafka-clients", "kafka-group-coordinator", "kafka-share-coordinator"]
_SOURCE = Path(__file__).with_name("MessageOracle.java")
_PACKAGES = {
    "request": "org.apache.kafka.common.message.{}Data",
    "response": "org.apache.kafka.common.message.{}Data",
    "coordinator-key": None,
    "coordinator-value": None,
}
_GROUP_RECORDS = "org.apache.kafka.coordinator.group.generated.{}"
_SHARE_RECORDS = "org.apache.kafka.coordinator.share.generated.{}"


class Unavailable(Exception):
    pass


def java_class(definition: dict[str, Any]) -> str:
    name = definition["name"]
    pattern = _PACKAGES[definition["type"]]
    if pattern is None:
        pattern = _SHARE_RECORDS if name.startswith(("ShareSnapshot", "ShareUpdate")) else _GROUP_RECORDS
    return pattern.format(name)


def camel(name: str) -> str:
    """Kafka's JSON converters name a field like the generated Java field: first letter lower case."""
    return name[0].lower() + name[1:]


def to_kafka_json(fields: list[dict[str, Any]], value: dict[str, Any]) -> dict[str, Any]:
    """Our snake_case value (only the version's fields present) as the JSON Kafka's converters read."""
    from protocol.schema import snake_case

    out: dict[str, Any] = {}
    for field in fields:
        key = snake_case(field["name"])
        if key not in value:
            continue
        out[camel(field["name"])] = _to_json(field, value[key])
    return out


def _to_json(field: dict[str, Any], v: Any) -> Any:
    if v is None:
        return None
    type_name: str = field["type"]
    if type_name.startswith("[]"):
        if "fields" in field:
            return [to_kafka_json(field["fields"], item) for item in v]
        return [_scalar_json(type_name[2:], item) for item in v]
    if "fields" in field:
        return to_kafka_json(field["fields"], v)
    return _scalar_json(type_name, v)


def _scalar_json(type_name: str, v: Any) -> Any:
    if type_name == "uuid":
        return base64.urlsafe_b64encode(v.bytes).rstrip(b"=").decode()
    if type_name in ("bytes", "records"):
        return base64.b64encode(bytes(v)).decode()
    return v


def ask(requests: list[dict[str, Any]], timeout: float = 300.0, release: str = RELEASE,
        artifacts: list[str] | None = None) -> list[dict[str, Any]]:
    """Kafka's answers (the classes of `release`), in order, from one JVM run (all requests at once: a pipe
    is never a deadlock)."""
    java = shutil.which("java")
    if java is None:
        raise Unavailable("java is not installed")
    try:
        classpath = kafka_jars.classpath(release, artifacts or ARTIFACTS)
    except kafka_jars.Unavailable as exc:
        raise Unavailable(str(exc)) from exc
    text = "".join(json.dumps(request) + "\n" for request in requests)
    done = subprocess.run([java, "-cp", classpath, str(_SOURCE)], input=text, capture_output=True, text=True,
                          encoding="utf-8", timeout=timeout, check=True)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    if len(answers) != len(requests):
        raise RuntimeError(f"the oracle answered {len(answers)} of {len(requests)} requests: {done.stderr}")
    return answers


def uuid_from_kafka(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
