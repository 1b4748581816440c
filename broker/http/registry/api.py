"""Confluent Schema Registry's REST API (the paths, query parameters, bodies, content type and error bodies its
clients use), on one broker's SchemaRegistry. The reference: Confluent's "Schema Registry API Reference".

    GET    /schemas/types | /schemas | /schemas/ids/{id}[/schema|/subjects|/versions] | /contexts
    GET    /subjects                                  ?deleted ?deleted_only ?subjectPrefix
    POST   /subjects/{subject}/versions               register (?normalize)
    POST   /subjects/{subject}                        look a schema up (?normalize ?deleted)
    GET    /subjects/{subject}/versions[/{version}[/schema|/referencedby]]   ?deleted
    DELETE /subjects/{subject}[/versions/{version}]   soft, or ?permanent=true
    GET|PUT|DELETE /config[/{subject}]   GET|PUT|DELETE /mode[/{subject}]
    POST   /compatibility/subjects/{subject}/versions[/{version}]   ?verbose
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from broker.http.registry import errors
from broker.http.registry.records import Reference, StoredSchema
from broker.http.registry.schema_types import SCHEMA_TYPES
from broker.http.registry.service import CONTENT_TYPE, SchemaRegistry, json_response
from broker.http.registry.state import RegistryState, parse_version
from broker.http.stack import HttpError, HttpService


def registry_service(registry: SchemaRegistry) -> HttpService:
    api = _Api(registry)
    subject = "/subjects/{subject:path}"
    routes = [
        Route("/", api.root, methods=["GET"]),
        Route("/schemas/types", api.schema_types, methods=["GET"]),
        Route("/schemas", api.schemas, methods=["GET"]),
        Route("/schemas/ids/{id}", api.schema_by_id, methods=["GET"]),
        Route("/schemas/ids/{id}/schema", api.raw_schema_by_id, methods=["GET"]),
        Route("/schemas/ids/{id}/subjects", api.subjects_of_id, methods=["GET"]),
        Route("/schemas/ids/{id}/versions", api.versions_of_id, methods=["GET"]),
        Route("/contexts", api.contexts, methods=["GET"]),
        Route("/subjects", api.subjects, methods=["GET"]),
        Route(subject + "/versions/{version}/schema", api.raw_version, methods=["GET"]),
        Route(subject + "/versions/{version}/referencedby", api.referenced_by, methods=["GET"]),
        Route(subject + "/versions/{version}", api.version, methods=["GET"]),
        Route(subject + "/versions/{version}", api.delete_version, methods=["DELETE"]),
        Route(subject + "/versions", api.versions, methods=["GET"]),
        Route(subject + "/versions", api.register, methods=["POST"]),
        Route("/config", api.config, methods=["GET", "PUT", "DELETE"]),
        Route("/config/{subject:path}", api.config, methods=["GET", "PUT", "DELETE"]),
        Route("/mode", api.mode, methods=["GET", "PUT", "DELETE"]),
        Route("/mode/{subject:path}", api.mode, methods=["GET", "PUT", "DELETE"]),
        Route("/compatibility" + subject + "/versions/{version}", api.compatibility, methods=["POST"]),
        Route("/compatibility" + subject + "/versions", api.compatibility, methods=["POST"]),
        Route(subject, api.lookup, methods=["POST"]),
        Route(subject, api.delete_subject, methods=["DELETE"]),
    ]
    return HttpService("schema-registry", routes, error_body)


def error_body(error: HttpError) -> Response:
    return JSONResponse({"error_code": error.code, "message": error.message}, status_code=error.status,
                        media_type=CONTENT_TYPE)


class _Api:
    def __init__(self, registry: SchemaRegistry) -> None:
        self.registry = registry

    # -- schemas ------------------------------------------------------------------------------------------------
    async def root(self, request: Request) -> Response:
        return json_response({})

    async def schema_types(self, request: Request) -> Response:
        return json_response(list(SCHEMA_TYPES))

    async def contexts(self, request: Request) -> Response:
        return json_response(["."])

    async def schemas(self, request: Request) -> Response:
        prefix = request.query_params.get("subjectPrefix", "")
        deleted, latest_only = _flag(request, "deleted"), _flag(request, "latestOnly")

        def answer(state: RegistryState) -> Any:
            out = []
            for name in state.subjects(deleted=deleted, prefix=prefix):
                versions = state.subject_versions(name, deleted=deleted)
                out += [_version_json(s) for s in (versions[-1:] if latest_only else versions)]
            return _page(request, out)

        return await self.registry.read(request, answer)

    async def schema_by_id(self, request: Request) -> Response:
        schema_id, subject, fmt = _id(request), request.query_params.get("subject"), request.query_params.get("format")

        def answer(state: RegistryState) -> Any:
            stored = state.schema_by_id(schema_id, subject=subject)
            out: dict[str, Any] = {}
            if stored.schema_type != "AVRO":
                out["schemaType"] = stored.schema_type
            if stored.references:
                out["references"] = [r.to_json() for r in stored.references]
            out["schema"] = _formatted(state, stored, fmt)
            return out

        return await self.registry.read(request, answer)

    async def raw_schema_by_id(self, request: Request) -> Response:
        schema_id, subject = _id(request), request.query_params.get("subject")
        return await self.registry.read(request, lambda state: _raw(state.schema_by_id(schema_id, subject=subject)))

    async def subjects_of_id(self, request: Request) -> Response:
        schema_id, deleted = _id(request), _flag(request, "deleted")

        def answer(state: RegistryState) -> Any:
            found = state.usages(schema_id, deleted=deleted)
            if not found:
                raise errors.schema_not_found(schema_id)
            return _page(request, sorted({s.subject for s in found}))

        return await self.registry.read(request, answer)

    async def versions_of_id(self, request: Request) -> Response:
        schema_id, deleted = _id(request), _flag(request, "deleted")

        def answer(state: RegistryState) -> Any:
            found = state.usages(schema_id, deleted=deleted)
            if not found:
                raise errors.schema_not_found(schema_id)
            return _page(request, [{"subject": s.subject, "version": s.version} for s in found])

        return await self.registry.read(request, answer)

    # -- subjects -----------------------------------------------------------------------------------------------
    async def subjects(self, request: Request) -> Response:
        prefix = request.query_params.get("subjectPrefix", "")
        deleted, deleted_only = _flag(request, "deleted"), _flag(request, "deleted_only")
        return await self.registry.read(request, lambda state: _page(
            request, state.subjects(deleted=deleted, deleted_only=deleted_only, prefix=prefix)))

    async def versions(self, request: Request) -> Response:
        subject, deleted = request.path_params["subject"], _flag(request, "deleted")
        return await self.registry.read(request, lambda state: _page(
            request, [s.version for s in state.subject_versions(subject, deleted=deleted)]))

    async def version(self, request: Request) -> Response:
        subject, version, deleted = request.path_params["subject"], _version(request), _flag(request, "deleted")
        fmt = request.query_params.get("format")

        def answer(state: RegistryState) -> Any:
            stored = state.version(subject, version, deleted=deleted)
            return _version_json(stored, _formatted(state, stored, fmt))

        return await self.registry.read(request, answer)

    async def raw_version(self, request: Request) -> Response:
        subject, version, deleted = request.path_params["subject"], _version(request), _flag(request, "deleted")
        return await self.registry.read(request, lambda state: _raw(state.version(subject, version, deleted=deleted)))

    async def referenced_by(self, request: Request) -> Response:
        subject, version = request.path_params["subject"], _version(request)

        def answer(state: RegistryState) -> Any:
            stored = state.version(subject, version, deleted=True)
            return state.referenced_by(subject, stored.version)

        return await self.registry.read(request, answer)

    async def register(self, request: Request) -> Response:
        subject, body = request.path_params["subject"], await _body(request)
        schema_type, schema, references = _schema_of(body)
        normalize = _flag(request, "normalize")
        schema_id, version = _optional_int(body, "id"), _optional_int(body, "version")
        return await self.registry.write(request, lambda state: state.register(
            subject, schema_type, schema, references, normalize=normalize, schema_id=schema_id, version=version))

    async def lookup(self, request: Request) -> Response:
        subject, body = request.path_params["subject"], await _body(request)
        schema_type, schema, references = _schema_of(body)
        normalize, deleted = _flag(request, "normalize"), _flag(request, "deleted")
        return await self.registry.read(request, lambda state: _version_json(state.lookup(
            subject, schema_type, schema, references, normalize=normalize, deleted=deleted)))

    async def delete_subject(self, request: Request) -> Response:
        subject, permanent = request.path_params["subject"], _flag(request, "permanent")
        return await self.registry.write(request, lambda state: state.delete_subject(subject, permanent=permanent))

    async def delete_version(self, request: Request) -> Response:
        subject, version, permanent = request.path_params["subject"], _version(request), _flag(request, "permanent")
        return await self.registry.write(request, lambda state: state.delete_version(
            subject, version, permanent=permanent))

    # -- config, mode, compatibility --------------------------------------------------------------------------
    async def config(self, request: Request) -> Response:
        subject = request.path_params.get("subject")
        if request.method == "GET":
            to_global = _flag(request, "defaultToGlobal")
            return await self.registry.read(request, lambda state: state.get_config(
                subject, default_to_global=to_global))
        if request.method == "DELETE":
            return await self.registry.write(request, lambda state: state.delete_config(subject))
        body = await _body(request)
        return await self.registry.write(request, lambda state: state.set_config(subject, body))

    async def mode(self, request: Request) -> Response:
        subject = request.path_params.get("subject")
        if request.method == "GET":
            to_global = _flag(request, "defaultToGlobal")
            return await self.registry.read(request, lambda state: state.get_mode(subject, default_to_global=to_global))
        if request.method == "DELETE":
            if subject is None:
                raise errors.not_permitted("The global mode cannot be deleted")
            return await self.registry.write(request, lambda state: state.delete_mode(subject))
        body = await _body(request)
        force = _flag(request, "force")
        return await self.registry.write(request, lambda state: state.set_mode(subject, body.get("mode"), force=force))

    async def compatibility(self, request: Request) -> Response:
        subject, body = request.path_params["subject"], await _body(request)
        version = _version(request) if "version" in request.path_params else None
        schema_type, schema, references = _schema_of(body)
        verbose = _flag(request, "verbose")

        def answer(state: RegistryState) -> Any:
            problems = state.check_compatibility(subject, version, schema_type, schema, references)
            out: dict[str, Any] = {"is_compatible": not problems}
            if verbose:
                out["messages"] = problems
            return out

        return await self.registry.read(request, answer)


# -- request parts -------------------------------------------------------------------------------------------------
async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = json.loads(raw) if raw.strip() else {}
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"Unexpected character in the request body: {exc}") from None
    if not isinstance(body, dict):
        raise errors.bad_request(f"Cannot deserialize the request body from {type(body).__name__}: a JSON object "
                                 "is expected")
    return body


def _schema_of(body: dict[str, Any]) -> tuple[str, str, tuple[Reference, ...]]:
    schema = body.get("schema")
    if not isinstance(schema, str) or not schema.strip():
        raise errors.invalid_schema("Empty schema")
    schema_type = body.get("schemaType") or "AVRO"
    if not isinstance(schema_type, str) or schema_type.upper() not in SCHEMA_TYPES:
        raise errors.invalid_schema(f"Invalid schema type {schema_type}")
    raw_references = body.get("references") or []
    try:
        references = tuple(Reference(str(r["name"]), str(r["subject"]), parse_version(r["version"]))
                           for r in raw_references)
    except (KeyError, TypeError) as exc:
        raise errors.bad_request(f"Invalid references {raw_references!r}: {exc}") from None
    return schema_type.upper(), schema, references


def _optional_int(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.bad_request(f"{name} must be an integer, not {value!r}")
    return value


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "false").lower() == "true"


def _id(request: Request) -> int:
    text = request.path_params["id"]
    try:
        return int(text)
    except ValueError:
        raise errors.schema_not_found(text) from None


def _version(request: Request) -> str | int:
    version = request.path_params["version"]
    parse_version(version)  # 42202 before anything else
    return version


def _page(request: Request, items: list[Any]) -> list[Any]:
    try:
        offset = max(0, int(request.query_params.get("offset", 0)))
        limit = int(request.query_params.get("limit", -1))
    except ValueError:
        raise errors.bad_request("offset and limit are integers") from None
    return items[offset:] if limit < 0 else items[offset:offset + limit]


def _version_json(stored: StoredSchema, schema: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"subject": stored.subject, "version": stored.version, "id": stored.id}
    if stored.schema_type != "AVRO":
        out["schemaType"] = stored.schema_type
    if stored.references:
        out["references"] = [r.to_json() for r in stored.references]
    out["schema"] = stored.schema if schema is None else schema
    return out


def _formatted(state: RegistryState, stored: StoredSchema, fmt: str | None) -> str:
    """The schema in the `format` asked for: Protobuf's "serialized" (a base64 FileDescriptorProto, what
    confluent-kafka's Protobuf serde reads); otherwise as stored."""
    if fmt == "serialized" and stored.schema_type == "PROTOBUF":
        from broker.http.registry.protobuf_schema import ProtobufSchema

        parsed = state.parsed_stored(stored)
        assert isinstance(parsed, ProtobufSchema)
        return parsed.serialized()
    return stored.schema


def _raw(stored: StoredSchema) -> Response:
    return Response(stored.schema, media_type=CONTENT_TYPE)
