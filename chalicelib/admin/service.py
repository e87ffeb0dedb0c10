"""Rules of the site-admin settings: defaults, cross-attribute validation, write-only secrets.

Each ``update_*`` takes the attributes a request sets (kebab names, nulls dropped), merges
them over what is stored, validates the result and only then writes: a 422 (or a failed SMTP
test) changes nothing. Secrets are sealed with KMS into the item's ``secrets`` and never
rendered. Reads and updates return the stored item (or values); ``render`` shapes them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from chalicelib.admin import store
from chalicelib.admin.store import general_defaults
from chalicelib.core import secrets
from chalicelib.core.api.errors import BadRequest, NotFound, Unprocessable, attribute_pointer
from chalicelib.core.audit import trail
from chalicelib.core.data.ids import new_id

if TYPE_CHECKING:
    from chalicelib.core.auth import Principal

_EMAIL = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+\Z")
_PHONE = re.compile(r"^\+?[0-9][0-9 ().-]{2,30}\Z")


def _invalid(name: str, message: str) -> Unprocessable:
    return Unprocessable(f"{name} {message}", pointer=attribute_pointer(name))


def _require(values: dict[str, Any], names: tuple[str, ...], why: str) -> None:
    for name in names:
        value = values.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise _invalid(name, f"is required {why}")


def check_email(name: str, value: str | None) -> None:
    if value and not _EMAIL.match(value):
        raise _invalid(name, "must be an email address")


def _check_https(name: str, value: str | None) -> None:
    if value and not re.match(r"^https://[^\s/]+", value):
        raise _invalid(name, "must be an https:// URL")


def _seal_changes(
    item: store.SettingsModel, area: str, plaintexts: dict[str, str]
) -> dict[str, Any]:
    """The item's sealed secrets with ``plaintexts`` applied ("" removes a secret)."""
    sealed = dict(item.secrets or {})
    for name, plaintext in plaintexts.items():
        if plaintext:
            sealed[name] = secrets.seal(plaintext, purpose=f"{area}/{name}")
        else:
            sealed.pop(name, None)
    return sealed


def _save(
    principal: Principal | None,
    item: store.SettingsModel,
    before: dict[str, Any],
    secret_names: Iterable[str] = (),
    defaults: dict[str, Any] | None = None,
) -> None:
    """Write ``item`` with its audit event: the names of the values that differ from
    ``before`` (both over ``defaults``) and of the secrets given (``secret_names``), never
    a value."""
    defaults = defaults or {}
    changed = trail.changed({**defaults, **before}, {**defaults, **(item.values or {})})
    changed = sorted({*changed, *secret_names})
    store.save(item, store.settings_event(principal, item.id, changed))


def _secret(item: store.SettingsModel, area: str, name: str) -> str | None:
    sealed = (item.secrets or {}).get(name)
    return secrets.unseal(sealed, purpose=f"{area}/{name}") if sealed else None


def with_defaults(item: store.SettingsModel, defaults: dict[str, Any]) -> dict[str, Any]:
    """An area's stored values over its defaults (unset keys read as their default)."""
    return {**defaults, **(item.values or {})}


# ----- general ---------------------------------------------------------------------------------

# Old attribute names still accepted (and rendered) for the worker timeouts.
DEPRECATED_TIMEOUTS = {
    "terraform-build-worker-plan-timeout": "plan-timeout",
    "terraform-build-worker-apply-timeout": "apply-timeout",
}


def organization_creation_limited() -> bool:
    """Whether only site admins may create organizations."""
    return bool(store.general_settings()["limit-user-organization-creation"])


def general() -> dict[str, Any]:
    return store.general_settings()


def update_general(principal: Principal, changes: dict[str, Any]) -> dict[str, Any]:
    """Store ``changes``; the general settings as they are now."""
    for old, new in DEPRECATED_TIMEOUTS.items():
        if old in changes:
            changes.setdefault(new, changes.pop(old))
    item = store.load("general")
    before = dict(item.values or {})
    item.values = {**before, **changes}  # defaults stay defaults until set
    _save(principal, item, before, defaults=general_defaults())
    return {**general_defaults(), **item.values}


# ----- cost estimation ---------------------------------------------------------------------------

