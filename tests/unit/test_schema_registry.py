"""The schema registry's pure parts: `_schemas` record formats (Confluent's bytes), the state rebuilt from them
and its operations, and each schema type's compatibility rules."""

from __future__ import annotations

import json

import pytest

from broker.http.registry import records
from broker.http.registry.compatibility import Compatibility, check
from broker.http.registry.records import KeyType, Reference, StoredSchema
from broker.http.registry.schema_types import InvalidSchema
from broker.http.registry.schemas import parse
from broker.http.registry.state import RegistryState, parse_version
from broker.http.stack import HttpError


def test_keys_and_values_are_confluents_bytes():
    assert records.encode_key(KeyType.SCHEMA, "s", 3) == b'{"keytype":"SCHEMA","subject":"s","version":3,"magic":1}'
    assert records.encode_key(KeyType.CONFIG) == b'{"keytype":"CONFIG","subject":null,"magic":0}'
    assert records.encode_key(KeyType.MODE, "s") == b'{"keytype":"MODE","subject":"s","magic":0}'
    assert records.NOOP_RECORD == (b'{"keytype":"NOOP","magic":0}', None)
    assert records.delete_subject_record("s", 2) == (b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}',
                                                     b'{"subject":"s","version":2}')
    assert records.schema_value(StoredSchema("s", 1, 7, "AVRO", '"int"')) == \
        b'{"subject":"s","version":1,"id":7,"schema":"\\"int\\"","deleted":false}'
    proto = StoredSchema("s", 2, 8, "PROTOBUF", "x", (Reference("a.proto", "a", 1),), deleted=True)
    assert json.loads(records.schema_value(proto)) == {"subject": "s", "version": 2, "id": 8, "schemaType": "PROTOBUF",
                                                       "references": [{"name": "a.proto", "subject": "a",
                                                                       "version": 1}],
                                                       "schema": "x", "deleted": True}
    assert records.config_record(None, {"compatibilityLevel": "FULL"})[1] == b'{"compatibilityLevel":"FULL"}'


@pytest.mark.parametrize("key", [b"not json", b'{"magic":0}', b'{"keytype":"WHAT","magic":0}',
                                 b'{"keytype":"SCHEMA","subject":"s","magic":1}'])
def test_foreign_records_are_refused(key):
    with pytest.raises(records.RecordError):
        records.decode(key, b"{}")


def _replayed(state: RegistryState, written: list[tuple[bytes, bytes | None]]) -> None:
    for key, value in written:
        state.apply(records.decode(key, value))


AVRO_V1 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
AVRO_V2 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                                {"name": "b", "type": "string", "default": ""}]})
AVRO_BAD = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]})


def test_registering_numbers_versions_and_ids_and_refuses_incompatible_schemas():
    state = RegistryState()
    written, answer = state.register("s", "AVRO", AVRO_V1, ())
    assert answer == {"id": 1}
    _replayed(state, written)
    assert state.register("s", "AVRO", json.dumps(json.loads(AVRO_V1), indent=1), ()) == ([], {"id": 1})
    written, answer = state.register("other", "AVRO", AVRO_V1, ())
    assert answer == {"id": 1}  # the same schema: the same id under another subject
    _replayed(state, written)
    with pytest.raises(HttpError) as refused:
        state.register("s", "AVRO", AVRO_BAD, ())
    assert (refused.value.status, refused.value.code) == (409, 409)
    written, answer = state.register("s", "AVRO", AVRO_V2, ())
    _replayed(state, written)
    assert answer == {"id": 2} and [v.version for v in state.subject_versions("s")] == [1, 2]
    with pytest.raises(HttpError) as invalid:
        state.register("s", "AVRO", '{"type": "nope"}', ())
    assert invalid.value.code == 42201


def test_deletes_and_replay():
    state = RegistryState()
    for schema in (AVRO_V1, AVRO_V2):
        _replayed(state, state.register("s", "AVRO", schema, ())[0])
    written, versions = state.delete_subject("s", permanent=False)
    assert versions == [1, 2] and written[0][0].startswith(b'{"keytype":"DELETE_SUBJECT"')
    _replayed(state, written)
    assert state.subjects() == [] and state.subjects(deleted=True) == ["s"]
    with pytest.raises(HttpError) as again:
        state.delete_subject("s", permanent=False)
    assert again.value.code == 40404
    _replayed(state, state.delete_subject("s", permanent=True)[0])
    assert state.subjects(deleted=True) == [] and state.max_id == 2
    assert state.register("s", "AVRO", AVRO_BAD, ())[1] == {"id": 3}  # ids are never given twice


