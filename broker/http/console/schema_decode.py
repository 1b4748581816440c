"""Payloads in Confluent's wire format (magic byte 0, a 4-byte schema id, then the data) decoded with the schema
the broker's own schema registry (`--schema-registry`) holds under that id: Avro's binary encoding read with its
schema, JSON Schema payloads (plain JSON), Protobuf messages (the message indexes, then the message) read with
the schema's descriptor. A payload whose id the registry does not know, or that does not decode, is left to the
other formats."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

from broker.http.console.records_view import Shown
from protocol import records  # its zigzag varint: Confluent's message indexes are written with it too

log = logging.getLogger(__name__)

MAGIC = 0


class RegistryDecoder:
    def __init__(self, registry: Any) -> None:
        """`registry`: broker.http.registry.service.SchemaRegistry."""
        self.registry = registry
        self._protobuf_classes: dict[int, dict[tuple[int, ...], Any]] = {}

    def decode(self, data: bytes) -> Shown | None:
        if len(data) < 5 or data[0] != MAGIC:
            return None
        schema_id = int.from_bytes(data[1:5], "big")
        from broker.http.stack import HttpError

        self.registry.catch_up()
        state = self.registry.state
        try:
            stored = state.schema_by_id(schema_id)
            parsed = state.parsed_stored(stored)
        except (HttpError, ValueError):
            return None
        note = f"schema id {schema_id} ({stored.subject} v{stored.version})"
        payload = data[5:]
        try:
            if stored.schema_type == "AVRO":
                return Shown(_pretty(_avro(parsed.parsed, payload)), "avro", note)
            if stored.schema_type == "JSON":
                return Shown(_pretty(json.loads(payload)), "json-schema", note)
            if stored.schema_type == "PROTOBUF":
                return Shown(self._protobuf(schema_id, parsed, payload), "protobuf", note)
        except Exception as exc:  # noqa: BLE001 - data that does not match its schema is shown undecoded
            log.debug("schema id %d: payload not decoded: %s", schema_id, exc)
        return None

    def _protobuf(self, schema_id: int, parsed: Any, payload: bytes) -> str:
        from google.protobuf import json_format

        indexes, pos = _message_indexes(payload)
        message_class = self._message_class(schema_id, parsed, indexes)
        message = message_class()
        message.ParseFromString(payload[pos:])
        return json_format.MessageToJson(message, indent=2, preserving_proto_field_name=True)

    def _message_class(self, schema_id: int, parsed: Any, indexes: tuple[int, ...]) -> Any:
        classes = self._protobuf_classes.setdefault(schema_id, {})
        found = classes.get(indexes)
        if found is None:
            from google.protobuf import descriptor_pool, message_factory

            pool = descriptor_pool.DescriptorPool()
            fd = parsed.descriptor
            for dependency in fd.dependency:  # the well-known types (google/protobuf/...) it imports
                try:
                    pool.AddSerializedFile(descriptor_pool.Default().FindFileByName(dependency).serialized_pb)
                except KeyError:
                    pass
            pool.AddSerializedFile(fd.SerializeToString())
            file = pool.FindFileByName(fd.name)
            descriptor = list(file.message_types_by_name.values())[indexes[0]]
            for index in indexes[1:]:
                descriptor = descriptor.nested_types[index]
            found = classes[indexes] = message_factory.GetMessageClass(descriptor)
        return found


def _message_indexes(payload: bytes) -> tuple[tuple[int, ...], int]:
    """Confluent's message indexes: a zigzag varint count, then that many indexes ([0] written as one 0)."""
    count, pos = records._read_varint(payload, 0, len(payload))
    if count == 0:
        return (0,), pos
    indexes = []
    for _ in range(count):
        index, pos = records._read_varint(payload, pos, len(payload))
        indexes.append(index)
    return tuple(indexes), pos


def _avro(schema: Any, payload: bytes) -> Any:
    import avro.io

    return avro.io.DatumReader(schema).read(avro.io.BinaryDecoder(io.BytesIO(payload)))


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    return str(value)
