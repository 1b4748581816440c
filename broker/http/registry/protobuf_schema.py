"""Protobuf schemas: `.proto` text parsed by proto-schema-parser (or a base64 FileDescriptorProto, the form
confluent-kafka's Protobuf serializer registers, turned into `.proto` text first), stored as the parser's
generated text, served on request (`format=serialized`) as a base64 FileDescriptorProto with its type names
resolved, and compared with Confluent's Protobuf compatibility rules. From the writer's schema to the reader's:

- compatible: a message, enum, enum constant or oneof added; a field added or removed (a reader skips unknown
  fields, and misses removed ones as their defaults); a field renamed; a scalar type changed within a family of
  wire-compatible types (int32/uint32/int64/uint64/bool; sint32/sint64; fixed32/sfixed32; fixed64/sfixed64;
  string/bytes); a field moved out of a oneof.
- incompatible: the package changed (PACKAGE_CHANGED); a message or enum removed (MESSAGE_REMOVED,
  ENUM_REMOVED); an enum constant removed or renamed (ENUM_CONST_REMOVED, ENUM_CONST_CHANGED); a field's kind
  (scalar, message, enum: FIELD_KIND_CHANGED), scalar family (FIELD_SCALAR_KIND_CHANGED), message or enum type
  (FIELD_NAMED_TYPE_CHANGED) or label (repeated or not: FIELD_LABEL_CHANGED) changed; a required field added or
  removed (REQUIRED_FIELD_ADDED, REQUIRED_FIELD_REMOVED); a oneof removed (ONEOF_REMOVED); a field added to an
  existing oneof (ONEOF_FIELD_ADDED), moved into one (FIELD_MOVED_TO_EXISTING_ONEOF), or several fields moved
  into a new one (MULTIPLE_FIELDS_MOVED_TO_ONEOF).
Not covered: options (java_package, ...), services, extensions and groups are kept in the text but not compared.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Sequence
from typing import Any

from broker.http.registry.schema_types import InvalidSchema

_SCALARS = {  # .proto scalar -> FieldDescriptorProto.Type number
    "double": 1, "float": 2, "int64": 3, "uint64": 4, "int32": 5, "fixed64": 6, "fixed32": 7, "bool": 8,
    "string": 9, "bytes": 12, "uint32": 13, "sfixed32": 15, "sfixed64": 16, "sint32": 17, "sint64": 18,
}
_SCALAR_NAMES = {number: name for name, number in _SCALARS.items()}
_TYPE_MESSAGE, _TYPE_ENUM = 11, 14
_LABEL_OPTIONAL, _LABEL_REQUIRED, _LABEL_REPEATED = 1, 2, 3
_FAMILIES = [{"int32", "uint32", "int64", "uint64", "bool"}, {"sint32", "sint64"}, {"fixed32", "sfixed32"},
             {"fixed64", "sfixed64"}, {"string", "bytes"}]


class ProtobufSchema:
    schema_type = "PROTOBUF"

    def __init__(self, text: str, dependencies: Sequence[tuple[str, str]] = ()) -> None:
        from proto_schema_parser.generator import Generator

        self.ast = _parse(text)
        self.canonical = Generator().generate(self.ast).strip() + "\n"
        self.dependencies = [(name, _parse(dep)) for name, dep in dependencies]
        try:
            self.descriptor = _Descriptors(self.ast, self.dependencies).file("default")
        except (KeyError, ValueError, AttributeError) as exc:
            raise InvalidSchema(f"Invalid schema {text}: {exc}") from None

    @property
    def normalized(self) -> str:
        return self.canonical

    def serialized(self) -> str:
        """The base64 FileDescriptorProto (Confluent's `format=serialized`)."""
        return base64.standard_b64encode(self.descriptor.SerializeToString()).decode("ascii")

    def incompatibilities(self, writer: ProtobufSchema) -> list[str]:
        return list(_differences(writer.descriptor, self.descriptor))


def _parse(text: str) -> Any:
    """The proto-schema-parser AST of `.proto` text, or of a base64 FileDescriptorProto."""
    try:
        return _strict_parse(text)
    except InvalidSchema as proto_error:
        try:
            return _strict_parse(_descriptor_text(text))
        except (InvalidSchema, ValueError):
            raise InvalidSchema(f"Invalid schema {text[:200]!r}: {proto_error}") from None


def _strict_parse(text: str) -> Any:
    """Parse, refusing any syntax error (the parser would otherwise print it and go on)."""
    from antlr4.error.ErrorListener import ErrorListener
    from proto_schema_parser.parser import Parser

    class Refuse(ErrorListener):
        def syntaxError(self, recognizer: Any, offending: Any, line: int, column: int, msg: str, e: Any) -> None:
            raise InvalidSchema(f"line {line}:{column} {msg}")

    def strict(recognizer: Any) -> None:
        recognizer.removeErrorListeners()
        recognizer.addErrorListener(Refuse())

    return Parser(setup_lexer=strict, setup_parser=strict).parse(text)


# -- a base64 FileDescriptorProto as .proto text ----------------------------------------------------------------
def _descriptor_text(text: str) -> str:
    from google.protobuf import descriptor_pb2

    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidSchema("neither .proto text nor a base64 FileDescriptorProto") from None
    fd = descriptor_pb2.FileDescriptorProto()
    fd.ParseFromString(data)
    lines = [f'syntax = "{fd.syntax or "proto2"}";']
    if fd.package:
        lines.append(f"package {fd.package};")
    lines += [f'import "{dep}";' for dep in fd.dependency]
    for message in fd.message_type:
        lines += _message_text(message, fd.syntax == "proto3", "")
    for enum in fd.enum_type:
        lines += _enum_text(enum, "")
    return "\n".join(lines) + "\n"


def _message_text(message: Any, proto3: bool, indent: str) -> list[str]:
    entries = {n.name: n for n in message.nested_type if n.options.map_entry}
    lines = [f"{indent}message {message.name} {{"]
    inner = indent + "  "
    oneofs: dict[int, list[str]] = {}
    for field in message.field:
        entry = entries.get(field.type_name.rsplit(".", 1)[-1]) if field.type == _TYPE_MESSAGE else None
        if entry is not None and field.label == _LABEL_REPEATED:
            key, value = entry.field[0], entry.field[1]
            line = f"map<{_type_text(key)}, {_type_text(value)}> {field.name} = {field.number};"
        else:
            label = ""
            if field.label == _LABEL_REPEATED:
                label = "repeated "
            elif field.label == _LABEL_REQUIRED:
                label = "required "
            elif not proto3 or field.proto3_optional:
                label = "optional " if not field.HasField("oneof_index") or field.proto3_optional else ""
            line = f"{label}{_type_text(field)} {field.name} = {field.number};"
        if field.HasField("oneof_index") and not field.proto3_optional:
            oneofs.setdefault(field.oneof_index, []).append(line)
        else:
            lines.append(inner + line)
    for index, members in oneofs.items():
        lines.append(f"{inner}oneof {message.oneof_decl[index].name} {{")
        lines += [inner + "  " + m for m in members]
        lines.append(inner + "}")
    for nested in message.nested_type:
        if not nested.options.map_entry:
            lines += _message_text(nested, proto3, inner)
    for enum in message.enum_type:
        lines += _enum_text(enum, inner)
    lines.append(indent + "}")
    return lines


def _enum_text(enum: Any, indent: str) -> list[str]:
    return [f"{indent}enum {enum.name} {{", *(f"{indent}  {v.name} = {v.number};" for v in enum.value), indent + "}"]


def _type_text(field: Any) -> str:
    return field.type_name if field.type in (_TYPE_MESSAGE, _TYPE_ENUM) else _SCALAR_NAMES[field.type]


# -- .proto text as a FileDescriptorProto ------------------------------------------------------------------------
class _Descriptors:
    """Builds the FileDescriptorProto of an AST, its type names resolved against its own types and those of
    its dependencies (and of the well-known google/protobuf files)."""

    def __init__(self, ast: Any, dependencies: list[tuple[str, Any]]) -> None:
        self.ast = ast
        self.kinds: dict[str, int] = {}  # full name (".pkg.Msg") -> _TYPE_MESSAGE or _TYPE_ENUM
        for _, dep in dependencies:
            self._collect(dep)
        self._collect(ast)
        for element in ast.file_elements:
            if type(element).__name__ == "Import" and element.name.startswith("google/protobuf/"):
                self._well_known(element.name)

    def _collect(self, ast: Any) -> None:
        package = _package(ast)

        def walk(elements: list[Any], scope: str) -> None:
            for element in elements:
                kind = type(element).__name__
                if kind == "Message":
                    self.kinds[f"{scope}.{element.name}"] = _TYPE_MESSAGE
                    walk(element.elements, f"{scope}.{element.name}")
                elif kind == "Enum":
                    self.kinds[f"{scope}.{element.name}"] = _TYPE_ENUM

        walk(ast.file_elements, f".{package}" if package else "")

    def _well_known(self, name: str) -> None:
        import importlib

        from google.protobuf import descriptor_pool

        module = "google.protobuf." + name.removeprefix("google/protobuf/").removesuffix(".proto") + "_pb2"
        try:
            importlib.import_module(module)
            found = descriptor_pool.Default().FindFileByName(name)
        except (ImportError, KeyError):
            return
        for message in found.message_types_by_name.values():
            self.kinds["." + message.full_name] = _TYPE_MESSAGE
        for enum in found.enum_types_by_name.values():
            self.kinds["." + enum.full_name] = _TYPE_ENUM

    def file(self, name: str) -> Any:
        from google.protobuf import descriptor_pb2

        fd = descriptor_pb2.FileDescriptorProto(name=name, syntax=self.ast.syntax or "proto2")
        package = _package(self.ast)
        if package:
            fd.package = package
        scope = f".{package}" if package else ""
        for element in self.ast.file_elements:
            kind = type(element).__name__
            if kind == "Import":
                fd.dependency.append(element.name)
            elif kind == "Message":
                self._message(fd.message_type.add(), element, scope)
            elif kind == "Enum":
                _enum(fd.enum_type.add(), element)
        return fd

    def _message(self, out: Any, message: Any, scope: str) -> None:
        out.name = message.name
        here = f"{scope}.{message.name}"
        for element in message.elements:
            kind = type(element).__name__
            if kind == "Field":
                self._field(out.field.add(), element, here)
            elif kind == "MapField":
                entry = out.nested_type.add(name="".join(p[:1].upper() + p[1:] for p in element.name.split("_"))
                                            + "Entry")
                entry.options.map_entry = True
                self._field(entry.field.add(), _Plain("key", 1, element.key_type), here)
                self._field(entry.field.add(), _Plain("value", 2, element.value_type), here)
                field = out.field.add(name=element.name, number=element.number, label=_LABEL_REPEATED,
                                      type=_TYPE_MESSAGE, type_name=f"{here}.{entry.name}")
                field.json_name = _json_name(element.name)
            elif kind == "OneOf":
                index = len(out.oneof_decl)
                out.oneof_decl.add(name=element.name)
                for member in element.elements:
                    if type(member).__name__ == "Field":
                        self._field(out.field.add(), member, here).oneof_index = index
            elif kind == "Message":
                self._message(out.nested_type.add(), element, here)
            elif kind == "Enum":
                _enum(out.enum_type.add(), element)

    def _field(self, out: Any, field: Any, scope: str) -> Any:
        out.name, out.number = field.name, field.number
        out.json_name = _json_name(field.name)
        cardinality = str(getattr(field, "cardinality", None) or "").upper()
        out.label = _LABEL_REPEATED if "REPEATED" in cardinality else \
            _LABEL_REQUIRED if "REQUIRED" in cardinality else _LABEL_OPTIONAL
        if field.type in _SCALARS:
            out.type = _SCALARS[field.type]
        else:
            full = self._resolve(field.type, scope)
            out.type, out.type_name = self.kinds[full], full
        return out

    def _resolve(self, name: str, scope: str) -> str:
        if name.startswith("."):
            if name in self.kinds:
                return name
            raise ValueError(f"unknown type {name}")
        parts = scope.split(".")
        while True:
            candidate = ".".join(parts + [name]) if parts != [""] else "." + name
            if not candidate.startswith("."):
                candidate = "." + candidate
            if candidate in self.kinds:
                return candidate
            if not parts or parts == [""]:
                raise ValueError(f"unknown type {name} in {scope or 'the file'}")
            parts = parts[:-1]


class _Plain:
    def __init__(self, name: str, number: int, type_name: str) -> None:
        self.name, self.number, self.type, self.cardinality = name, number, type_name, None


def _enum(out: Any, enum: Any) -> None:
    out.name = enum.name
    for element in enum.elements:
        if type(element).__name__ == "EnumValue":
            out.value.add(name=element.name, number=element.number)


def _package(ast: Any) -> str:
    return next((e.name for e in ast.file_elements if type(e).__name__ == "Package"), "")


def _json_name(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


# -- Confluent's rules, from the writer's descriptor to the reader's ---------------------------------------------
def _differences(writer: Any, reader: Any) -> Iterator[str]:
    if writer.package != reader.package:
        yield f"PACKAGE_CHANGED: {writer.package!r} -> {reader.package!r}"
    w_messages, r_messages = dict(_messages(writer.message_type, "")), dict(_messages(reader.message_type, ""))
    w_enums = dict(_enums(writer.message_type, writer.enum_type, ""))
    r_enums = dict(_enums(reader.message_type, reader.enum_type, ""))
    for name, w_enum in w_enums.items():
        if name not in r_enums:
            yield f"ENUM_REMOVED: {name}"
            continue
        r_values = {v.number: v.name for v in r_enums[name].value}
        for value in w_enum.value:
            if value.number not in r_values:
                yield f"ENUM_CONST_REMOVED: {name}.{value.name}"
            elif r_values[value.number] != value.name:
                yield f"ENUM_CONST_CHANGED: {name}.{value.name} -> {r_values[value.number]}"
    for name, w_message in w_messages.items():
        if name not in r_messages:
            yield f"MESSAGE_REMOVED: {name}"
            continue
        yield from _message_differences(name, w_message, r_messages[name])


def _message_differences(name: str, writer: Any, reader: Any) -> Iterator[str]:
    w_fields, r_fields = {f.number: f for f in writer.field}, {f.number: f for f in reader.field}
    w_oneofs = {o.name for o in writer.oneof_decl}
    r_oneofs = {o.name for o in reader.oneof_decl}
    for gone in sorted(w_oneofs - r_oneofs):
        yield f"ONEOF_REMOVED: {name}.{gone}"
    moved_into_new: dict[str, int] = {}
    for number, w_field in w_fields.items():
        r_field = r_fields.get(number)
        where = f"{name}.{w_field.name} ({number})"
        if r_field is None:
            if w_field.label == _LABEL_REQUIRED:
                yield f"REQUIRED_FIELD_REMOVED: {where}"
            continue
        w_kind, r_kind = _kind(w_field), _kind(r_field)
        if w_kind != r_kind:
            yield f"FIELD_KIND_CHANGED: {where}"
        elif w_kind == "scalar" and not _same_family(w_field.type, r_field.type):
            yield f"FIELD_SCALAR_KIND_CHANGED: {where} {_SCALAR_NAMES[w_field.type]} -> {_SCALAR_NAMES[r_field.type]}"
        elif w_kind != "scalar" and w_field.type_name.rsplit(".", 1)[-1] != r_field.type_name.rsplit(".", 1)[-1]:
            yield f"FIELD_NAMED_TYPE_CHANGED: {where} {w_field.type_name} -> {r_field.type_name}"
        if (w_field.label == _LABEL_REPEATED) != (r_field.label == _LABEL_REPEATED):
            yield f"FIELD_LABEL_CHANGED: {where}"
        w_oneof = _oneof(writer, w_field)
        r_oneof = _oneof(reader, r_field)
        if r_oneof is not None and w_oneof is None:
            if r_oneof in w_oneofs:
                yield f"FIELD_MOVED_TO_EXISTING_ONEOF: {where} -> {r_oneof}"
            else:
                moved_into_new[r_oneof] = moved_into_new.get(r_oneof, 0) + 1
    for oneof, count in moved_into_new.items():
        if count > 1:
            yield f"MULTIPLE_FIELDS_MOVED_TO_ONEOF: {name}.{oneof}"
    for number, r_field in r_fields.items():
        if number in w_fields:
            continue
        where = f"{name}.{r_field.name} ({number})"
        if r_field.label == _LABEL_REQUIRED:
            yield f"REQUIRED_FIELD_ADDED: {where}"
        r_oneof = _oneof(reader, r_field)
        if r_oneof is not None and r_oneof in w_oneofs:
            yield f"ONEOF_FIELD_ADDED: {where} -> {r_oneof}"


def _messages(messages: Any, scope: str) -> Iterator[tuple[str, Any]]:
    for message in messages:
        name = f"{scope}.{message.name}" if scope else message.name
        if not message.options.map_entry:
            yield name, message
            yield from _messages(message.nested_type, name)


def _enums(messages: Any, enums: Any, scope: str) -> Iterator[tuple[str, Any]]:
    for enum in enums:
        yield (f"{scope}.{enum.name}" if scope else enum.name), enum
    for message in messages:
        yield from _enums(message.nested_type, message.enum_type, f"{scope}.{message.name}" if scope else message.name)


def _kind(field: Any) -> str:
    return "message" if field.type == _TYPE_MESSAGE else "enum" if field.type == _TYPE_ENUM else "scalar"


def _same_family(a: int, b: int) -> bool:
    return a == b or any({_SCALAR_NAMES[a], _SCALAR_NAMES[b]} <= family for family in _FAMILIES)


def _oneof(message: Any, field: Any) -> str | None:
    if not field.HasField("oneof_index") or field.proto3_optional:
        return None
    return message.oneof_decl[field.oneof_index].name
