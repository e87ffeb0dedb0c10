"""SCIM 2.0 error documents (RFC 7644 section 3.12) for the ``/scim/v2`` routes.

Errors raised anywhere (``ScimError`` here, or any ``ApiError`` of the core) reach the
identity provider as ``application/scim+json`` documents: the Error message schema, the
HTTP status as a string, a ``detail`` and, where RFC 7644 defines one, a ``scimType``.
"""

from __future__ import annotations

import json

from chalice import Response

from chalicelib.core.api.errors import ApiError

SCIM_JSON = "application/scim+json"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"

_TITLES = {
    400: "bad request",
    401: "unauthorized",
    403: "forbidden",
    404: "not found",
    409: "conflict",
    413: "payload too large",
    500: "internal server error",
}


class ScimError(ApiError):
    """An error with a SCIM ``scimType`` (invalidFilter, invalidValue, uniqueness ...)."""

    def __init__(self, status: int, detail: str, scim_type: str | None = None) -> None:
        super().__init__(detail, title=_TITLES.get(status, "error"))
        self.status = status
        self.scim_type = scim_type


def bad_request(detail: str, scim_type: str = "invalidValue") -> ScimError:
    return ScimError(400, detail, scim_type)


def not_found(detail: str) -> ScimError:
    return ScimError(404, detail)


def _status(error: ApiError) -> int:
    """SCIM has no 422: a value the core refuses (a query parameter past its bound) is 400."""
    return 400 if error.status == 422 else error.status


def scim_error_document(error: ApiError) -> dict[str, object]:
    status = _status(error)
    body: dict[str, object] = {
        "schemas": [ERROR_SCHEMA],
        "status": str(status),
        "detail": error.detail or error.title,
    }
    scim_type = getattr(error, "scim_type", None)
    if scim_type is None and error.parameter == "filter":
        scim_type = "invalidFilter"
    if scim_type is None and status == 400:
        scim_type = "invalidSyntax" if "JSON" in (error.detail or "") else "invalidValue"
    if scim_type:
        body["scimType"] = scim_type
    return body


def scim_error_response(error: ApiError) -> Response:
    headers: dict[str, str | list[str]] = {"Content-Type": SCIM_JSON, **error.headers}
    return Response(
        body=json.dumps(scim_error_document(error)), status_code=_status(error), headers=headers
    )


# How the OpenAPI document shows these errors (chalicelib.core.api.openapi_build).
scim_error_response.error_style = "scim"  # type: ignore[attr-defined]
