"""kafka-python 3.x's own message classes, used as an independent encoder/decoder in round-trip tests."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

import kafka.protocol

from protocol.schema import load_definition, snake_case


@cache
def _classes() -> dict[str, type]:
    out: dict[str, type] = {}
    for info in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" in info.name or "schemas" in info.name or "generate_stubs" in info.name:
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - optional modules of kafka-python
            continue
        for value in vars(module).values():
            json = getattr(value, "_json", None)
            if isinstance(value, type) and isinstance(json, dict) and json.get("type") in ("request", "response"):
                out.setdefault(json["name"], value)
    return out


def known_messages() -> set[str]:
    """The message names kafka-python has classes for."""
    return set(_classes())


def message_class(name: str) -> type:
    return _classes()[name]


def _kp_fields(kp_struct: Any, json_fields: list[dict[str, Any]]) -> dict[str, tuple[Any, list | None]]:
    """Our snake_case name -> (kafka-python field, nested JSON fields), paired by position because
    kafka-python renames a few fields (Metadata's authorized_operations, typed as a bit set)."""
    kp = list(kp_struct.fields.values())
    assert len(kp) == len(json_fields)
    return {snake_case(j["name"]): (f, j.get("fields")) for f, j in zip(kp, json_fields, strict=True)}


def _is_bitfield(field: Any) -> bool:
    return field._json.get("type") == "bitfield"


def _to_bits(value: int) -> set[int]:
    value &= 0xFFFFFFFF
    return {i for i in range(32) if value >> i & 1}


def _from_bits(bits: set[int] | None) -> int:
    value = sum(1 << i for i in bits) if bits is not None else 1 << 31
    return value - (1 << 32) if value >= 1 << 31 else value


def _kwargs(kp_struct: Any, json_fields: list[dict[str, Any]], value: dict[str, Any]) -> dict[str, Any]:
    fields = _kp_fields(kp_struct, json_fields)
    kwargs = {}
    for name, item in value.items():
        field, nested = fields[name]
        if item is not None and field.is_struct_array():
            item = [field.array_of.data_class(**_kwargs(field.array_of, nested, x)) for x in item]
        elif item is not None and field.is_struct():
            item = field.data_class(**_kwargs(field, nested, item))
        elif _is_bitfield(field):
            item = _to_bits(item)
        kwargs[field.name] = item
    return kwargs


def _plain(kp_struct: Any, json_fields: list[dict[str, Any]], obj: Any) -> dict[str, Any]:
    out = {}
    for name, (field, nested) in _kp_fields(kp_struct, json_fields).items():
        if not hasattr(obj, field.name):
            continue
        item = getattr(obj, field.name)
        if item is not None and field.is_struct_array():
            item = [_plain(field.array_of, nested, x) for x in item]
        elif item is not None and field.is_struct():
            item = _plain(field, nested, item)
        elif _is_bitfield(field):
            item = _from_bits(item)
        elif isinstance(item, memoryview | bytearray):
            item = bytes(item)
        out[name] = item
    return out


def encode(name: str, version: int, value: dict[str, Any]) -> bytes:
    cls = message_class(name)
    kwargs = _kwargs(cls._struct, load_definition(name)["fields"], value)
    return bytes(cls[version](**kwargs).encode(version=version, header=False))


def decode(name: str, version: int, data: bytes) -> dict[str, Any]:
    cls = message_class(name)
    return _plain(cls._struct, load_definition(name)["fields"], cls.decode(data, version=version, header=False))
