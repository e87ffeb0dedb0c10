"""API errors and their JSON:API error documents: the only place errors are shaped."""

from __future__ import annotations

import json
from typing import Any

from chalice.app import Response

JSONAPI = "application/vnd.api+json"


class ApiError(Exception):
    """An error the client should see; raised anywhere, rendered by the route wrapper."""

    status = 500
    title = "internal server error"

    def __init__(
        self,
        detail: str | None = None,
        *,
        pointer: str | None = None,
        parameter: str | None = None,
        title: str | None = None,
        headers: dict[str, str] | None = None,
        more: tuple[ApiError, ...] = (),
    ) -> None:
        super().__init__(detail or title or self.title)
        self.detail = detail
        self.pointer = pointer
        self.parameter = parameter
        if title:
            self.title = title
        self.headers = headers or {}
        # Further errors of the same request, answered after this one (as TFE lists every
        # validation that failed, and go-tfe compares the whole list).
        self.more = more

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"status": str(self.status), "title": self.title}
        if self.detail:
            error["detail"] = self.detail
        if self.pointer is not None:
            error["source"] = {"pointer": self.pointer}
        elif self.parameter is not None:
            error["source"] = {"parameter": self.parameter}
        return error


class BadRequest(ApiError):
    status = 400
    title = "bad request"


class Unauthorized(ApiError):
    status = 401
    title = "unauthorized"


class Forbidden(ApiError):
    status = 403
    title = "forbidden"


class NotFound(ApiError):
    status = 404
    title = "not found"


class MethodNotAllowed(ApiError):
    status = 405
    title = "method not allowed"


class Conflict(ApiError):
    status = 409
    title = "conflict"


class UnsupportedMediaType(ApiError):
    status = 415
    title = "unsupported media type"


class Unprocessable(ApiError):
    status = 422
    title = "invalid attribute"


class TooManyRequests(ApiError):
    status = 429
    title = "too many requests"


class BadGateway(ApiError):
    """An outside service (VCS host, public registry, SMS provider) failed or refused."""

    status = 502
    title = "bad gateway"


class GatewayTimeout(ApiError):
    status = 504
    title = "gateway timeout"


def error_document(*errors: ApiError) -> dict[str, Any]:
    return {"errors": [e.to_dict() for e in errors]}


def error_response(error: ApiError) -> Response:
    headers: dict[str, str | list[str]] = {"Content-Type": JSONAPI, **error.headers}
    return Response(
        body=json.dumps(error_document(error, *error.more)),
        status_code=error.status,
        headers=headers,
    )


def registry_error_response(error: ApiError) -> Response:
    """The registry protocol's error shape: ``{"errors": ["message"]}`` as plain JSON."""
    message = error.detail or error.title
    headers: dict[str, str | list[str]] = {"Content-Type": "application/json", **error.headers}
    return Response(
        body=json.dumps({"errors": [message]}), status_code=error.status, headers=headers
    )


def attribute_pointer(name: str) -> str:
    return f"/data/attributes/{name}"