COST = "cost-estimation"
COST_ALIASES = {  # the seed's neutral names -> the real API's names
    "cloud-a-access-key-id": "aws-access-key-id",
    "cloud-a-secret-key": "aws-secret-key",
    "cloud-b-credentials": "gcp-credentials",
    "cloud-c-client-id": "azure-client-id",
    "cloud-c-client-secret": "azure-client-secret",
    "cloud-c-subscription-id": "azure-subscription-id",
    "cloud-c-tenant-id": "azure-tenant-id",
}
COST_SECRETS = ("cloud-a-secret-key", "cloud-b-credentials", "cloud-c-client-secret")
COST_SETS = {
    "cloud-a": ("cloud-a-access-key-id", "cloud-a-secret-key"),
    "cloud-b": ("cloud-b-credentials",),
    "cloud-c": (
        "cloud-c-client-id",
        "cloud-c-client-secret",
        "cloud-c-subscription-id",
        "cloud-c-tenant-id",
    ),
}


def cost_present(values: dict[str, Any], sealed: dict[str, Any]) -> set[str]:
    """The cost-estimation credentials that are set, plain or sealed."""
    return {name for name in COST_ALIASES if values.get(name) or name in sealed}


def cost_estimation() -> store.SettingsModel:
    return store.load(COST)


def update_cost_estimation(principal: Principal, changes: dict[str, Any]) -> store.SettingsModel:
    item = store.load(COST)
    before = dict(item.values or {})
    values = dict(before)
    plaintexts: dict[str, str] = {}
    for name, alias in COST_ALIASES.items():
        given = name if name in changes else alias if alias in changes else None
        if given is None:
            continue
        value = changes[given]
        if name == "cloud-b-credentials" and value:
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                raise _invalid(given, "must be the JSON text of a service account key file")
        if name in COST_SECRETS:
            plaintexts[name] = value
        else:
            values[name] = value
    if "enabled" in changes:
        values["enabled"] = changes["enabled"]
    present = cost_present(values, item.secrets or {})
    present |= {name for name, value in plaintexts.items() if value}
    present -= {name for name, value in plaintexts.items() if not value}
    if values.get("enabled") and not any(
        all(name in present for name in names) for names in COST_SETS.values()
    ):
        raise _invalid(
            "enabled",
            "needs at least one complete credential set (both cloud-a/aws keys, the "
            "cloud-b/gcp credentials, or all four cloud-c/azure values)",
        )
    item.values, item.secrets = values, _seal_changes(item, COST, plaintexts)
    _save(principal, item, before, plaintexts)
    return item


# ----- SAML ------------------------------------------------------------------------------------

SAML = "saml"
SAML_DEFAULTS: dict[str, Any] = {
    "enabled": False,
    "debug": False,
    "team-management-enabled": False,
    "authn-requests-signed": False,
    "want-assertions-signed": False,
    "idp-cert": None,
    "old-idp-cert": None,
    "slo-endpoint-url": None,
    "sso-endpoint-url": None,
    "attr-username": "Username",
    "attr-groups": "MemberOf",
    "attr-site-admin": "SiteAdmin",
    "site-admin-role": "site-admins",
    "sso-api-token-session-timeout": 1209600,
    "certificate": None,
    "signature-signing-method": "SHA256",
    "signature-digest-method": "SHA256",
    "provider-type": "unknown",
}
_SAML_REQUIRED = (
    "idp-cert",
    "sso-endpoint-url",
    "slo-endpoint-url",
    "attr-username",
    "attr-groups",
    "attr-site-admin",
    "site-admin-role",
)
# Certificate attributes: stored as given (TFE accepts any non-empty text, e.g. go-tfe's and
# terrasnek's "testCert" / "NEW-CERTIFICATE"); "" clears one while SAML is disabled.
SAML_CERTIFICATES = ("idp-cert", "certificate")
# The sealed secret holding the SP private key (write-only, rendered as null).
SAML_KEY = "key"


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _same_certificate(a: str, b: str) -> bool:
    return "".join(a.split()) == "".join(b.split())


def saml() -> store.SettingsModel:
    return store.load(SAML)


