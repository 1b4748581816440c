"""Versioned message specs built from Kafka's JSON message definitions.

The definitions ship with kafka-python 3.x as package data (the same files as Apache Kafka's
clients/src/main/resources/common/message, as of Kafka 4). What it lacks (the inter-broker, KIP-848 and
share-group APIs, the versions Kafka 4 removed) is written in the same JSON form in
`protocol/definitions/`, which is looked at first. `message("MetadataRequest")` reads one, and
`spec.struct(version)` builds (once) a construct `KafkaStruct` for that version. Field names are the
JSON names in snake_case (`ThrottleTimeMs` -> `throttle_time_ms`).
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from construct import ConstructError, Container

from protocol import primitives as p
from protocol.errors import DecodeError, DecodeLimits

_COMMENTS = re.compile(r"(?m)^\s*//.*\n?")
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
MAX_VERSION = 0x7FFF


def snake_case(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def parse_versions(text: str | None) -> tuple[int, int] | None:
    """'3+' -> (3, MAX), '1-4' -> (1, 4), '5' -> (5, 5), 'none' or None -> None."""
    if text is None or text == "none" or text == "":
        return None
    if text.endswith("+"):
        return int(text[:-1]), MAX_VERSION
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def in_versions(version: int, versions: tuple[int, int] | None) -> bool:
    return versions is not None and versions[0] <= version <= versions[1]


@cache
def _resources_dir() -> Path:
    # find_spec locates the package without importing it: `import kafka` costs ~100 ms of client code.
    spec = importlib.util.find_spec("kafka")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("kafka-python (which ships Kafka's JSON message definitions) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "protocol" / "schemas" / "resources"


_OWN_DEFINITIONS = Path(__file__).parent / "definitions"


@cache
def load_definition(name: str) -> dict[str, Any]:
    own = _OWN_DEFINITIONS / f"{name}.json"
    text = (own if own.exists() else _resources_dir() / f"{name}.json").read_text(encoding="utf-8")
    data = json.loads(_COMMENTS.sub("", text))
    common = {s["name"]: s for s in data.get("commonStructs", [])}
    _resolve_common(data.get("fields", []), common)
    return data


def _resolve_common(fields: list[dict[str, Any]], common: dict[str, dict[str, Any]]) -> None:
    for field in fields:
        type_name = field["type"].removeprefix("[]")
        if "fields" not in field and type_name in common:
            field["fields"] = common[type_name]["fields"]
        if "fields" in field:
            _resolve_common(field["fields"], common)


_INTS = {"int8": p.INT8, "int16": p.INT16, "int32": p.INT32, "int64": p.INT64, "uint16": p.UINT16,
         "uint32": p.UINT32, "float64": p.FLOAT64, "bool": p.BOOLEAN, "uuid": p.UUID}


def default_factory(field: dict[str, Any], version: int, flexible: bool) -> Callable[[], Any]:
    """Kafka's default for a field (the JSON "default", else zero/empty/false)."""
    type_name: str = field["type"]
    raw = field.get("default")
    if type_name.startswith("[]"):
        return list
    if "fields" in field:  # a single struct: null when nullable-by-default, else a struct of defaults
        if raw == "null":
            return lambda: None
        return lambda: _struct_defaults(field["fields"], version, flexible)
    if raw == "null":
        return lambda: None
    if type_name in ("string",):
        value = "" if raw is None else raw
        return lambda: value
    if type_name in ("bytes", "records"):
        return lambda: None if type_name == "records" else b""
    if type_name == "bool":
        value = raw is True or raw == "true"
        return lambda: value
    if type_name == "uuid":
        return lambda: p.ZERO_UUID
    if type_name == "float64":
        value = float(raw) if raw is not None else 0.0
        return lambda: value
    value = int(str(raw), 0) if raw is not None and raw != "" else 0
    return lambda: value


def _struct_defaults(fields: list[dict[str, Any]], version: int, flexible: bool) -> Container:
    return Container((snake_case(f["name"]), default_factory(f, version, flexible)()) for f in fields)


