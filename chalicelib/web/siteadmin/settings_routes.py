"""The settings forms of site administration, one page per area the admin API manages
(``/app/admin/settings/<area>``): general, SAML, SMTP, SMS, cost estimation, customization.

A form shows what the API shows (the ``render_*`` functions, which never hold a secret);
a save is validated by the API's own request model and stored by the admin service, so a
bad value is refused with the API's message and changes nothing. Secrets are write-only:
the field stays empty (empty keeps the stored one; "remove" clears it).

Also: SMTP's "send a test mail" (the service's test message to the stored settings), SMS's
test message, and SAML's "revoke the old IdP certificate".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chalice import Blueprint, Response

from chalicelib.admin import render, service
from chalicelib.core.api.errors import ApiError, NotFound, Unprocessable
from chalicelib.core.api.openapi import Reply
from chalicelib.saml.config import SLO_PATH
from chalicelib.web.siteadmin.common import (
    ADMIN,
    Field,
    admin_post,
    form_attributes,
    site_admin,
    validated,
)
from chalicelib.web.view import SiteAdminPage, WebCtx, page, redirect

bp = Blueprint(__name__)
SETTINGS = ADMIN + "/settings"
SENT = (Reply(200, description="the result of the test"), Reply(502), Reply(422))


@dataclass(frozen=True)
class Area:
    """A settings area: its form and how it is read and written (through the service)."""

    slug: str
    title: str
    intro: str
    model: str  # the name of the API's request model in chalicelib.admin.schemas
    fields: tuple[Field, ...]
    shown: Callable[[WebCtx], dict[str, Any]]  # what the API shows
    sealed: Callable[[], set[str]]  # the secret fields that hold a value
    save: Callable[[Any, dict[str, Any]], Any]  # (the site admin, the changes)
    button: str  # the save button's label


def _sealed(load: Callable[[], Any], names: dict[str, str]) -> Callable[[], set[str]]:
    """The fields (``names``: stored secret -> field) whose secret is set; never its value."""
    return lambda: {field for key, field in names.items() if key in (load().secrets or {})}


_BOOL = "bool"
_SHA = ("SHA256", "SHA1")
_CERT = "PEM text; empty keeps the stored one."

AREAS: dict[str, Area] = {
    area.slug: area
    for area in (
        Area(
            "general",
            "General settings",
            "Who may create organizations, API rate limiting and the worker timeouts.",
            "GeneralSettings",
            (
                Field(
                    "limit-user-organization-creation",
                    "Only site admins may create organizations",
                    _BOOL,
                ),
                Field("api-rate-limiting-enabled", "API rate limiting", _BOOL),
                Field(
                    "api-rate-limit",
                    "API requests per second per client",
                    "int",
                    "At least 30.",
                ),
                Field(
                    "send-passing-statuses-for-untriggered-speculative-plans",
                    "Send passing statuses for untriggered speculative plans",
                    _BOOL,
                ),
                Field(
                    "allow-speculative-plans-on-pull-requests-from-forks",
                    "Allow speculative plans on pull requests from forks",
                    _BOOL,
                ),
                Field("default-remote-state-access", "Default remote state access", _BOOL),
                Field(
                    "plan-timeout", "Plan timeout", help="A Go duration, e.g. 2h.", keep_blank=True
                ),
                Field(
                    "apply-timeout",
                    "Apply timeout",
                    help="A Go duration, e.g. 24h.",
                    keep_blank=True,
                ),
            ),
            lambda ctx: render.render_general(service.general()),
            lambda: set(),
            service.update_general,
            "Save general settings",
        ),
        Area(
            "saml",
            "SAML single sign-on",
            "The identity provider this site trusts. Give the identity provider the ACS URL "
            "and the metadata URL below.",
            "SamlSettings",
            (
                Field("enabled", "SAML single sign-on enabled", _BOOL),
                Field("sso-endpoint-url", "IdP single sign-on URL", help="https:// only."),
                Field("slo-endpoint-url", "IdP single logout URL", help="https:// only."),
                Field("idp-cert", "IdP certificate", "textarea", _CERT, keep_blank=True),
                Field(
                    "provider-type",
                    "Identity provider",
                    "select",
                    options=("unknown", "okta", "entra", "saml"),
                ),
                Field("attr-username", "Username attribute"),
                Field("attr-groups", "Groups attribute"),
                Field("attr-site-admin", "Site admin attribute"),
                Field("site-admin-role", "Site admin role"),
                Field("team-management-enabled", "Team membership managed by SAML", _BOOL),
                Field(
                    "sso-api-token-session-timeout",
                    "Session length of a SAML sign-in (seconds)",
                    "int",
                ),
                Field("authn-requests-signed", "Sign authentication requests", _BOOL),
                Field("want-assertions-signed", "Require signed assertions", _BOOL),
                Field("certificate", "SP certificate", "textarea", _CERT, keep_blank=True),
                Field("private-key", "SP private key", "secret-textarea", "PEM text."),
                Field(
                    "signature-signing-method", "Signature signing method", "select", options=_SHA
                ),
                Field("signature-digest-method", "Signature digest method", "select", options=_SHA),
                Field("debug", "Debug mode", _BOOL),
            ),
            lambda ctx: render.render_saml(service.saml(), ctx.base_url),
            _sealed(service.saml, {service.SAML_KEY: "private-key"}),
            service.update_saml,
            "Save SAML settings",
        ),
        Area(
            "smtp",
            "SMTP (outgoing mail)",
            "Invitations and password reset links go out through this server. Saving with "
            "SMTP enabled first sends a test mail to the address you give; nothing is stored "
            "unless it is delivered.",
            "SmtpSettings",
            (
                Field("enabled", "SMTP enabled", _BOOL),
                Field("host", "Host"),
                Field("port", "Port", "int"),
                Field("sender", "Sender address"),
                Field("auth", "Authentication", "select", options=("none", "plain", "login")),
                Field("username", "Username"),
                Field("password", "Password", "secret"),
                Field(
                    "test-email-address",
                    "Send the test mail to",
                    help="Needed when saving with SMTP enabled; not stored.",
                    keep_blank=True,
                ),
            ),
            lambda ctx: render.render_smtp(service.smtp()),
            _sealed(service.smtp, {"password": "password"}),
            service.update_smtp,
            "Save outgoing mail settings",
        ),
        Area(
            "sms",
            "SMS (Twilio)",
            "The SMS provider's account.",
            "SmsSettings",
            (
                Field("enabled", "SMS enabled", _BOOL),
                Field("account-sid", "Account SID"),
                Field("from-number", "From number", help="e.g. +15555550100"),
                Field("auth-token", "Auth token", "secret"),
            ),
            lambda ctx: render.render_sms(service.sms_settings()),
            _sealed(service.sms_settings, {"auth-token": "auth-token"}),
            service.update_sms,
            "Save SMS settings",
        ),
        Area(
            "cost-estimation",
            "Cost estimation",
            "Cloud credentials for cost estimation: enabling needs at least one complete set.",
            "CostEstimationSettings",
            (
                Field("enabled", "Cost estimation enabled", _BOOL),
                Field("cloud-a-access-key-id", "AWS access key id"),
                Field("cloud-a-secret-key", "AWS secret key", "secret"),
                Field(
                    "cloud-b-credentials",
                    "GCP credentials",
                    "secret-textarea",
                    "The JSON text of a service account key file.",
                ),
                Field("cloud-c-client-id", "Azure client id"),
                Field("cloud-c-client-secret", "Azure client secret", "secret"),
                Field("cloud-c-subscription-id", "Azure subscription id"),
                Field("cloud-c-tenant-id", "Azure tenant id"),
            ),
            lambda ctx: render.render_cost_estimation(service.cost_estimation()),
            _sealed(service.cost_estimation, {n: n for n in service.COST_SECRETS}),
            service.update_cost_estimation,
            "Save cost estimation settings",
        ),
        Area(
            "customization",
            "Customization",
            "Texts shown to everyone (Markdown, sanitized as READMEs are): the sign-in help, "
            "the footer of every page, the error pages' text and the text for a signed-in "
            "person who belongs to no organization.",
            "CustomizationSettings",
            (
                Field("support-email-address", "Support email address"),
                Field("login-help", "Sign-in help", "textarea"),
                Field("footer", "Footer", "textarea"),
                Field("error", "Error page text", "textarea"),
                Field("new-user", "Text for a person without an organization", "textarea"),
            ),
            lambda ctx: render.render_customization(service.customization()),
            lambda: set(),
            service.update_customization,
            "Save customization",
        ),
    )
}


def _area(slug: str) -> Area:
    found = AREAS.get(slug)
    if found is None:
        raise NotFound(f"no settings area {slug!r}")
    return found


def _form(
    ctx: WebCtx,
    area: Area,
    status: int = 200,
    sent: dict[str, Any] | None = None,
    **extra: Any,
) -> Response:
    """The area's form: what the API shows, or what was sent (secrets never)."""
    values = area.shown(ctx)
    if sent:
        values.update(sent)
    for field in area.fields:
        if field.secret:  # never filled in, whatever was sent or stored
            values[field.name] = None
    return ctx.render(
        "siteadmin/settings.html",
        status,
        area=area,
        areas=AREAS,
        values=values,
        sealed=area.sealed(),
        saved=ctx.query.get("saved") == "1",
        slo_url=ctx.base_url + SLO_PATH,
        **extra,
    )