def test_config_and_mode():
    state = RegistryState()
    assert state.compatibility("s") is Compatibility.BACKWARD
    written, answer = state.set_config("s", {"compatibility": "none"})
    assert answer == {"compatibility": "NONE"}
    _replayed(state, written)
    assert state.compatibility("s") is Compatibility.NONE and state.compatibility(None) is Compatibility.BACKWARD
    with pytest.raises(HttpError) as unknown:
        state.set_config(None, {"compatibility": "SIDEWAYS"})
    assert unknown.value.code == 42203
    _replayed(state, state.set_mode(None, "readonly")[0])
    with pytest.raises(HttpError) as read_only:
        state.register("s", "AVRO", AVRO_V1, ())
    assert read_only.value.code == 42205


@pytest.mark.parametrize(("version", "expected"), [("latest", -1), ("-1", -1), ("3", 3), (7, 7)])
def test_versions(version, expected):
    assert parse_version(version) == expected


@pytest.mark.parametrize("version", ["0", "x", "-2", str(2**31)])
def test_invalid_versions(version):
    with pytest.raises(HttpError) as invalid:
        parse_version(version)
    assert invalid.value.code == 42202


def test_avro_is_stored_as_java_writes_it_and_normalized_to_canonical_form():
    schema = parse("AVRO", json.dumps({"fields": [{"type": "int", "name": "a", "doc": "d"}], "name": "R",
                                       "type": "record", "namespace": "n"}))
    assert schema.canonical == '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int",' \
                               '"doc":"d"}]}'
    assert schema.normalized == '{"name":"n.R","type":"record","fields":[{"name":"a","type":"int"}]}'


def test_levels_check_the_right_directions_and_versions():
    v1, v2, bad = (parse("AVRO", s) for s in (AVRO_V1, AVRO_V2, AVRO_BAD))
    assert check(Compatibility.BACKWARD, v2, [v1]) == []
    assert check(Compatibility.FORWARD, v2, [v1]) == []
    assert check(Compatibility.FULL, bad, [v1]) != []
    assert check(Compatibility.NONE, bad, [v1]) == []
    assert check(Compatibility.BACKWARD, v2, [bad, v1]) == []  # the latest only
    assert check(Compatibility.BACKWARD_TRANSITIVE, v2, [bad, v1]) != []


OBJECT = {"type": "object", "properties": {"a": {"type": "string"}}}


def _obj(**changes: object) -> dict:
    return {**OBJECT, **changes}


# (reader, writer, the kinds of incompatibility expected; none: compatible)
JSON_CASES = [
    (_obj(properties={"a": {"type": ["string", "null"]}}), OBJECT, []),
    (OBJECT, _obj(properties={"a": {"type": ["string", "null"]}}), ["TYPE_NARROWED"]),
    (_obj(properties={"a": {"type": "integer"}}), OBJECT, ["TYPE_CHANGED"]),
    (_obj(properties={"a": {"type": "number"}}), _obj(properties={"a": {"type": "integer"}}), []),
    (_obj(required=["a"]), OBJECT, ["REQUIRED_ATTRIBUTE_ADDED"]),
    (OBJECT, _obj(required=["a"]), []),
    (_obj(properties={"a": {"type": "string"}, "b": {"type": "string"}}), OBJECT,
     ["PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"]),
    (_obj(properties={"a": {"type": "string"}, "b": {}}), OBJECT, []),
    (_obj(properties={"a": {"type": "string"}, "b": {"type": "string"}}), _obj(additionalProperties=False), []),
    (_obj(additionalProperties=False), _obj(properties={"a": {"type": "string"}, "b": {"type": "string"}}),
     ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ADDITIONAL_PROPERTIES_REMOVED"]),
    (_obj(properties={"a": {"type": "string", "maxLength": 5}}), OBJECT, ["MAX_LENGTH_ADDED"]),
    (_obj(properties={"a": {"type": "string", "maxLength": 5}}),
     _obj(properties={"a": {"type": "string", "maxLength": 3}}), []),
    (_obj(properties={"a": {"type": "string", "minLength": 5}}),
     _obj(properties={"a": {"type": "string", "minLength": 3}}), ["MIN_LENGTH_INCREASED"]),
    ({"enum": ["x", "y", "z"]}, {"enum": ["x", "y"]}, []),
    ({"enum": ["x"]}, {"enum": ["x", "y"]}, ["ENUM_ARRAY_NARROWED"]),
    ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "string"}, []),
    ({"type": "string"}, {"oneOf": [{"type": "string"}, {"type": "integer"}]}, ["SUM_TYPE_NARROWED"]),
    ({"allOf": [{"type": "string"}, {"maxLength": 3}]}, {"allOf": [{"type": "string"}]}, ["PRODUCT_TYPE_EXTENDED"]),
    ({"type": "array", "items": {"type": "number"}}, {"type": "array", "items": {"type": "integer"}}, []),
    ({"type": "array", "items": {"type": "integer"}}, {"type": "array", "items": {"type": "number"}},
     ["TYPE_NARROWED"]),
    ({"$ref": "#/definitions/t", "definitions": {"t": {"type": "integer"}}}, {"type": "string"}, ["TYPE_CHANGED"]),
]


