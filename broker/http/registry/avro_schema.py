"""Avro schemas: parsed by the `avro` package (Apache Avro's Python implementation), written back as Java's
Schema.toString() writes them (what Confluent's registry stores and serves), normalized to Avro's Parsing
Canonical Form, and checked with Avro's own schema resolution (avro.compatibility, a port of Java's
SchemaCompatibility): the reader can read what the writer wrote."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from broker.http.registry.schema_types import InvalidSchema

# Java's Schema.toString() field order: a schema's, then a record field's; other properties follow.
_SCHEMA_ORDER = ("type", "name", "namespace", "doc", "fields", "symbols", "items", "values", "size", "default",
                 "aliases")
_FIELD_ORDER = ("name", "type", "doc", "default", "order", "aliases")


class AvroSchema:
    schema_type = "AVRO"

    def __init__(self, text: str, dependencies: Sequence[tuple[str, str]] = ()) -> None:
        """`dependencies`: (reference name, schema text) of the referenced schemas, those they reference first."""
        import avro.errors
        import avro.schema

        names = avro.schema.Names()
        known = avro.schema.Names()  # the referenced named types: written by name only
        try:
            for _name, dependency in dependencies:
                avro.schema.make_avsc_object(json.loads(dependency), names).to_json(known)
            self.parsed = avro.schema.make_avsc_object(json.loads(text), names)
        except (ValueError, TypeError, KeyError, avro.errors.AvroException) as exc:
            raise InvalidSchema(f"Invalid schema {text}: {exc}") from None
        self.canonical = json.dumps(_java_order(self.parsed.to_json(known)), separators=(",", ":"),
                                    ensure_ascii=False)

    @property
    def normalized(self) -> str:
        return self.parsed.canonical_form

    def incompatibilities(self, writer: AvroSchema) -> list[str]:
        """What keeps this schema, as the reader, from reading data written with `writer` (empty: it can)."""
        from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

        result = ReaderWriterCompatibilityChecker().get_compatibility(self.parsed, writer.parsed)
        if result.compatibility is SchemaCompatibilityType.compatible:
            return []
        kinds = sorted({kind.name.upper() for kind in result.incompatibilities}) or ["INCOMPATIBLE"]
        where = ", ".join(sorted(result.locations))
        what = ", ".join(sorted(map(str, result.messages)))
        return [f"{kind}: {what} at {where}" for kind in kinds]


def _java_order(node: Any) -> Any:
    if isinstance(node, list):
        return [_java_order(item) for item in node]
    if not isinstance(node, dict):
        return node
    ordered = _ordered(node, _SCHEMA_ORDER)
    for key in ("items", "values", "type"):
        if key in ordered and isinstance(ordered[key], (dict, list)):
            ordered[key] = _java_order(ordered[key])
    if isinstance(ordered.get("fields"), list):
        ordered["fields"] = [_field(f) for f in ordered["fields"]]
    return ordered


def _field(field: dict[str, Any]) -> dict[str, Any]:
    ordered = _ordered(field, _FIELD_ORDER)
    ordered["type"] = _java_order(ordered["type"])
    return ordered


def _ordered(node: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    out = {key: node[key] for key in order if key in node}
    out.update((key, value) for key, value in node.items() if key not in out)
    return out
