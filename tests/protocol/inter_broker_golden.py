"""Golden bytes of the inter-broker messages of ZooKeeper mode (LeaderAndIsr, UpdateMetadata, StopReplica,
ControlledShutdown, AlterPartition; Kafka 3.9's versions), made by Kafka's own *Data classes.

    python -m tests.protocol.inter_broker_golden     # rewrites tests/protocol/golden/inter_broker.json

Sample values come from our JSON definitions (protocol/definitions/), seeded, three per version, in the JSON form
of Kafka's *DataJsonConverter (camelCase names, uuids as Kafka's base64 text); tests/zk_oracle/MessageOracle.java
reads them into Kafka's classes and serializes them. The test (test_inter_broker_messages.py) checks our
codec against the committed bytes without a JVM.
"""

from __future__ import annotations

import base64
import json
import random
import uuid
from pathlib import Path
from typing import Any

from protocol.schema import in_versions, message, parse_versions, snake_case

MESSAGES = ["LeaderAndIsrRequest", "LeaderAndIsrResponse", "UpdateMetadataRequest", "UpdateMetadataResponse",
            "StopReplicaRequest", "StopReplicaResponse", "ControlledShutdownRequest", "ControlledShutdownResponse",
            "AlterPartitionRequest", "AlterPartitionResponse"]
GOLDEN = Path(__file__).parent / "golden" / "inter_broker.json"
SAMPLES_PER_VERSION = 3
_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def camel(name: str) -> str:
    """Kafka's JSON converter names: the field name with its first letter in lower case."""
    return name[0].lower() + name[1:]


def _present(field: dict, version: int) -> bool:
    return in_versions(version, parse_versions(field.get("versions")))


def _scalar(type_name: str, nullable: bool, rng: random.Random) -> Any:
    if nullable and rng.random() < 0.25:
        return None
    if type_name in _BITS:
        bits = _BITS[type_name]
        return rng.choice([0, -1, rng.randrange(-(1 << (bits - 1)), 1 << (bits - 1))])
    if type_name == "bool":
        return rng.random() < 0.5
    if type_name == "string":
        return "".join(rng.choice("abcxyz-._09") for _ in range(rng.randrange(0, 9)))
    if type_name == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if type_name == "bytes":
        return rng.randbytes(rng.randrange(0, 6))
    raise ValueError(f"no sample for type {type_name}")


def sample(fields: list[dict], version: int, rng: random.Random, length: int | None) -> dict[str, Any]:
    """A value of `fields` at `version` in our form (snake_case, uuid.UUID); arrays of `length` (random
    0-2 when None)."""
    value: dict[str, Any] = {}
    for field in fields:
        if not _present(field, version):
            continue
        type_name: str = field["type"]
        nullable = in_versions(version, parse_versions(field.get("nullableVersions")))
        if type_name.startswith("[]"):
            n = rng.randrange(0, 3) if length is None else length
            if "fields" in field:
                items = [sample(field["fields"], version, rng, length) for _ in range(n)]
            else:
                items = [_scalar(type_name[2:], False, rng) for _ in range(n)]
            value[snake_case(field["name"])] = items
        elif "fields" in field:
            value[snake_case(field["name"])] = sample(field["fields"], version, rng, length)
        else:
            value[snake_case(field["name"])] = _scalar(type_name, nullable, rng)
    return value


def _kafka_scalar(type_name: str, value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def _our_scalar(type_name: str, value: Any) -> Any:
    if value is None:
        return None
    if type_name == "uuid":
        return uuid.UUID(bytes=base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    if type_name == "bytes":
        return base64.b64decode(value)
    return value


def to_kafka_json(fields: list[dict], version: int, value: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in fields:
        if not _present(field, version):
            continue
        v = value[snake_case(field["name"])]
        type_name = field["type"]
        if type_name.startswith("[]") and "fields" in field:
            out[camel(field["name"])] = [to_kafka_json(field["fields"], version, item) for item in v]
        elif type_name.startswith("[]"):
            out[camel(field["name"])] = [_kafka_scalar(type_name[2:], item) for item in v]
        elif "fields" in field:
            out[camel(field["name"])] = to_kafka_json(field["fields"], version, v)
        else:
            out[camel(field["name"])] = _kafka_scalar(type_name, v)
    return out


def from_kafka_json(fields: list[dict], version: int, obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in fields:
        if not _present(field, version):
            continue
        v = obj[camel(field["name"])]
        type_name = field["type"]
        if type_name.startswith("[]") and "fields" in field:
            out[snake_case(field["name"])] = [from_kafka_json(field["fields"], version, item) for item in v]
        elif type_name.startswith("[]"):
            out[snake_case(field["name"])] = [_our_scalar(type_name[2:], item) for item in v]
        elif "fields" in field:
            out[snake_case(field["name"])] = from_kafka_json(field["fields"], version, v)
        else:
            out[snake_case(field["name"])] = _our_scalar(type_name, v)
    return out


def project(fields: list[dict], version: int, decoded: Any) -> dict[str, Any]:
    """The fields of `version` of a decoded value, as plain dicts and lists (what `sample` makes)."""
    out: dict[str, Any] = {}
    for field in fields:
        if not _present(field, version):
            continue
        v = decoded[snake_case(field["name"])]
        if field["type"].startswith("[]") and "fields" in field:
            out[snake_case(field["name"])] = [project(field["fields"], version, item) for item in v]
        elif "fields" in field:
            out[snake_case(field["name"])] = project(field["fields"], version, v)
        elif field["type"].startswith("[]"):
            out[snake_case(field["name"])] = list(v)
        else:
            out[snake_case(field["name"])] = v
    return out


def cases(seed: int = 39) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    result = []
    for name in MESSAGES:
        spec = message(name)
        lo, hi = spec.valid_versions
        for version in range(lo, hi + 1):
            for i in range(SAMPLES_PER_VERSION):
                value = sample(spec.definition["fields"], version, rng, length=[2, 1, None][i])
                result.append({"message": name, "version": version,
                               "json": to_kafka_json(spec.definition["fields"], version, value)})
    return result


def kafka_bytes(inputs: list[dict[str, Any]]) -> list[str]:
    """Kafka's serialization (hex) of each case; kafka_jars.Unavailable without the jars."""
    from tests import zk_oracle

    out = zk_oracle.run("MessageOracle", "".join(json.dumps(c) + "\n" for c in inputs))
    answers = [json.loads(line) for line in out.splitlines()]
    assert len(answers) == len(inputs)
    return [a["hex"] for a in answers]


def main() -> None:
    inputs = cases()
    golden = [{**c, "hex": h} for c, h in zip(inputs, kafka_bytes(inputs), strict=True)]
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text("[\n" + ",\n".join(json.dumps(g, separators=(",", ":")) for g in golden) + "\n]\n")
    print(f"{len(golden)} golden messages written to {GOLDEN}")


if __name__ == "__main__":
    main()