def update_saml(principal: Principal, changes: dict[str, Any]) -> store.SettingsModel:
    """Merge ``changes`` over the stored SAML settings, check the result, then write once.

    A new ``idp-cert`` keeps the one it replaces as ``old-idp-cert`` (until revoked); the
    private key is sealed, never stored in ``values``.
    """
    item = store.load(SAML)
    before = with_defaults(item, SAML_DEFAULTS)
    values = dict(before)
    values.pop("private-key", None)
    private_key = changes.pop("private-key", None)
    _check_https("sso-endpoint-url", changes.get("sso-endpoint-url"))
    _check_https("slo-endpoint-url", changes.get("slo-endpoint-url"))
    sent_certificates = {name: changes.pop(name) for name in SAML_CERTIFICATES if name in changes}
    values.update(changes)
    current = values.get("idp-cert")
    new_idp_cert = sent_certificates.get("idp-cert")
    if (
        current
        and new_idp_cert is not None
        and not _blank(new_idp_cert)
        and not _same_certificate(new_idp_cert, current)
    ):
        values["old-idp-cert"] = current  # kept until revoke-old-certificate
    for name, value in sent_certificates.items():
        values[name] = None if _blank(value) else value
    if values["enabled"]:
        for name, value in sent_certificates.items():
            if _blank(value):
                raise _invalid(name, "must not be empty when SAML is enabled")
        _require(values, _SAML_REQUIRED, "when SAML is enabled")
        if values["authn-requests-signed"]:
            _require(values, ("certificate",), "when authn-requests-signed is true")
            if private_key is not None:
                has_key = not _blank(private_key)
            else:
                has_key = bool((item.secrets or {}).get(SAML_KEY))
            if not has_key:
                raise _invalid("private-key", "is required when authn-requests-signed is true")
    plaintexts: dict[str, str] = {}
    if private_key is not None:  # "" (or blank) removes the key
        plaintexts[SAML_KEY] = "" if _blank(private_key) else private_key
    item.values, item.secrets = values, _seal_changes(item, SAML, plaintexts)
    _save(principal, item, before, ["private-key"] if plaintexts else [])
    return item


def saml_private_key() -> str | None:
    """The SP private key (unsealed), for signing AuthnRequests; None when not set."""
    return _secret(store.load(SAML), SAML, SAML_KEY)


def revoke_old_idp_certificate(principal: Principal) -> store.SettingsModel:
    item = store.load(SAML)
    before = dict(item.values or {})
    item.values = {**before, "old-idp-cert": None}
    _save(principal, item, before)
    return item


# ----- SMTP ------------------------------------------------------------------------------------

SMTP = "smtp"
SMTP_DEFAULTS: dict[str, Any] = {
    "enabled": False,
    "host": None,
    "port": None,
    "sender": None,
    "auth": "none",
    "username": None,
}


def smtp() -> store.SettingsModel:
    return store.load(SMTP)


def update_smtp(principal: Principal | None, changes: dict[str, Any]) -> store.SettingsModel:
    """Validate and store ``changes`` (``principal`` None: the registry itself, the local
    stack's mail catcher); when SMTP ends up enabled, a test message must be
    delivered first (else nothing is stored)."""
    item = store.load(SMTP)
    before = with_defaults(item, SMTP_DEFAULTS)
    values = dict(before)
    recipient = changes.pop("test-email-address", None)
    password = changes.pop("password", None)
    values.update(changes)
    check_email("sender", values.get("sender"))
    check_email("test-email-address", recipient)
    if values["enabled"]:
        _require(values, ("host", "port", "sender"), "when SMTP is enabled")
        if not recipient:
            raise _invalid("test-email-address", "is required when SMTP is enabled")
        if values["auth"] != "none":
            _require(values, ("username",), f"when auth is {values['auth']}")
            secret = password if password is not None else _secret(item, SMTP, "password")
            if not secret:
                raise _invalid("password", f"is required when auth is {values['auth']}")
        else:
            secret = None
        # smtplib and email load with the first test message, not with the function.
        from chalicelib.admin import mail

        config = mail.SmtpConfig(
            host=values["host"],
            port=values["port"],
            sender=values["sender"],
            auth=values["auth"],
            username=values.get("username"),
            password=secret,
        )
        mail.send_test_message(config, recipient)
    plaintexts = {} if password is None else {"password": password}
    item.values, item.secrets = values, _seal_changes(item, SMTP, plaintexts)
    _save(principal, item, before, plaintexts)
    return item


