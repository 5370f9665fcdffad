"""Kubernetes `Status` failures: the error bodies clients parse (`reason`, `code`, `details.causes`).

Every failure the virtual apiserver returns is an `ApiError`; its `status()` is the exact JSON
shape kube-apiserver sends, so client code written against a real cluster handles ours alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Kinds as apiserver names them in messages (`pods "x" not found`) and in Status.details.kind.
RESOURCE_OF_KIND = {"Pod": "pods", "Node": "nodes", "Namespace": "namespaces", "Event": "events"}


@dataclass(frozen=True)
class FieldError:
    """One invalid field, as in apimachinery's field.Error (`type` becomes the cause reason)."""

    field: str
    type: str  # FieldValueInvalid, FieldValueRequired, FieldValueDuplicate, ...
    detail: str
    value: Any = None

    @property
    def message(self) -> str:
        """The cause message, built like field.Error.ErrorBody()."""
        if self.type == "FieldValueRequired":
            text = "Required value"
        elif self.type == "FieldValueForbidden":
            text = "Forbidden"
        elif self.type == "FieldValueTooLong":
            text = "Too long"
        elif self.type == "FieldValueDuplicate":
            text = f"Duplicate value: {_quote(self.value)}"
        elif self.type == "FieldValueNotSupported":
            text = f"Unsupported value: {_quote(self.value)}"
        else:
            text = f"Invalid value: {_quote(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def invalid(field_path: str, value: Any, detail: str) -> FieldError:
    return FieldError(field_path, "FieldValueInvalid", detail, value)


def required(field_path: str, detail: str = "") -> FieldError:
    return FieldError(field_path, "FieldValueRequired", detail)


def not_supported(field_path: str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(f'"{s}"' for s in supported)
    return FieldError(field_path, "FieldValueNotSupported", detail, value)


def forbidden(field_path: str, detail: str) -> FieldError:
    return FieldError(field_path, "FieldValueForbidden", detail)


def duplicate(field_path: str, value: Any) -> FieldError:
    return FieldError(field_path, "FieldValueDuplicate", "", value)


@dataclass
class ApiError(Exception):
    """A request the apiserver refuses; `status()` is the response body."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found(kind: str, name: str) -> ApiError:
    resource = RESOURCE_OF_KIND.get(kind, kind.lower() + "s")
    return ApiError(404, "NotFound", f'{resource} "{name}" not found', {"name": name, "kind": resource})


def already_exists(kind: str, name: str) -> ApiError:
    resource = RESOURCE_OF_KIND.get(kind, kind.lower() + "s")
    return ApiError(409, "AlreadyExists", f'{resource} "{name}" already exists', {"name": name, "kind": resource})


def conflict(kind: str, name: str, detail: str) -> ApiError:
    resource = RESOURCE_OF_KIND.get(kind, kind.lower() + "s")
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource} "{name}": {detail}',
        {"name": name, "kind": resource},
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def unprocessable(kind: str, name: str, errors: list[FieldError]) -> ApiError:
    """422 Invalid with one cause per field error, message formatted as the apiserver does."""
    parts = [f"{e.field}: {e.message}" for e in errors]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    causes = [{"reason": e.type, "message": e.message, "field": e.field} for e in errors]
    return ApiError(
        422, "Invalid", f'{kind} "{name}" is invalid: {summary}', {"name": name, "kind": kind, "causes": causes}
    )


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def method_not_allowed(detail: str = "the server does not allow this method on the requested resource") -> ApiError:
    return ApiError(405, "MethodNotAllowed", detail)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/merge-patch+json, application/strategic-merge-patch+json, "
        f"application/json-patch+json (got {content_type!r})",
    )


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def internal_error(message: str) -> ApiError:
    return ApiError(500, "InternalError", message)


def service_unavailable(message: str = "the server is currently unable to handle the request") -> ApiError:
    return ApiError(503, "ServiceUnavailable", message)
