"""The schema types the registry serves (AVRO, JSON, PROTOBUF) behind one interface: a parsed schema (schemas.py
parses it, with the schemas it references), its canonical text (what is stored and served), its normalized text
(`normalize`), and which changes keep a reader from reading a writer's data, each by its type's rules."""

from __future__ import annotations

from typing import Protocol

SCHEMA_TYPES = ("JSON", "PROTOBUF", "AVRO")  # as Confluent's GET /schemas/types lists them


class InvalidSchema(ValueError):
    """A schema that does not parse as its type (Confluent's 42201)."""


class ParsedSchema(Protocol):
    schema_type: str
    canonical: str  # stored and served

    @property
    def normalized(self) -> str: ...

    def incompatibilities(self, writer: ParsedSchema) -> list[str]:
        """Why this schema, reading, cannot read data written with `writer` (empty: it can)."""
        ...
