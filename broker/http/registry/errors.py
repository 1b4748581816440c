"""Confluent Schema Registry's errors: the HTTP status, its `error_code` and message, as its REST API answers
them (`{"error_code": 40401, "message": "Subject 'x' not found."}`)."""

from __future__ import annotations

from broker.http.stack import HttpError


def subject_not_found(subject: str) -> HttpError:
    return HttpError(404, f"Subject '{subject}' not found.", 40401)


def version_not_found(version: object) -> HttpError:
    return HttpError(404, f"Version {version} not found.", 40402)


def schema_not_found(schema_id: object = None) -> HttpError:
    return HttpError(404, "Schema not found" if schema_id is None else f"Schema {schema_id} not found", 40403)


def subject_soft_deleted(subject: str) -> HttpError:
    return HttpError(404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently", 40404)


def subject_not_soft_deleted(subject: str) -> HttpError:
    return HttpError(404, f"Subject '{subject}' was not deleted first before being permanently deleted", 40405)


def version_soft_deleted(subject: str, version: int) -> HttpError:
    return HttpError(404, f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete "
                          "permanently", 40406)


def version_not_soft_deleted(subject: str, version: int) -> HttpError:
    return HttpError(404, f"Subject '{subject}' Version {version} was not deleted first before being permanently "
                          "deleted", 40407)


def subject_compatibility_not_configured(subject: str) -> HttpError:
    return HttpError(404, f"Subject '{subject}' does not have subject-level compatibility configured", 40408)


def subject_mode_not_configured(subject: str) -> HttpError:
    return HttpError(404, f"Subject '{subject}' does not have subject-level mode configured", 40409)


def incompatible(messages: list[str]) -> HttpError:
    return HttpError(409, "Schema being registered is incompatible with an earlier schema for subject; "
                          f"details: {messages}", 409)


def invalid_schema(message: str) -> HttpError:
    return HttpError(422, message, 42201)


def invalid_version(version: object) -> HttpError:
    return HttpError(422, f"The specified version '{version}' is not a valid version id. Allowed values are between "
                          "[1, 2^31-1] and the string \"latest\"", 42202)


def invalid_compatibility(level: object) -> HttpError:
    return HttpError(422, f"Invalid compatibility level {level!r}. Valid values are none, backward, forward, full, "
                          "backward_transitive, forward_transitive, and full_transitive", 42203)


def invalid_mode(mode: object) -> HttpError:
    return HttpError(422, f"Invalid mode {mode!r}. Valid values are READWRITE, READONLY, READONLY_OVERRIDE and "
                          "IMPORT", 42204)


def not_permitted(message: str) -> HttpError:
    return HttpError(422, message, 42205)


def reference_exists(message: str) -> HttpError:
    return HttpError(422, message, 42206)


def id_does_not_match(message: str) -> HttpError:
    return HttpError(422, message, 42207)


def invalid_subject(subject: str) -> HttpError:
    return HttpError(422, f"Invalid subject {subject!r}", 42208)


def store_error(message: str) -> HttpError:
    return HttpError(500, message, 50001)


def timed_out(message: str) -> HttpError:
    return HttpError(500, message, 50002)


def forwarding_failed(message: str) -> HttpError:
    return HttpError(500, message, 50003)


def unknown_leader(message: str) -> HttpError:
    return HttpError(500, message, 50004)


def bad_request(message: str) -> HttpError:
    """Rest-utils' answer to a body that is not JSON, or JSON of the wrong shape (400, code 400)."""
    return HttpError(400, message, 400)
