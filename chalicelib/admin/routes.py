"""HTTP routes of the site-admin settings (``/api/v2/admin/...``) and the public JWKS.

Every admin route declares ``SiteAdmin``: the hosted edition answers 404 before even looking
at the token; otherwise the token is authenticated (401) and the caller must be a site admin
(404). ``data.type`` is not checked: go-tfe sends ``""``, pytfe the real type, and
SMS settings are reachable under two type names.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import SiteAdmin
from chalicelib.admin import oidc, service
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
from chalicelib.core.api.access import Public
from chalicelib.core.api.http import Ctx, HandlerT, route
from chalicelib.core.api.jsonapi import no_content
from chalicelib.core.api.openapi import JsonApi, Reply

if TYPE_CHECKING:
    from chalicelib.admin.schemas import (
        CostEstimationSettings,
        CustomizationSettings,
        DataRetentionPolicy,
        GeneralSettings,
        SamlSettings,
        SmsSettings,
        SmsVerify,
        SmtpSettings,
    )
    from chalicelib.core.api.attributes import Attributes

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.admin import schemas

    return schemas


ADMIN = "/api/v2/admin"


def _changes(attrs: Attributes) -> dict[str, Any]:
    from chalicelib.admin.schemas import changes  # loaded with the body's model anyway

    return changes(attrs)


def _settings(type_: str) -> JsonApi:
    """A settings update: every attribute optional, ``data.type`` not checked."""
    return JsonApi(type_, type_check="off", required=False)


# The SMS settings answer under two type names (the second is the real API's twilio name):
# their bodies document the first.
SMS = "sms-settings"


def admin_route(path: str, methods: tuple[str, ...], **kw: Any) -> Callable[[HandlerT], HandlerT]:
    """A route under /api/v2/admin: a site admin's token (404 for anyone else, and on the
    hosted edition before the token is read)."""
    return route(bp, f"{ADMIN}/{path}", methods=methods, auth=SiteAdmin, **kw)


# ----- general ---------------------------------------------------------------------------------


@admin_route("general-settings", ("GET",))
def get_general_settings(ctx: Ctx) -> Response:
    return singleton("general-settings", "general", render_general(service.general()))


@admin_route("general-settings", ("PATCH",))
def update_general_settings(
    ctx: Ctx, attrs: Annotated[GeneralSettings, _settings("general-settings")]
) -> Response:
    attributes = render_general(service.update_general(ctx.user, _changes(attrs)))
    return singleton("general-settings", "general", attributes)


# ----- cost estimation -------------------------------------------------------------------------


@admin_route("cost-estimation-settings", ("GET",))
def get_cost_estimation_settings(ctx: Ctx) -> Response:
    attributes = render_cost_estimation(service.cost_estimation())
    return singleton("cost-estimation-settings", "cost-estimation", attributes)


@admin_route(
    "cost-estimation-settings",
    ("PATCH",),
)
def update_cost_estimation_settings(
    ctx: Ctx, attrs: Annotated[CostEstimationSettings, _settings("cost-estimation-settings")]
) -> Response:
    attributes = render_cost_estimation(service.update_cost_estimation(ctx.user, _changes(attrs)))
    return singleton("cost-estimation-settings", "cost-estimation", attributes)


# ----- SAML ------------------------------------------------------------------------------------


@admin_route("saml-settings", ("GET",))
def get_saml_settings(ctx: Ctx) -> Response:
    return singleton("saml-settings", "saml", render_saml(service.saml(), ctx.base_url))


@admin_route("saml-settings", ("PATCH",))
def update_saml_settings(
    ctx: Ctx, attrs: Annotated[SamlSettings, _settings("saml-settings")]
) -> Response:
    attributes = render_saml(service.update_saml(ctx.user, _changes(attrs)), ctx.base_url)
    return singleton("saml-settings", "saml", attributes)


@admin_route("saml-settings/actions/revoke-old-certificate", ("POST",), success=200)
def revoke_old_saml_certificate(ctx: Ctx) -> Response:
    attributes = render_saml(service.revoke_old_idp_certificate(ctx.user), ctx.base_url)
    return singleton("saml-settings", "saml", attributes)


# ----- SMTP ------------------------------------------------------------------------------------


@admin_route("smtp-settings", ("GET",))
def get_smtp_settings(ctx: Ctx) -> Response:
    return singleton("smtp-settings", "smtp", render_smtp(service.smtp()))


@admin_route(
    "smtp-settings",
    ("PATCH",),
    errors={
        401: "missing or invalid token, or the SMTP server refused the credentials",
        500: "the SMTP server answered the test message with an error",
        504: "the SMTP server did not answer in time",
    },
)
def update_smtp_settings(
    ctx: Ctx, attrs: Annotated[SmtpSettings, _settings("smtp-settings")]
) -> Response:
    return singleton(
        "smtp-settings", "smtp", render_smtp(service.update_smtp(ctx.user, _changes(attrs)))
    )


# ----- SMS (also served under the real API's twilio name) --------------------------------------


def _sms_type(ctx: Ctx) -> str:
    return "twilio-settings" if "/twilio-settings" in ctx.path else "sms-settings"


def _get_sms(ctx: Ctx) -> Response:
    return singleton(_sms_type(ctx), "twilio", render_sms(service.sms_settings()))


def _update_sms(ctx: Ctx, attrs: Annotated[SmsSettings, _settings(SMS)]) -> Response:
    return singleton(
        _sms_type(ctx), "twilio", render_sms(service.update_sms(ctx.user, _changes(attrs)))
    )


def _verify_sms(ctx: Ctx, attrs: Annotated[SmsVerify, _settings(SMS)]) -> Response:
    service.verify_sms(attrs.test_number)
    return Response(body="", status_code=200, headers={})


for _name in ("sms-settings", "twilio-settings"):
    admin_route(_name, ("GET",), summary="Show the SMS settings")(_get_sms)
    admin_route(
        _name,
        ("PATCH",),
        summary="Update the SMS settings",
    )(_update_sms)
    admin_route(
        f"{_name}/verify",
        ("POST", "PATCH"),
        success=Reply(200, empty=True, description="the provider accepted the test message"),
        errors={
            502: "the SMS provider failed or refused",
            504: "the SMS provider did not answer in time",
        },
        summary="Send a test SMS through the provider",
    )(_verify_sms)


# ----- customization ---------------------------------------------------------------------------


@admin_route("customization-settings", ("GET",))
def get_customization_settings(ctx: Ctx) -> Response:
    attributes = render_customization(service.customization())
    return singleton("customization-settings", "customization", attributes)


@admin_route(
    "customization-settings",
    ("PATCH",),
)
def update_customization_settings(
    ctx: Ctx, attrs: Annotated[CustomizationSettings, _settings("customization-settings")]
) -> Response:
    attributes = render_customization(service.update_customization(ctx.user, _changes(attrs)))
    return singleton("customization-settings", "customization", attributes)


# ----- data retention policy -------------------------------------------------------------------


@admin_route("data-retention-policy-settings", ("GET",))
def get_data_retention_policy(ctx: Ctx) -> Response:
    return retention_document(service.retention_policy())


@admin_route(
    "data-retention-policy-settings",
    ("POST",),
    success=(Reply(200, description="replaced"), Reply(201, description="created")),
)
def set_data_retention_policy(
    ctx: Ctx,
    attrs: Annotated[DataRetentionPolicy, JsonApi(service.RETENTION_TYPE, type_check="lenient")],
) -> Response:
    policy, created = service.set_retention_policy(ctx.user, attrs.delete_older_than_n_days)
    return retention_document(policy, 201 if created else 200)


@admin_route("data-retention-policy-settings", ("DELETE",))
def delete_data_retention_policy(ctx: Ctx) -> Response:
    service.delete_retention_policy(ctx.user)
    return no_content()


# ----- OIDC signing keys -----------------------------------------------------------------------


@admin_route("oidc-settings/actions/rotate-key", ("POST",), success=204)
def rotate_oidc_key(ctx: Ctx) -> Response:
    oidc.rotate(ctx.user)
    return no_content()


@admin_route("oidc-settings/actions/trim-key", ("POST",), success=204)
def trim_oidc_key(ctx: Ctx) -> Response:
    oidc.trim(ctx.user)
    return no_content()


JWKS = {
    "type": "object",
    "required": ["keys"],
    "properties": {"keys": {"type": "array", "items": {"type": "object"}}},
}


@route(
    bp,
    "/.well-known/jwks",
    methods=("GET",),
    auth=Public,
    success=Reply(200, JWKS),
    summary="The OIDC public signing keys (JWKS)",
)
def jwks(ctx: Ctx) -> Response:
    return jwks_document(oidc.jwks())