class MessageSpec:
    """One JSON message definition: its api key, valid and flexible versions, and a codec per version."""

    def __init__(self, name: str) -> None:
        self.definition = load_definition(name)
        self.name = name
        self.api_key: int | None = self.definition.get("apiKey")
        self.type: str = self.definition["type"]
        self.valid_versions = parse_versions(self.definition["validVersions"])
        self.flexible_versions = parse_versions(self.definition.get("flexibleVersions"))
        self._structs: dict[int, p.KafkaStruct] = {}

    def is_flexible(self, version: int) -> bool:
        return in_versions(version, self.flexible_versions)

    def struct(self, version: int) -> p.KafkaStruct:
        try:
            return self._structs[version]
        except KeyError:
            built = self._structs[version] = self._build(self.definition["fields"], version,
                                                        self.is_flexible(version))
            return built

    def _build(self, fields: list[dict[str, Any]], version: int, flexible: bool) -> p.KafkaStruct:
        regular: list[p.Field] = []
        tagged: list[p.Field] = []
        absent: list[p.Field] = []
        for field in fields:
            name = snake_case(field["name"])
            default = default_factory(field, version, flexible)
            if not in_versions(version, parse_versions(field.get("versions"))):
                absent.append(p.Field(name, None, default))
                continue
            compact = flexible and (field.get("flexibleVersions") is None or
                                    in_versions(version, parse_versions(field["flexibleVersions"])))
            nullable = in_versions(version, parse_versions(field.get("nullableVersions")))
            con = self._type(field, version, compact, nullable, flexible)
            if flexible and "tag" in field and in_versions(version, parse_versions(field.get("taggedVersions"))):
                tagged.append(p.Field(name, con, default, field["tag"]))
            else:
                regular.append(p.Field(name, con, default))
        return p.KafkaStruct(regular, tagged if flexible else None, absent)

    def _type(self, field: dict[str, Any], version: int, compact: bool, nullable: bool,
              flexible: bool) -> Any:
        type_name: str = field["type"]
        if type_name.startswith("[]"):
            inner = type_name[2:]
            if "fields" in field:
                element = self._build(field["fields"], version, flexible)
            else:
                element = self._scalar(inner, compact, False)
            return p.KafkaArray(element, compact=compact, nullable=nullable)
        if "fields" in field:
            struct = self._build(field["fields"], version, flexible)
            if nullable:  # nullable struct: INT8 -1 for null, 1 before a value
                return _NullableStruct(struct)
            return struct
        return self._scalar(type_name, compact, nullable)

    @staticmethod
    def _scalar(type_name: str, compact: bool, nullable: bool) -> Any:
        if type_name in _INTS:
            return _INTS[type_name]
        if type_name == "string":
            return p.string(compact=compact, nullable=nullable)
        if type_name in ("bytes", "records"):
            return p.bytes_(compact=compact, nullable=nullable)
        raise ValueError(f"unknown Kafka type {type_name}")

    def decode(self, version: int, data: bytes, offset: int = 0, limits: DecodeLimits | None = None) -> Container:
        """Decode a body of this version starting at `offset`; raises DecodeError (also for collections and
        tagged-field sections beyond `limits`)."""
        stream = io.BytesIO(data)
        stream.seek(offset)
        try:
            # The limits travel as construct's context: every nested array and struct sees them.
            return self.struct(version)._parsereport(stream, limits, self.name)
        except (ConstructError, ValueError) as exc:
            raise DecodeError(f"{self.name} v{version}: {exc}") from None

    def encode(self, version: int, value: Mapping[str, Any]) -> bytes:
        stream = io.BytesIO()
        self.struct(version)._build(value, stream, None, self.name)
        return stream.getvalue()

    def defaults(self, version: int) -> Container:
        return _struct_defaults(self.definition["fields"], version, self.is_flexible(version))


class _NullableStruct(p.Construct):
    def __init__(self, struct: p.KafkaStruct) -> None:
        super().__init__()
        self.struct = struct

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        if p.INT8._parsereport(stream, context, path) <= 0:  # -1, or 0 in a tagged field (p.TAGGED_NULL)
            return None
        return self.struct._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            p.INT8._build(-1, stream, context, path)
            return obj
        p.INT8._build(1, stream, context, path)
        return self.struct._build(obj, stream, context, path)


@cache
def message(name: str) -> MessageSpec:
    return MessageSpec(name)
