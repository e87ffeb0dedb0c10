"""Response documents of the site-admin settings and the public JWKS.

The ``render_*`` functions turn what ``service`` returns into a resource's attributes; they
read only an item's ``values`` (and which secrets are set), never a secret itself.
"""

from __future__ import annotations

import json
from typing import Any

from chalice import Response

from chalicelib.admin import service, store
from chalicelib.core.api.errors import JSONAPI
from chalicelib.core.api.jsonapi import resource

_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}

# Settings the API shows but this registry does not implement: always these values.
GENERAL_READ_ONLY: dict[str, Any] = {
    "require-two-factor-for-admins": False,
    "fair-run-queuing-enabled": False,
    "limit-organizations-per-user": False,
    "default-organizations-per-user-ceiling": 500,
    "limit-workspaces-per-organization": False,
    "default-workspaces-per-organization-ceiling": 500,
}
# Each credential set's "<cloud>-enabled" flag under the real API's name as well.
_COST_FLAGS = {"cloud-a": "aws-enabled", "cloud-b": "gcp-enabled", "cloud-c": "azure-enabled"}


# ----- documents -------------------------------------------------------------------------------


def document(data: dict[str, Any], status: int = 200) -> Response:
    """A JSON:API document whose HTML-significant characters are escaped (``<`` -> \\u003c)."""
    body = json.dumps({"data": data})
    for char, escaped in _HTML_ESCAPES.items():
        body = body.replace(char, escaped)
    return Response(body=body, status_code=status, headers={"Content-Type": JSONAPI})


def singleton(type_: str, id_: str, attributes: dict[str, Any]) -> Response:
    """The document of a settings area: one resource with a fixed id."""
    return document(resource(type_, id_, attributes))


def retention_document(policy: dict[str, Any], status: int = 200) -> Response:
    """The site-wide data retention policy; it targets nothing (``target`` is null)."""
    data = resource(
        service.RETENTION_TYPE,
        policy["id"],
        {"delete-older-than-n-days": policy["delete-older-than-n-days"]},
        relationships={"target": {"data": None}},
    )
    return document(data, status)


def jwks_document(keys: dict[str, Any]) -> Response:
    """The public signing keys: plain JSON, cacheable for a minute."""
    return Response(
        body=json.dumps(keys),
        status_code=200,
        headers={"Content-Type": "application/json", "Cache-Control": "max-age=60"},
    )


# ----- attributes ------------------------------------------------------------------------------


def render_general(values: dict[str, Any]) -> dict[str, Any]:
    """Every general setting (stored or default), the deprecated timeout names and the
    read-only ones."""
    defaults = store.general_defaults()
    out = {name: values.get(name, default) for name, default in defaults.items()}
    for old, new in service.DEPRECATED_TIMEOUTS.items():
        out[old] = out[new]
    return {**out, **GENERAL_READ_ONLY}


def render_cost_estimation(item: store.SettingsModel) -> dict[str, Any]:
    """Each value under both its names (secrets as null) and, per cloud, whether its
    credential set is complete."""
    values = item.values or {}
    present = service.cost_present(values, item.secrets or {})
    out: dict[str, Any] = {"enabled": bool(values.get("enabled", False))}
    for name, alias in service.COST_ALIASES.items():
        shown = None if name in service.COST_SECRETS else (values.get(name) or None)
        out[name] = out[alias] = shown
    for cloud, names in service.COST_SETS.items():
        complete = all(name in present for name in names)
        out[f"{cloud}-enabled"] = out[_COST_FLAGS[cloud]] = complete
    out["aws-instance-profile-enabled"] = False
    return out


def render_saml(item: store.SettingsModel, base_url: str) -> dict[str, Any]:
    """Every SAML attribute go-tfe models (stored or default), the write-only private key
    always null (whether one is set is not shown either) and this site's SAML URLs."""
    values = service.with_defaults(item, service.SAML_DEFAULTS)
    return {
        **{name: values[name] for name in service.SAML_DEFAULTS},
        "private-key": None,
        "acs-consumer-url": f"{base_url}/users/saml/auth",
        "metadata-url": f"{base_url}/users/saml/metadata",
    }


def render_smtp(item: store.SettingsModel) -> dict[str, Any]:
    return service.with_defaults(item, service.SMTP_DEFAULTS)


def render_sms(item: store.SettingsModel) -> dict[str, Any]:
    return service.with_defaults(item, service.SMS_DEFAULTS)


def render_customization(item: store.SettingsModel) -> dict[str, Any]:
    return service.with_defaults(item, service.CUSTOMIZATION_DEFAULTS)
