"""The registry's state, rebuilt from `_schemas` (every broker follows the topic and applies its records in
order) and the operations on it: each write operation checks the request against the state and returns the
records to append and the answer, so the leader appends them and every broker, the leader included, learns the
change by reading them back. Pure: no I/O, unit-tested as it is.

Ids are global and stable: the same schema (type, text, references) registered under several subjects has one
id; a new schema gets the largest id ever seen plus one, and a subject's new version its latest plus one, as
Confluent's registry numbers them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from broker.http.registry import errors
from broker.http.registry.compatibility import DEFAULT_COMPATIBILITY, Compatibility, Mode, check
from broker.http.registry.records import (
    Entry,
    KeyType,
    Reference,
    StoredSchema,
    config_record,
    delete_subject_record,
    mode_record,
    schema_record,
    stored_schema,
    tombstone,
)
from broker.http.registry.schema_types import InvalidSchema, ParsedSchema
from broker.http.registry.schemas import parse

log = logging.getLogger(__name__)

Record = tuple[bytes, bytes | None]
MAX_VERSION = 2**31 - 1


@dataclass(frozen=True)
class SchemaText:
    schema_type: str
    schema: str
    references: tuple[Reference, ...]


class RegistryState:
    def __init__(self) -> None:
        self.versions: dict[str, dict[int, StoredSchema]] = {}  # subject -> version -> its record
        self.configs: dict[str | None, dict[str, Any]] = {}  # subject (None: global) -> CONFIG value
        self.modes: dict[str | None, str] = {}
        self.max_id = 0  # the largest id ever seen: ids are never given twice
        self._parsed: dict[SchemaText, ParsedSchema] = {}

    # -- following `_schemas` ---------------------------------------------------------------------------------
    def apply(self, entry: Entry) -> None:
        if entry.key_type is KeyType.SCHEMA:
            assert entry.version is not None
            subject = entry.subject or ""
            if entry.value is None:
                self.versions.get(subject, {}).pop(entry.version, None)
                if not self.versions.get(subject, True):
                    del self.versions[subject]
                return
            stored = stored_schema(entry)
            self.versions.setdefault(stored.subject, {})[stored.version] = stored
            self.max_id = max(self.max_id, stored.id)
        elif entry.key_type is KeyType.CONFIG:
            if entry.value is None:
                self.configs.pop(entry.subject, None)
            else:
                self.configs[entry.subject] = entry.value
        elif entry.key_type is KeyType.MODE:
            if entry.value is None or "mode" not in entry.value:
                self.modes.pop(entry.subject, None)
            else:
                self.modes[entry.subject] = str(entry.value["mode"])
        elif entry.key_type is KeyType.DELETE_SUBJECT:
            value = entry.value or {}
            subject, last = value.get("subject", entry.subject), value.get("version", MAX_VERSION)
            for version, stored in self.versions.get(subject, {}).items():
                if version <= last:
                    self.versions[subject][version] = replace(stored, deleted=True)
        elif entry.key_type is KeyType.CLEAR_SUBJECT:
            subject = (entry.value or {}).get("subject", entry.subject)
            kept = {v: s for v, s in self.versions.get(subject, {}).items() if not s.deleted}
            if kept:
                self.versions[subject] = kept
            else:
                self.versions.pop(subject, None)

    # -- reading -----------------------------------------------------------------------------------------------
    def subjects(self, *, deleted: bool = False, deleted_only: bool = False, prefix: str = "") -> list[str]:
        out = []
        for subject, versions in sorted(self.versions.items()):
            if not subject.startswith(prefix):
                continue
            live = any(not s.deleted for s in versions.values())
            if (deleted_only and not live) or (not deleted_only and (live or deleted)):
                out.append(subject)
        return out

    def subject_versions(self, subject: str, *, deleted: bool = False) -> list[StoredSchema]:
        """The subject's versions, oldest first (40401 if it has none)."""
        found = [s for _, s in sorted(self.versions.get(subject, {}).items()) if deleted or not s.deleted]
        if not found:
            raise errors.subject_not_found(subject)
        return found

    def version(self, subject: str, version: str | int, *, deleted: bool = False) -> StoredSchema:
        """`version`: a number, or "latest" (or -1): the latest version (not deleted, unless `deleted`)."""
        number = parse_version(version)
        versions = self.subject_versions(subject, deleted=True)
        if number == -1:
            live = [s for s in versions if deleted or not s.deleted]
            if not live:
                raise errors.subject_not_found(subject)
            return live[-1]
        found = next((s for s in versions if s.version == number), None)
        if found is None or (found.deleted and not deleted):
            raise errors.version_not_found(number)
        return found

    def schema_by_id(self, schema_id: int, *, subject: str | None = None) -> StoredSchema:
        for name, versions in self.versions.items():
            if subject is not None and name != subject:
                continue
            for stored in versions.values():
                if stored.id == schema_id:
                    return stored
        raise errors.schema_not_found(schema_id)

    def usages(self, schema_id: int, *, deleted: bool = False) -> list[StoredSchema]:
        """The subject versions that have the schema `schema_id`."""
        return [s for _, versions in sorted(self.versions.items()) for _, s in sorted(versions.items())
                if s.id == schema_id and (deleted or not s.deleted)]

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """The ids of the (live) schemas that reference subject `version`."""
        return sorted({s.id for versions in self.versions.values() for s in versions.values() if not s.deleted
                       and any(r.subject == subject and r.version == version for r in s.references)})

    def compatibility(self, subject: str | None) -> Compatibility:
        config = self.configs.get(subject) or self.configs.get(None) or {}
        try:
            return Compatibility(config.get("compatibilityLevel", DEFAULT_COMPATIBILITY.value))
        except ValueError:
            return DEFAULT_COMPATIBILITY

    def normalize(self, subject: str | None) -> bool:
        config = self.configs.get(subject) or self.configs.get(None) or {}
        return bool(config.get("normalize", False))

    def mode(self, subject: str | None) -> Mode:
        try:
            return Mode(self.modes.get(subject) or self.modes.get(None) or Mode.READWRITE.value)
        except ValueError:
            return Mode.READWRITE

    # -- schemas, parsed ---------------------------------------------------------------------------------------
    def parsed(self, text: SchemaText) -> ParsedSchema:
        """The schema parsed with its references (InvalidSchema)."""
        found = self._parsed.get(text)
        if found is None:
            found = self._parsed[text] = parse(text.schema_type, text.schema, self.dependencies(text.references))
        return found

    def parsed_stored(self, stored: StoredSchema) -> ParsedSchema:
        return self.parsed(_text(stored))

    def dependencies(self, references: tuple[Reference, ...], seen: frozenset[str] = frozenset()) \
            -> list[tuple[str, str]]:
        """(name, schema text) of everything `references` leads to, each after what it references."""
        out: list[tuple[str, str]] = []
        for ref in references:
            if ref.name in seen:
                continue
            stored = self.versions.get(ref.subject, {}).get(ref.version)
            if stored is None:
                raise InvalidSchema(f"Invalid reference {ref.name}: subject {ref.subject!r} version {ref.version} "
                                    "not found")
            out += self.dependencies(stored.references, seen | {ref.name})
            out.append((ref.name, stored.schema))
        return out

    def _parse_request(self, schema_type: str, schema: str, references: tuple[Reference, ...]) -> ParsedSchema:
        try:
            return self.parsed(SchemaText(schema_type, schema, references))
        except InvalidSchema as exc:
            raise errors.invalid_schema(str(exc)) from None

    def lookup(self, subject: str, schema_type: str, schema: str, references: tuple[Reference, ...], *,
               normalize: bool = False, deleted: bool = False) -> StoredSchema:
        """POST /subjects/{subject}: the version of `subject` that has this schema (40401, 40403)."""
        versions = self.subject_versions(subject, deleted=deleted)
        parsed = self._parse_request(schema_type, schema, references)
        normalize = normalize or self.normalize(subject)
        for stored in reversed(versions):
            if self._same(stored, parsed, references, normalize):
                return stored
        raise errors.schema_not_found()

    def _same(self, stored: StoredSchema, parsed: ParsedSchema, references: tuple[Reference, ...],
              normalize: bool) -> bool:
        if stored.schema_type != parsed.schema_type or stored.references != references:
            return False
        if stored.schema in (parsed.canonical, parsed.normalized):
            return True
        if not normalize:
            return False
        try:
            return self.parsed(_text(stored)).normalized == parsed.normalized
        except InvalidSchema:
            return False

    # -- writing: the records to append, and the answer --------------------------------------------------------
    def register(self, subject: str, schema_type: str, schema: str, references: tuple[Reference, ...], *,
                 normalize: bool = False, schema_id: int | None = None, version: int | None = None) \
            -> tuple[list[Record], dict[str, Any]]:
        mode = self.mode(subject)
        if mode in (Mode.READONLY, Mode.READONLY_OVERRIDE):
            raise errors.not_permitted(f"Subject {subject} is in read-only mode")
        if (schema_id is not None and schema_id >= 0) and mode is not Mode.IMPORT:
            raise errors.not_permitted(f"Subject {subject} is not in import mode")
        parsed = self._parse_request(schema_type, schema, references)
        normalize = normalize or self.normalize(subject)
        text = parsed.normalized if normalize else parsed.canonical
        existing = [s for _, s in sorted(self.versions.get(subject, {}).items())]
        live = [s for s in existing if not s.deleted]
        for stored in reversed(live):
            if self._same(stored, parsed, references, normalize) and schema_id in (None, -1, stored.id):
                return [], {"id": stored.id}
        if mode is Mode.IMPORT:
            if schema_id is None or schema_id < 0:
                raise errors.not_permitted(f"Subject {subject} is in import mode: a registration gives its id")
            other = self._with_id(schema_id)
            if other is not None and (other.schema_type, other.schema, other.references) != \
                    (schema_type, text, references):
                raise errors.id_does_not_match(f"Schema id {schema_id} already exists with a different schema")
        else:
            problems = check(self.compatibility(subject), parsed, [self.parsed(_text(s)) for s in live])
            if problems:
                raise errors.incompatible(problems)
            same = self._same_schema_id(parsed, references, normalize)
            schema_id = same if same is not None else self.max_id + 1
        if version is None or version <= 0:
            version = (existing[-1].version if existing else 0) + 1
        elif any(s.version == version for s in existing):
            raise errors.not_permitted(f"Version {version} of subject {subject} already exists")
        stored = StoredSchema(subject, version, schema_id, schema_type, text, references)
        return [schema_record(stored)], {"id": schema_id}

    def _with_id(self, schema_id: int) -> StoredSchema | None:
        return next((s for versions in self.versions.values() for s in versions.values() if s.id == schema_id), None)

    def _same_schema_id(self, parsed: ParsedSchema, references: tuple[Reference, ...], normalize: bool) -> int | None:
        """The id the same schema has under any subject (deleted versions included, as Confluent's lookup)."""
        for versions in self.versions.values():
            for stored in versions.values():
                if self._same(stored, parsed, references, normalize):
                    return stored.id
        return None

    def _writable(self, subject: str | None) -> None:
        if self.mode(subject) in (Mode.READONLY, Mode.READONLY_OVERRIDE):
            raise errors.not_permitted(f"Subject {subject} is in read-only mode")

    def delete_subject(self, subject: str, *, permanent: bool) -> tuple[list[Record], list[int]]:
        self._writable(subject)
        versions = self.subject_versions(subject, deleted=True)
        live = [s for s in versions if not s.deleted]
        if permanent:
            if live:
                raise errors.subject_not_soft_deleted(subject)
            records: list[Record] = [tombstone(subject, s.version) for s in versions]
            if subject in self.configs:
                records.append(config_record(subject, None))
            if subject in self.modes:
                records.append(mode_record(subject, None))
            return records, [s.version for s in versions]
        if not live:
            raise errors.subject_soft_deleted(subject)
        for stored in live:
            self._not_referenced(stored)
        return [delete_subject_record(subject, live[-1].version)], [s.version for s in live]

    def delete_version(self, subject: str, version: str | int, *, permanent: bool) -> tuple[list[Record], int]:
        self._writable(subject)
        stored = self.version(subject, version, deleted=True)
        if parse_version(version) == -1 and not permanent:
            stored = self.version(subject, version)
        if permanent:
            if not stored.deleted:
                raise errors.version_not_soft_deleted(subject, stored.version)
            return [tombstone(subject, stored.version)], stored.version
        if stored.deleted:
            raise errors.version_soft_deleted(subject, stored.version)
        self._not_referenced(stored)
        return [schema_record(replace(stored, deleted=True))], stored.version

    def _not_referenced(self, stored: StoredSchema) -> None:
        users = self.referenced_by(stored.subject, stored.version)
        if users:
            raise errors.reference_exists(f"One or more references exist to the schema {{subject={stored.subject}, "
                                          f"version={stored.version}}} (ids {users})")

    def set_config(self, subject: str | None, body: dict[str, Any]) -> tuple[list[Record], dict[str, Any]]:
        level = body.get("compatibility", body.get("compatibilityLevel"))
        try:
            level = Compatibility(str(level).upper()).value
        except ValueError:
            raise errors.invalid_compatibility(level) from None
        value: dict[str, Any] = {"compatibilityLevel": level}
        answer: dict[str, Any] = {"compatibility": level}
        if body.get("normalize") is not None:
            value["normalize"] = answer["normalize"] = bool(body["normalize"])
        return [config_record(subject, value)], answer

    def get_config(self, subject: str | None, *, default_to_global: bool = False) -> dict[str, Any]:
        config = self.configs.get(subject)
        if config is None and subject is not None and not default_to_global:
            raise errors.subject_compatibility_not_configured(subject)
        config = config or self.configs.get(None) or {}
        out = {"compatibilityLevel": config.get("compatibilityLevel", DEFAULT_COMPATIBILITY.value)}
        if "normalize" in config:
            out["normalize"] = config["normalize"]
        return out

    def delete_config(self, subject: str | None) -> tuple[list[Record], dict[str, Any]]:
        if subject is not None and subject not in self.configs:
            if subject not in self.versions:
                raise errors.subject_not_found(subject)
            raise errors.subject_compatibility_not_configured(subject)
        previous = self.get_config(subject, default_to_global=True)
        return [config_record(subject, None)], previous

    def set_mode(self, subject: str | None, mode: object, *,
                 force: bool = False) -> tuple[list[Record], dict[str, Any]]:
        try:
            chosen = Mode(str(mode).upper())
        except ValueError:
            raise errors.invalid_mode(mode) from None
        if chosen is Mode.IMPORT and not force and self.mode(subject) is not Mode.IMPORT:
            has = self.subjects() if subject is None else self.subjects(prefix=subject)
            if subject is None and has or subject is not None and subject in has:
                raise errors.not_permitted("Cannot import since found existing subjects")
        return [mode_record(subject, chosen.value)], {"mode": chosen.value}

    def get_mode(self, subject: str | None, *, default_to_global: bool = False) -> dict[str, Any]:
        if subject is not None and subject not in self.modes and not default_to_global:
            raise errors.subject_mode_not_configured(subject)
        return {"mode": self.mode(subject).value}

    def delete_mode(self, subject: str) -> tuple[list[Record], dict[str, Any]]:
        if subject not in self.modes:
            raise errors.subject_not_found(subject)
        previous = {"mode": self.modes[subject]}
        return [mode_record(subject, None)], previous

    def check_compatibility(self, subject: str, version: str | int | None, schema_type: str, schema: str,
                            references: tuple[Reference, ...]) -> list[str]:
        """POST /compatibility/subjects/{subject}/versions[/{version}]: why the schema may not be registered
        (against that version, or those the subject's level names); empty: it may."""
        parsed = self._parse_request(schema_type, schema, references)
        level = self.compatibility(subject)
        if version is None:
            live = [self.parsed(_text(s)) for s in self.versions.get(subject, {}).values() if not s.deleted]
            return check(level, parsed, live)
        against = self.version(subject, version)
        if level is Compatibility.NONE:
            return []
        plain = Compatibility(level.value.removesuffix("_TRANSITIVE"))
        return check(plain, parsed, [self.parsed(_text(against))])


def _text(stored: StoredSchema) -> SchemaText:
    return SchemaText(stored.schema_type, stored.schema, stored.references)


def parse_version(version: str | int) -> int:
    """A version of the API: 1 .. 2^31-1, "latest" or -1 (the latest); 42202 otherwise."""
    if isinstance(version, int) and not isinstance(version, bool):
        number = version
    elif isinstance(version, str) and version.lower() == "latest":
        return -1
    else:
        try:
            number = int(str(version))
        except ValueError:
            raise errors.invalid_version(version) from None
    if number == -1 or 1 <= number <= MAX_VERSION:
        return number
    raise errors.invalid_version(version)
