"""HTTP routes of the site-admin settings (``/api/v2/admin/...``) and the public JWKS.

Every admin route is declared public so that the hosted edition can answer 404 before even
looking at the token; otherwise the token is authenticated (401) and the caller must be a
site admin (404). ``data.type`` is not checked: go-tfe sends ``""``, pytfe the real type, and
SMS settings are reachable under two type names.
"""

from __future__ import annotations

import json
from typing import Any

from chalice import Blueprint, Response

from chalicelib.admin import oidc, schemas, service
from chalicelib.core.auth import authenticate
from chalicelib.core.errors import JSONAPI, NotFound, Unprocessable
from chalicelib.core.http import Ctx, route
from chalicelib.core.jsonapi import Attributes, no_content, parse_attributes, resource
from chalicelib.core.settings import get_settings

bp = Blueprint(__name__)
ADMIN = "/api/v2/admin"

_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def _admin(ctx: Ctx) -> None:
    if get_settings().hosted:
        raise NotFound("not found")
    service.ensure_site_admin(authenticate(ctx.request.headers.get("authorization")))


def _attributes(ctx: Ctx, model: type[Attributes]) -> dict[str, Any]:
    return schemas.changes(parse_attributes(ctx.json(), model, required=False))


def _document(data: dict[str, Any], status: int = 200) -> Response:
    """A JSON:API document whose HTML-significant characters are escaped (``<`` -> \\u003c)."""
    body = json.dumps({"data": data})
    for char, escaped in _HTML_ESCAPES.items():
        body = body.replace(char, escaped)
    return Response(body=body, status_code=status, headers={"Content-Type": JSONAPI})


def _singleton(type_: str, id_: str, attributes: dict[str, Any]) -> Response:
    return _document(resource(type_, id_, attributes))


# ----- general ---------------------------------------------------------------------------------


@route(bp, f"{ADMIN}/general-settings", methods=("GET",), public=True)
def get_general_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    return _singleton("general-settings", "general", service.general())


@route(bp, f"{ADMIN}/general-settings", methods=("PATCH",), public=True)
def update_general_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.GeneralSettings)
    return _singleton("general-settings", "general", service.update_general(changes))


# ----- cost estimation -------------------------------------------------------------------------


@route(bp, f"{ADMIN}/cost-estimation-settings", methods=("GET",), public=True)
def get_cost_estimation_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    return _singleton("cost-estimation-settings", "cost-estimation", service.cost_estimation())


@route(bp, f"{ADMIN}/cost-estimation-settings", methods=("PATCH",), public=True)
def update_cost_estimation_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.CostEstimationSettings)
    attributes = service.update_cost_estimation(changes)
    return _singleton("cost-estimation-settings", "cost-estimation", attributes)


# ----- SAML ------------------------------------------------------------------------------------


@route(bp, f"{ADMIN}/saml-settings", methods=("GET",), public=True)
def get_saml_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    return _singleton("saml-settings", "saml", service.saml(ctx.base_url))


@route(bp, f"{ADMIN}/saml-settings", methods=("PATCH",), public=True)
def update_saml_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.SamlSettings)
    return _singleton("saml-settings", "saml", service.update_saml(changes, ctx.base_url))


@route(bp, f"{ADMIN}/saml-settings/actions/revoke-old-certificate", methods=("POST",), public=True)
def revoke_old_saml_certificate(ctx: Ctx) -> Response:
    _admin(ctx)
    attributes = service.revoke_old_idp_certificate(ctx.base_url)
    return _singleton("saml-settings", "saml", attributes)


# ----- SMTP ------------------------------------------------------------------------------------


@route(bp, f"{ADMIN}/smtp-settings", methods=("GET",), public=True)
def get_smtp_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    return _singleton("smtp-settings", "smtp", service.smtp())


@route(bp, f"{ADMIN}/smtp-settings", methods=("PATCH",), public=True)
def update_smtp_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.SmtpSettings)
    return _singleton("smtp-settings", "smtp", service.update_smtp(changes))