@pytest.mark.parametrize(("reader", "writer", "expected"), JSON_CASES)
def test_json_schema_rules(reader, writer, expected):
    found = parse("JSON", json.dumps(reader)).incompatibilities(parse("JSON", json.dumps(writer)))
    assert sorted({p.split(" ")[0] for p in found}) == sorted(expected), found


def test_json_schema_refuses_invalid_schemas():
    for text in ('{"type": 12}', "[1]", '{"$ref": "#/nowhere"}', "not json"):
        with pytest.raises(InvalidSchema):
            parse("JSON", text)


PROTO = """syntax = "proto3";
package shop;
message Order {
  string id = 1;
  int32 qty = 2;
  oneof pay { string card = 3; string cash = 4; }
  Kind kind = 5;
  map<string, int64> counts = 6;
}
enum Kind { A = 0; B = 1; }
"""


@pytest.mark.parametrize(("change", "expected"), [
    (("int32 qty = 2;", "int64 qty = 2;"), []),
    (("int32 qty = 2;", "double qty = 2;"), ["FIELD_SCALAR_KIND_CHANGED:"]),
    (("int32 qty = 2;", "Kind qty = 2;"), ["FIELD_KIND_CHANGED:"]),
    (("int32 qty = 2;", "repeated int32 qty = 2;"), ["FIELD_LABEL_CHANGED:"]),
    (("int32 qty = 2;", ""), []),
    (("int32 qty = 2;", "int32 qty = 2; string note = 9;"), []),
    (("int32 qty = 2;", "int32 amount = 2;"), []),
    (("string cash = 4;", "string cash = 4; string coin = 8;"), ["ONEOF_FIELD_ADDED:"]),
    (("B = 1;", ""), ["ENUM_CONST_REMOVED:"]),
    (("B = 1;", "B = 1; C = 2;"), []),
    (("package shop;", "package store;"), ["PACKAGE_CHANGED:"]),
    (("message Order {", "message Purchase {"), ["MESSAGE_REMOVED:"]),
])
def test_protobuf_rules(change, expected):
    writer = parse("PROTOBUF", PROTO)
    reader = parse("PROTOBUF", PROTO.replace(*change))
    assert sorted({p.split(" ")[0] for p in reader.incompatibilities(writer)}) == expected


def test_protobuf_text_and_descriptor_forms():
    import base64

    from google.protobuf import descriptor_pb2

    schema = parse("PROTOBUF", PROTO)
    descriptor = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(schema.serialized()))
    order = descriptor.message_type[0]
    assert descriptor.package == "shop" and order.name == "Order"
    kind = next(f for f in order.field if f.name == "kind")
    assert (kind.type, kind.type_name) == (14, ".shop.Kind")
    counts = next(f for f in order.field if f.name == "counts")
    assert counts.label == 3 and order.nested_type[0].options.map_entry
    again = parse("PROTOBUF", schema.serialized())  # what confluent-kafka's serializer registers
    assert again.incompatibilities(schema) == [] and schema.incompatibilities(again) == []
    assert "map<string, int64> counts = 6;" in again.canonical
    with pytest.raises(InvalidSchema):
        parse("PROTOBUF", "message { broken")
