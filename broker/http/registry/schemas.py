"""Parsing a schema of any of the registry's types (each type's module is imported when first used)."""

from __future__ import annotations

from collections.abc import Sequence

from broker.http.registry.schema_types import InvalidSchema, ParsedSchema


def parse(schema_type: str, text: str, dependencies: Sequence[tuple[str, str]] = ()) -> ParsedSchema:
    """`dependencies`: (reference name, schema text) of every schema referenced, directly or not, those they
    reference before them. InvalidSchema if it does not parse."""
    if schema_type == "AVRO":
        from broker.http.registry.avro_schema import AvroSchema

        return AvroSchema(text, dependencies)
    if schema_type == "JSON":
        from broker.http.registry.json_schema import JsonSchema

        return JsonSchema(text, dependencies)
    if schema_type == "PROTOBUF":
        from broker.http.registry.protobuf_schema import ProtobufSchema

        return ProtobufSchema(text, dependencies)
    raise InvalidSchema(f"Invalid schema type {schema_type}")