# ----- SMS (also served under the real API's twilio name) --------------------------------------


def _sms_type(ctx: Ctx) -> str:
    return "twilio-settings" if "/twilio-settings" in ctx.path else "sms-settings"


def _get_sms(ctx: Ctx) -> Response:
    _admin(ctx)
    return _singleton(_sms_type(ctx), "twilio", service.sms_settings())


def _update_sms(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.SmsSettings)
    return _singleton(_sms_type(ctx), "twilio", service.update_sms(changes))


def _verify_sms(ctx: Ctx) -> Response:
    _admin(ctx)
    attributes = parse_attributes(ctx.json(), schemas.SmsVerify, required=False)
    service.verify_sms(attributes.test_number)
    return Response(body="", status_code=200, headers={})


for _name in ("sms-settings", "twilio-settings"):
    route(bp, f"{ADMIN}/{_name}", methods=("GET",), public=True)(_get_sms)
    route(bp, f"{ADMIN}/{_name}", methods=("PATCH",), public=True)(_update_sms)
    route(bp, f"{ADMIN}/{_name}/verify", methods=("POST", "PATCH"), public=True)(_verify_sms)


# ----- customization ---------------------------------------------------------------------------


@route(bp, f"{ADMIN}/customization-settings", methods=("GET",), public=True)
def get_customization_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    return _singleton("customization-settings", "customization", service.customization())


@route(bp, f"{ADMIN}/customization-settings", methods=("PATCH",), public=True)
def update_customization_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.CustomizationSettings)
    attributes = service.update_customization(changes)
    return _singleton("customization-settings", "customization", attributes)


# ----- data retention policy -------------------------------------------------------------------


def _retention_document(policy: dict[str, Any], status: int = 200) -> Response:
    data = resource(
        service.RETENTION_TYPE,
        policy["id"],
        {"delete-older-than-n-days": policy["delete-older-than-n-days"]},
        relationships={"target": {"data": None}},
    )
    return _document(data, status)


@route(bp, f"{ADMIN}/data-retention-policy-settings", methods=("GET",), public=True)
def get_data_retention_policy(ctx: Ctx) -> Response:
    _admin(ctx)
    return _retention_document(service.retention_policy())


@route(bp, f"{ADMIN}/data-retention-policy-settings", methods=("POST",), public=True)
def set_data_retention_policy(ctx: Ctx) -> Response:
    _admin(ctx)
    body = ctx.json()
    data = body.get("data") if isinstance(body, dict) else None
    given = data.get("type") if isinstance(data, dict) else None
    if given not in (None, "", service.RETENTION_TYPE):
        raise Unprocessable(
            f"only {service.RETENTION_TYPE!r} policies can be set for the site, not {given!r}",
            pointer="/data/type",
        )
    attributes = parse_attributes(body, schemas.DataRetentionPolicy)
    policy, created = service.set_retention_policy(attributes.delete_older_than_n_days)
    return _retention_document(policy, 201 if created else 200)


@route(bp, f"{ADMIN}/data-retention-policy-settings", methods=("DELETE",), public=True)
def delete_data_retention_policy(ctx: Ctx) -> Response:
    _admin(ctx)
    service.delete_retention_policy()
    return no_content()


# ----- OIDC signing keys -----------------------------------------------------------------------


@route(bp, f"{ADMIN}/oidc-settings/actions/rotate-key", methods=("POST",), public=True)
def rotate_oidc_key(ctx: Ctx) -> Response:
    _admin(ctx)
    oidc.rotate()
    return no_content()


@route(bp, f"{ADMIN}/oidc-settings/actions/trim-key", methods=("POST",), public=True)
def trim_oidc_key(ctx: Ctx) -> Response:
    _admin(ctx)
    oidc.trim()
    return no_content()


@route(bp, "/.well-known/jwks", methods=("GET",), public=True)
def jwks(ctx: Ctx) -> Response:
    return Response(
        body=json.dumps(oidc.jwks()),
        status_code=200,
        headers={"Content-Type": "application/json", "Cache-Control": "max-age=60"},
    )