# ----- SMS -------------------------------------------------------------------------------------

SMS = "sms"
SMS_DEFAULTS: dict[str, Any] = {"enabled": False, "account-sid": None, "from-number": None}


def sms_settings() -> store.SettingsModel:
    return store.load(SMS)


def update_sms(principal: Principal, changes: dict[str, Any]) -> store.SettingsModel:
    item = store.load(SMS)
    before = with_defaults(item, SMS_DEFAULTS)
    values = dict(before)
    token = changes.pop("auth-token", None)
    values.update(changes)
    if values.get("from-number") and not _PHONE.match(values["from-number"]):
        raise _invalid("from-number", "must be a phone number")
    if values["enabled"]:
        _require(values, ("account-sid", "from-number"), "when SMS is enabled")
        has_token = token if token is not None else (item.secrets or {}).get("auth-token")
        if not has_token:
            raise _invalid("auth-token", "is required when SMS is enabled")
    plaintexts = {} if token is None else {"auth-token": token}
    item.values, item.secrets = values, _seal_changes(item, SMS, plaintexts)
    _save(principal, item, before, plaintexts)
    return item


def verify_sms(test_number: str | None) -> None:
    item = store.load(SMS)
    values = with_defaults(item, SMS_DEFAULTS)
    if not values["enabled"]:
        raise BadRequest("invalid verification settings: SMS is disabled")
    if not test_number or not test_number.strip():
        raise BadRequest("invalid verification settings: test-number is required")
    if not _PHONE.match(test_number):
        raise BadRequest("invalid verification settings: test-number must be a phone number")
    token = _secret(item, SMS, "auth-token")
    if not (token and values.get("account-sid") and values.get("from-number")):
        raise BadRequest("invalid verification settings: SMS settings are incomplete")
    from chalicelib.admin import sms  # the SMS provider's client, with the first test SMS

    sms.send_test_sms(values["account-sid"], token, values["from-number"], test_number)


# ----- customization ---------------------------------------------------------------------------

CUSTOMIZATION = "customization"
CUSTOMIZATION_DEFAULTS: dict[str, Any] = {
    "support-email-address": "support@hashicorp.com",
    "login-help": "",
    "footer": "",
    "error": "",
    "new-user": "",
}


def customization() -> store.SettingsModel:
    return store.load(CUSTOMIZATION)


def cached_customization() -> dict[str, Any]:
    """The customization settings as the UI shows them on every page: read at most every
    REGISTRY_SETTINGS_CACHE_SECONDS per instance."""
    return store.cached_settings(
        CUSTOMIZATION, lambda: store.read_settings(CUSTOMIZATION, CUSTOMIZATION_DEFAULTS)
    )


def update_customization(principal: Principal, changes: dict[str, Any]) -> store.SettingsModel:
    check_email("support-email-address", changes.get("support-email-address"))
    item = store.load(CUSTOMIZATION)
    before = with_defaults(item, CUSTOMIZATION_DEFAULTS)
    item.values = {**before, **changes}
    _save(principal, item, before)
    return item


# ----- data retention policy -------------------------------------------------------------------

RETENTION = "data-retention-policy"
RETENTION_TYPE = "data-retention-policy-delete-olders"


def retention_policy() -> dict[str, Any]:
    values = store.load(RETENTION).values or {}
    if not values.get("id"):
        raise NotFound("not found: no site-wide data retention policy is set")
    return values


def set_retention_policy(principal: Principal, days: int) -> tuple[dict[str, Any], bool]:
    """Create or update the site-wide policy: (policy, created)."""
    item = store.load(RETENTION)
    before = dict(item.values or {})
    created = not before.get("id")
    item.values = {
        "id": before.get("id") or new_id("drp"),
        "delete-older-than-n-days": days,
    }
    changed = trail.changed(before, item.values)
    action = store.CREATED if created else store.UPDATED
    store.save(item, store.settings_event(principal, RETENTION, changed, action))
    return item.values, created


def delete_retention_policy(principal: Principal) -> None:
    if not (store.load(RETENTION).values or {}).get("id"):
        return  # none set: nothing changes
    store.delete(RETENTION, store.settings_event(principal, RETENTION, [], store.DELETED))
