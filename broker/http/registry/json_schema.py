"""JSON Schemas: checked against their meta-schema with `jsonschema`, stored as compact JSON (normalized: keys
sorted), and compared with Confluent's JSON Schema compatibility rules (its JsonSchemaDiff's change types,
which Karapace implements too): the reader, a schema, can read what the writer allowed when every document
valid under the writer is valid under the reader. The rules, by keyword:

- type: the reader's types include the writer's (integer is a number); otherwise TYPE_CHANGED / TYPE_NARROWED.
- enum, const: the reader's values include the writer's (ENUM_ARRAY_NARROWED, CONST_CHANGED).
- maximum, exclusiveMaximum, maxLength, maxItems, maxProperties: a reader's bound only if the writer's is no
  larger (*_ADDED, *_DECREASED); the minimums the other way round (*_ADDED, *_INCREASED).
- pattern, multipleOf, uniqueItems: added or changed by the reader (PATTERN_ADDED, MULTIPLE_OF_CHANGED ...).
- objects: a property the reader requires that the writer did not (REQUIRED_ATTRIBUTE_ADDED, unless it has a
  default); a property only the writer has, where the reader's content model is closed (additionalProperties
  false: PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL) or partly open and not covering it; a property only the
  reader has, where the writer's model is open (PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL, unless the reader
  accepts anything there) or partly open and not covered, or closed but the reader requires it
  (REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL); additionalProperties removed or narrowed; dependencies
  added (DEPENDENCY_ARRAY_ADDED, DEPENDENCY_SCHEMA_ADDED); the common properties compared the same way.
- arrays: items compared; tuple items added to an open model or removed from a closed one.
- oneOf/anyOf: each writer alternative read by some reader alternative (SUM_TYPE_NARROWED otherwise: adding
  alternatives is compatible); allOf: each reader part implied by some writer part (PRODUCT_TYPE_EXTENDED);
  a different combination keyword: COMBINED_TYPE_CHANGED; `not` changed: NOT_TYPE_CHANGED.
- $ref: followed, inside the schema and into referenced schemas (by reference name).
Not covered: if/then/else, patternProperties, propertyNames, contains and dependentSchemas are compared only
for equality (a change there is reported as incompatible).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from broker.http.registry.schema_types import InvalidSchema

_MAXIMUMS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_MINIMUMS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_COMBINERS = ("oneOf", "anyOf", "allOf")
_EQUAL_ONLY = ("if", "then", "else", "patternProperties", "propertyNames", "contains", "dependentSchemas")
_UPPER = {k: "".join("_" + c if c.isupper() else c.upper() for c in k) for k in _MAXIMUMS + _MINIMUMS + _EQUAL_ONLY}


class JsonSchema:
    schema_type = "JSON"

    def __init__(self, text: str, dependencies: Sequence[tuple[str, str]] = ()) -> None:
        from jsonschema import exceptions, validators

        try:
            self.document = json.loads(text)
            self.dependencies = {name: json.loads(dep) for name, dep in dependencies}
        except ValueError as exc:
            raise InvalidSchema(f"Invalid schema {text}: {exc}") from None
        if not isinstance(self.document, (dict, bool)):
            raise InvalidSchema(f"Invalid schema {text}: a JSON Schema is an object or a boolean")
        try:
            validators.validator_for(self.document).check_schema(self.document)
        except exceptions.SchemaError as exc:
            raise InvalidSchema(f"Invalid schema {text}: {exc.message}") from None
        for ref in _refs(self.document):
            _follow(ref, self)  # InvalidSchema now rather than at a compatibility check
        self.canonical = json.dumps(self.document, separators=(",", ":"), ensure_ascii=False)

    @property
    def normalized(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    def incompatibilities(self, writer: JsonSchema) -> list[str]:
        return _Comparison(self, writer).problems


class _Comparison:
    def __init__(self, reader: JsonSchema, writer: JsonSchema) -> None:
        self.reader, self.writer = reader, writer
        self.problems: list[str] = []
        self._seen: set[tuple[int, int]] = set()  # (reader node, writer node) pairs under way: recursive $refs
        self.compare(reader.document, writer.document, "#")

    def report(self, kind: str, path: str, detail: str = "") -> None:
        self.problems.append(f"{kind} at {path}" + (f": {detail}" if detail else ""))

    def resolve(self, node: Any, owner: JsonSchema) -> Any:
        for _ in range(32):  # a $ref to a $ref ...
            if not isinstance(node, dict) or "$ref" not in node:
                return node
            node = _follow(node["$ref"], owner)
        return node

    def compare(self, reader: Any, writer: Any, path: str) -> None:
        reader, writer = self.resolve(reader, self.reader), self.resolve(writer, self.writer)
        if reader is True or reader == {} or writer is False:
            return
        if reader is False:
            self.report("SCHEMA_REMOVED", path)
            return
        if writer is True or writer == {}:
            writer = {}
        pair = (id(reader), id(writer))
        if pair in self._seen:
            return
        self._seen.add(pair)
        if self._combined(reader, writer, path):
            return
        self._types(reader, writer, path)
        self._values(reader, writer, path)
        self._bounds(reader, writer, path)
        self._object(reader, writer, path)
        self._array(reader, writer, path)
        if "not" in reader and reader.get("not") != writer.get("not"):
            self.report("NOT_TYPE_CHANGED", path)
        for key in _EQUAL_ONLY:
            if key in reader and reader.get(key) != writer.get(key):
                self.report(_UPPER[key] + "_CHANGED", path)

    def _combined(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> bool:
        r_kind = next((k for k in _COMBINERS if k in reader), None)
        w_kind = next((k for k in _COMBINERS if k in writer), None)
        if r_kind is None and w_kind is None:
            return False
        if r_kind is not None and w_kind is not None and r_kind != w_kind:
            self.report("COMBINED_TYPE_CHANGED", path, f"{w_kind} -> {r_kind}")
            return True
        if r_kind == "allOf" or w_kind == "allOf":
            r_parts = reader.get("allOf", [_without(reader, _COMBINERS)])
            w_parts = writer.get("allOf", [_without(writer, _COMBINERS)])
            for i, part in enumerate(r_parts):  # every constraint of the reader implied by one of the writer's
                if not any(self._fits(part, w) for w in w_parts):
                    self.report("PRODUCT_TYPE_EXTENDED", f"{path}/allOf/{i}")
            return True
        r_parts = reader[r_kind] if r_kind else [_without(reader, _COMBINERS)]
        w_parts = writer[w_kind] if w_kind else [_without(writer, _COMBINERS)]
        for i, part in enumerate(w_parts):  # every alternative of the writer read by one of the reader's
            if not any(self._fits(r, part) for r in r_parts):
                self.report("SUM_TYPE_NARROWED", f"{path}/{w_kind or r_kind}/{i}")
        return True

    def _fits(self, reader: Any, writer: Any) -> bool:
        trial = _Comparison.__new__(_Comparison)
        trial.reader, trial.writer, trial.problems, trial._seen = self.reader, self.writer, [], set(self._seen)
        trial.compare(reader, writer, "")
        return not trial.problems

    def _types(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> None:
        r_types, w_types = _types(reader), _types(writer)
        if r_types is None:
            return
        if w_types is None:
            self.report("TYPE_NARROWED", path, f"any -> {sorted(r_types)}")
            return
        missing = {t for t in w_types if t not in r_types and not (t == "integer" and "number" in r_types)}
        if missing:
            narrowed = r_types & w_types or ("integer" in r_types and "number" in w_types)
            kind = "TYPE_NARROWED" if narrowed else "TYPE_CHANGED"
            self.report(kind, path, f"{sorted(w_types)} -> {sorted(r_types)}")

    def _values(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> None:
        if "enum" in reader:
            allowed = writer.get("enum", [writer["const"]] if "const" in writer else None)
            if allowed is None or any(v not in reader["enum"] for v in allowed):
                self.report("ENUM_ARRAY_NARROWED" if allowed is not None else "ENUM_ARRAY_ADDED", path)
        if "const" in reader and writer.get("const", writer.get("enum", [object()])) not in \
                (reader["const"], [reader["const"]]):
            self.report("CONST_CHANGED", path)

    def _bounds(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> None:
        for key in _MAXIMUMS + _MINIMUMS:
            if key not in reader or not isinstance(reader[key], (int, float)):
                continue
            name = _UPPER[key]
            if key not in writer:
                self.report(f"{name}_ADDED", path)
            elif key in _MAXIMUMS and reader[key] < writer[key]:
                self.report(f"{name}_DECREASED", path, f"{writer[key]} -> {reader[key]}")
            elif key in _MINIMUMS and reader[key] > writer[key]:
                self.report(f"{name}_INCREASED", path, f"{writer[key]} -> {reader[key]}")
        if "pattern" in reader and reader["pattern"] != writer.get("pattern"):
            self.report("PATTERN_ADDED" if "pattern" not in writer else "PATTERN_CHANGED", path)
        if "multipleOf" in reader:
            if "multipleOf" not in writer:
                self.report("MULTIPLE_OF_ADDED", path)
            elif writer["multipleOf"] % reader["multipleOf"] != 0:
                self.report("MULTIPLE_OF_CHANGED", path, f"{writer['multipleOf']} -> {reader['multipleOf']}")
        if reader.get("uniqueItems") and not writer.get("uniqueItems"):
            self.report("UNIQUE_ITEMS_ADDED", path)

    def _object(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> None:
        r_props, w_props = reader.get("properties", {}), writer.get("properties", {})
        r_extra, w_extra = reader.get("additionalProperties", True), writer.get("additionalProperties", True)
        for name in set(reader.get("required", [])) - set(writer.get("required", [])):
            if not (isinstance(r_props.get(name), dict) and "default" in r_props[name]):
                self.report("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required", name)
        for name, schema in w_props.items():
            where = f"{path}/properties/{name}"
            if name in r_props:
                self.compare(r_props[name], schema, where)
            elif r_extra is False:
                self.report("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", where)
            elif r_extra is not True and not self._fits(r_extra, schema):
                self.report("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
        for name, schema in r_props.items():
            if name in w_props:
                continue
            where = f"{path}/properties/{name}"
            if w_extra is False:
                if name in reader.get("required", []):
                    self.report("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", where)
            elif w_extra is True or w_extra == {}:
                if self.resolve(schema, self.reader) not in (True, {}):
                    self.report("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", where)
            elif not self._fits(schema, w_extra):
                self.report("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
        if r_extra is False and w_extra is not False:
            self.report("ADDITIONAL_PROPERTIES_REMOVED", path)
        elif r_extra not in (True, False) and w_extra is not False:
            if w_extra is True:
                self.report("ADDITIONAL_PROPERTIES_NARROWED", path)
            else:
                self.compare(r_extra, w_extra, f"{path}/additionalProperties")
        r_deps, w_deps = reader.get("dependencies", {}), writer.get("dependencies", {})
        for name, dep in r_deps.items():
            if name not in w_deps:
                self.report("DEPENDENCY_ARRAY_ADDED" if isinstance(dep, list) else "DEPENDENCY_SCHEMA_ADDED",
                            f"{path}/dependencies/{name}")
            elif isinstance(dep, list):
                if not set(dep) <= set(w_deps[name]):
                    self.report("DEPENDENCY_ARRAY_EXTENDED", f"{path}/dependencies/{name}")
            else:
                self.compare(dep, w_deps[name], f"{path}/dependencies/{name}")

    def _array(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> None:
        r_items, w_items = reader.get("items", True), writer.get("items", True)
        if isinstance(r_items, list) or isinstance(w_items, list):
            r_list = r_items if isinstance(r_items, list) else []
            w_list = w_items if isinstance(w_items, list) else []
            r_extra = reader.get("additionalItems", r_items if not isinstance(r_items, list) else True)
            w_extra = writer.get("additionalItems", w_items if not isinstance(w_items, list) else True)
            for i in range(max(len(r_list), len(w_list))):
                where = f"{path}/items/{i}"
                if i < len(r_list) and i < len(w_list):
                    self.compare(r_list[i], w_list[i], where)
                elif i < len(w_list):  # an item only the writer has: the reader's additionalItems reads it
                    if r_extra is False:
                        self.report("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", where)
                    elif r_extra is not True and not self._fits(r_extra, w_list[i]):
                        self.report("ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
                elif w_extra is not False and not self._fits(r_list[i], w_extra):
                    self.report("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", where)
            if r_extra is False and w_extra is not False:
                self.report("ADDITIONAL_ITEMS_REMOVED", path)
            return
        self.compare(r_items, w_items, f"{path}/items")


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [ref for key, value in node.items() if key not in ("enum", "const", "default")
                      for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    return []


def _types(schema: dict[str, Any]) -> set[str] | None:
    found = schema.get("type")
    if found is None:
        return None
    return {found} if isinstance(found, str) else set(found)


def _without(schema: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in keys}


def _follow(ref: str, owner: JsonSchema) -> Any:
    """The schema a $ref names: in the schema itself (#/...), or in a referenced schema (by reference name)."""
    base, _, pointer = ref.partition("#")
    document = owner.document if not base else owner.dependencies.get(base)
    if document is None:
        raise InvalidSchema(f"Unresolvable $ref {ref!r}")
    node = document
    for part in [p for p in pointer.split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise InvalidSchema(f"Unresolvable $ref {ref!r}") from None
    return node
