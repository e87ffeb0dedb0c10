"""HTTP routes of the site-admin settings (``/api/v2/admin/...``) and the public JWKS.

Every admin route is declared public so that the hosted edition can answer 404 before even
looking at the token; otherwise the token is authenticated (401) and the caller must be a
site admin (404). ``data.type`` is not checked: go-tfe sends ``""``, pytfe the real type, and
SMS settings are reachable under two type names.
"""

from __future__ import annotations

from typing import Any

from chalice import Blueprint, Response

from chalicelib.admin import oidc, schemas, service
from chalicelib.admin.render import (
    jwks_document,
    render_cost_estimation,
    render_customization,
    render_general,
    render_saml,
    render_sms,
    render_smtp,
    retention_document,
    singleton,
)
from chalicelib.core.auth import authenticate
from chalicelib.core.errors import NotFound, Unprocessable
from chalicelib.core.http import Ctx, route
from chalicelib.core.jsonapi import Attributes, no_content, parse_attributes
from chalicelib.core.settings import get_settings

bp = Blueprint(__name__)
ADMIN = "/api/v2/admin"


def _admin(ctx: Ctx) -> None:
    if get_settings().hosted:
        raise NotFound("not found")
    service.ensure_site_admin(authenticate(ctx.request.headers.get("authorization")))


def _attributes(ctx: Ctx, model: type[Attributes]) -> dict[str, Any]:
    return schemas.changes(parse_attributes(ctx.json(), model, required=False))


# ----- general ---------------------------------------------------------------------------------


@route(bp, f"{ADMIN}/general-settings", methods=("GET",), public=True)
def get_general_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    return singleton("general-settings", "general", render_general(service.general()))


@route(bp, f"{ADMIN}/general-settings", methods=("PATCH",), public=True)
def update_general_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.GeneralSettings)
    attributes = render_general(service.update_general(changes))
    return singleton("general-settings", "general", attributes)


# ----- cost estimation -------------------------------------------------------------------------


@route(bp, f"{ADMIN}/cost-estimation-settings", methods=("GET",), public=True)
def get_cost_estimation_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    attributes = render_cost_estimation(service.cost_estimation())
    return singleton("cost-estimation-settings", "cost-estimation", attributes)


@route(bp, f"{ADMIN}/cost-estimation-settings", methods=("PATCH",), public=True)
def update_cost_estimation_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.CostEstimationSettings)
    attributes = render_cost_estimation(service.update_cost_estimation(changes))
    return singleton("cost-estimation-settings", "cost-estimation", attributes)


# ----- SAML ------------------------------------------------------------------------------------


@route(bp, f"{ADMIN}/saml-settings", methods=("GET",), public=True)
def get_saml_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    return singleton("saml-settings", "saml", render_saml(service.saml(), ctx.base_url))


@route(bp, f"{ADMIN}/saml-settings", methods=("PATCH",), public=True)
def update_saml_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.SamlSettings)
    attributes = render_saml(service.update_saml(changes), ctx.base_url)
    return singleton("saml-settings", "saml", attributes)


@route(bp, f"{ADMIN}/saml-settings/actions/revoke-old-certificate", methods=("POST",), public=True)
def revoke_old_saml_certificate(ctx: Ctx) -> Response:
    _admin(ctx)
    attributes = render_saml(service.revoke_old_idp_certificate(), ctx.base_url)
    return singleton("saml-settings", "saml", attributes)


# ----- SMTP ------------------------------------------------------------------------------------


@route(bp, f"{ADMIN}/smtp-settings", methods=("GET",), public=True)
def get_smtp_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    return singleton("smtp-settings", "smtp", render_smtp(service.smtp()))


@route(bp, f"{ADMIN}/smtp-settings", methods=("PATCH",), public=True)
def update_smtp_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.SmtpSettings)
    return singleton("smtp-settings", "smtp", render_smtp(service.update_smtp(changes)))


# ----- SMS (also served under the real API's twilio name) --------------------------------------


def _sms_type(ctx: Ctx) -> str:
    return "twilio-settings" if "/twilio-settings" in ctx.path else "sms-settings"


def _get_sms(ctx: Ctx) -> Response:
    _admin(ctx)
    return singleton(_sms_type(ctx), "twilio", render_sms(service.sms_settings()))


def _update_sms(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.SmsSettings)
    return singleton(_sms_type(ctx), "twilio", render_sms(service.update_sms(changes)))


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
    attributes = render_customization(service.customization())
    return singleton("customization-settings", "customization", attributes)


@route(bp, f"{ADMIN}/customization-settings", methods=("PATCH",), public=True)
def update_customization_settings(ctx: Ctx) -> Response:
    _admin(ctx)
    changes = _attributes(ctx, schemas.CustomizationSettings)
    attributes = render_customization(service.update_customization(changes))
    return singleton("customization-settings", "customization", attributes)


# ----- data retention policy -------------------------------------------------------------------


@route(bp, f"{ADMIN}/data-retention-policy-settings", methods=("GET",), public=True)
def get_data_retention_policy(ctx: Ctx) -> Response:
    _admin(ctx)
    return retention_document(service.retention_policy())


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
    return retention_document(policy, 201 if created else 200)


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
    return jwks_document(oidc.jwks())