@page(bp, SETTINGS, auth=SiteAdminPage)
def settings_index(ctx: WebCtx) -> Response:
    """The settings areas are listed on the overview: to it."""
    site_admin(ctx)
    return redirect(ADMIN)


@page(bp, SETTINGS + "/{area}", auth=SiteAdminPage)
def settings_form(ctx: WebCtx, area: str) -> Response:
    """A settings area's form."""
    site_admin(ctx)
    return _form(ctx, _area(area))


def _status(error: ApiError) -> int:
    """A refused value is 422; a mail or SMS server that failed the test, 502."""
    return 422 if error.status < 500 and error.status != 401 else 502


@admin_post(bp, SETTINGS + "/{area}")
def settings_save(ctx: WebCtx, _admin: Any, form: dict[str, str], area: str) -> Response:
    """Store the form through the admin service (the API's model and rules)."""
    from chalicelib.admin import schemas  # pydantic loads with the first form posted

    found = _area(area)
    sent = form_attributes(found.fields, form)
    try:
        found.save(_admin, validated(getattr(schemas, found.model), dict(sent)))
    except ApiError as refused:
        return _form(ctx, found, _status(refused), sent, error=refused.detail)
    return redirect(f"{SETTINGS}/{found.slug}?saved=1")


@admin_post(bp, SETTINGS + "/smtp/test-mail", success=SENT)
def smtp_test_mail(ctx: WebCtx, _admin: Any, form: dict[str, str]) -> Response:
    """Send a test mail through the stored SMTP settings; the page says what happened."""
    from chalicelib.admin import mail, schemas

    area = AREAS["smtp"]
    recipient = (form.get("recipient") or "").strip()
    config = mail.configured()
    if config is None:
        return _form(ctx, area, 422, test_error="SMTP is not enabled: save it enabled first.")
    try:
        validated(schemas.SmtpSettings, {"test-email-address": recipient})
        if not recipient:
            raise Unprocessable("test-email-address is required")
        service.check_email("test-email-address", recipient)
        mail.send_test_message(config, recipient)
    except ApiError as failed:
        return _form(ctx, area, _status(failed), test_error=failed.detail, recipient=recipient)
    return _form(ctx, area, test_sent=recipient)


@admin_post(bp, SETTINGS + "/sms/test-message", success=SENT)
def sms_test_message(ctx: WebCtx, _admin: Any, form: dict[str, str]) -> Response:
    """Send a test SMS through the stored settings (the API's ``verify``)."""
    from chalicelib.admin import schemas  # pydantic loads with the first form posted

    area = AREAS["sms"]
    number = (form.get("test-number") or "").strip()
    try:
        validated(schemas.SmsVerify, {"test-number": number})
        service.verify_sms(number)
    except ApiError as failed:
        return _form(ctx, area, _status(failed), test_error=failed.detail, recipient=number)
    return _form(ctx, area, test_sent=number)


@admin_post(bp, SETTINGS + "/saml/revoke-old-certificate")
def saml_revoke_old_certificate(ctx: WebCtx, _admin: Any, form: dict[str, str]) -> Response:
    """Forget the IdP certificate a newer one replaced."""
    service.revoke_old_idp_certificate(_admin)
    return redirect(f"{SETTINGS}/saml?saved=1")
