"""The `_schemas` topic's records, in Confluent Schema Registry's JSON formats, so that Confluent's registry or
Karapace reads what minibroker wrote and the other way round. Keys are compact JSON in Confluent's field order
(Jackson's, which Karapace's canonical key mode copies): `keytype`, `subject`, `version`, `magic`.

    SCHEMA          {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
                    {"subject":"s","version":1,"id":1,"schemaType":"JSON","references":[...],"schema":"...",
                     "deleted":false}  (schemaType omitted for AVRO, references when there are none;
                    a null value: the version hard-deleted)
    CONFIG          {"keytype":"CONFIG","subject":null,"magic":0}   {"compatibilityLevel":"FULL"}, null: unset
    MODE            {"keytype":"MODE","subject":null,"magic":0}     {"mode":"READONLY"}, null: unset
    DELETE_SUBJECT  {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}  {"subject":"s","version":3}
    CLEAR_SUBJECT   {"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}   {"subject":"s"}
    NOOP            {"keytype":"NOOP","magic":0}                    null (a new leader's read barrier)
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

SCHEMAS_TOPIC = "_schemas"


class KeyType(enum.Enum):
    SCHEMA = "SCHEMA"
    CONFIG = "CONFIG"
    MODE = "MODE"
    NOOP = "NOOP"
    DELETE_SUBJECT = "DELETE_SUBJECT"
    CLEAR_SUBJECT = "CLEAR_SUBJECT"


@dataclass(frozen=True)
class Reference:
    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class StoredSchema:
    """A SCHEMA record's value."""

    subject: str
    version: int
    id: int
    schema_type: str  # AVRO, JSON, PROTOBUF
    schema: str
    references: tuple[Reference, ...] = ()
    deleted: bool = False


@dataclass(frozen=True)
class Entry:
    """One record of `_schemas`, decoded: its key type, subject (None: global), version (SCHEMA keys) and value
    (None: a tombstone)."""

    key_type: KeyType
    subject: str | None = None
    version: int | None = None
    value: dict[str, Any] | None = None


class RecordError(ValueError):
    """A record of `_schemas` this registry does not understand (logged and skipped, as Confluent's reader)."""


def _compact(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def encode_key(key_type: KeyType, subject: str | None = None, version: int | None = None) -> bytes:
    if key_type is KeyType.NOOP:
        return _compact({"keytype": key_type.value, "magic": 0})
    if key_type is KeyType.SCHEMA:
        return _compact({"keytype": key_type.value, "subject": subject, "version": version, "magic": 1})
    return _compact({"keytype": key_type.value, "subject": subject, "magic": 0})


def schema_value(stored: StoredSchema) -> bytes:
    value: dict[str, Any] = {"subject": stored.subject, "version": stored.version, "id": stored.id}
    if stored.schema_type != "AVRO":
        value["schemaType"] = stored.schema_type
    if stored.references:
        value["references"] = [r.to_json() for r in stored.references]
    value["schema"] = stored.schema
    value["deleted"] = stored.deleted
    return _compact(value)


def schema_record(stored: StoredSchema) -> tuple[bytes, bytes]:
    return encode_key(KeyType.SCHEMA, stored.subject, stored.version), schema_value(stored)


def config_record(subject: str | None, config: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
    return encode_key(KeyType.CONFIG, subject), None if config is None else _compact(config)


def mode_record(subject: str | None, mode: str | None) -> tuple[bytes, bytes | None]:
    return encode_key(KeyType.MODE, subject), None if mode is None else _compact({"mode": mode})


def delete_subject_record(subject: str, version: int) -> tuple[bytes, bytes]:
    return encode_key(KeyType.DELETE_SUBJECT, subject), _compact({"subject": subject, "version": version})


def tombstone(subject: str, version: int) -> tuple[bytes, None]:
    return encode_key(KeyType.SCHEMA, subject, version), None


NOOP_RECORD: tuple[bytes, None] = (encode_key(KeyType.NOOP), None)


def decode(key: bytes | None, value: bytes | None) -> Entry:
    """One record; RecordError when it is none of Confluent's."""
    try:
        parsed_key = json.loads(key) if key else None
        parsed_value = json.loads(value) if value else None
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError(f"not JSON: {exc}") from None
    if not isinstance(parsed_key, dict) or "keytype" not in parsed_key:
        raise RecordError(f"a key without keytype: {parsed_key!r}")
    try:
        key_type = KeyType(parsed_key["keytype"])
    except ValueError:
        raise RecordError(f"unknown keytype {parsed_key['keytype']!r}") from None
    if parsed_value is not None and not isinstance(parsed_value, dict):
        raise RecordError(f"a value that is no JSON object: {parsed_value!r}")
    version = parsed_key.get("version")
    if key_type is KeyType.SCHEMA and not isinstance(version, int):
        raise RecordError(f"a SCHEMA key without version: {parsed_key!r}")
    return Entry(key_type, parsed_key.get("subject"), version, parsed_value)


def stored_schema(entry: Entry) -> StoredSchema:
    """The SCHEMA value of `entry` (not a tombstone)."""
    value = entry.value or {}
    try:
        references = tuple(Reference(r["name"], r["subject"], int(r["version"])) for r in value.get("references") or ())
        return StoredSchema(value["subject"], int(value["version"]), int(value["id"]),
                            value.get("schemaType") or "AVRO", value["schema"], references,
                            bool(value.get("deleted", False)))
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"a SCHEMA value without {exc}: {value!r}") from None
