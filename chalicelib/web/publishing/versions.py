"""A version's publishing pages: ``…/publish/<registry>/<namespace>/<name>/<provider>/<version>``
(its status, and while it is not ok the upload of its archive), ``…/<version>/status`` (the
status as JSON, which the upload page's script polls) and ``…/<version>/<action>``: a page
that asks first, then the form's POST does it.

The upload goes from the browser straight to the version's presigned S3 link
(``versions.upload_url``: only for who may publish, only until the version is ok), by
``static/publish.js`` with a progress bar; that page's CSP lets it connect to the link's
origin and nothing else more. Without JavaScript the page gives the curl command instead.

Actions go through the API's services: ``change_version_lifecycle`` (deprecate with a
reason, link and deadline, undeprecate, revoke with a message and link, un-revoke: ``PATCH
…/registry-modules/…/:version``), ``release_version`` (a quarantined version, with a
required reason: ``POST …/versions/:version/actions/release``) and ``composed.delete``
(``DELETE …/:version``, owners).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from chalice import Response

from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.openapi import Reply
from chalicelib.modules import versions
from chalicelib.modules.service import ModuleRef
from chalicelib.modules.statuses import VersionAction
from chalicelib.modules.versions import LifecycleChange
from chalicelib.web.audit.history import version_history
from chalicelib.web.labels import FAILED, status_label
from chalicelib.web.publishing.common import (
    VERSION,
    allow_connect,
    bp,
    connect_origin,
    module_url,
    publishable,
)
from chalicelib.web.view import Form, PublicPage, SignedIn, WebCtx, page, posted, redirect

# Statuses after which nothing changes until someone acts (a new upload, a retry, a release).
SETTLED = {VersionStatus.OK, VersionStatus.QUARANTINED, *FAILED}


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    help: str
    textarea: bool = False
    required: bool = False
    # The input's type (a textarea's is ignored).
    kind: str = "url"


@dataclass(frozen=True)
class Action:
    title: str
    question: str
    button: str
    fields: tuple[Field, ...] = ()
    owner: bool = False
    danger: bool = False


LINK_HELP = "Optional: an http:// or https:// page that says more."
REVOKE_AT = "revoke-at"
ACTIONS = {
    "deprecate": Action(
        "Deprecate version {version}?",
        "terraform keeps installing it, and warns whoever uses it with your reason.",
        "Deprecate the version",
        (
            Field("reason", "Reason", "Optional: why, and what to use instead.", textarea=True),
            Field("link", "Link", LINK_HELP),
            Field(
                REVOKE_AT,
                "Revoke on (UTC)",
                "Optional: the registry revokes it then, with your reason, and records "
                "notices 7 days and 1 day before. Leave it empty for no deadline (deprecating "
                "again without one removes it).",
                kind="datetime-local",
            ),
        ),
    ),
    "undeprecate": Action(
        "Undeprecate version {version}?",
        "It is no longer marked deprecated; its reason and link are forgotten.",
        "Undeprecate the version",
    ),
    "revoke": Action(
        "Revoke version {version}?",
        "terraform refuses to install it from now on (configurations that pinned it fail "
        "with your message); un-revoking it later leaves it deprecated.",
        "Revoke the version",
        (
            Field("message", "Message", "Optional: what terraform shows.", textarea=True),
            Field("link", "Link", LINK_HELP),
        ),
        danger=True,
    ),
    "unrevoke": Action(
        "Un-revoke version {version}?",
        "terraform may install it again; it stays deprecated until you undeprecate it.",
        "Un-revoke the version",
    ),
    "release": Action(
        "Release version {version}?",
        "The organization's publishing policy quarantined it, so terraform cannot install it. "
        "Releasing it serves it from now on; who released it, when and your reason are kept "
        "with it.",
        "Release the version",
        (
            Field(
                "reason",
                "Reason",
                "Required: why it may be served despite what held it back.",
                textarea=True,
                required=True,
            ),
        ),
        danger=True,
    ),
    "delete": Action(
        "Delete version {version}?",
        "Its archive is deleted and configurations that use it can no longer download it. "
        "Deleting the last version deletes the module. This cannot be undone.",
        "Delete the version",
        owner=True,
        danger=True,
    ),
}


def _ref(organization: str, registry: str, namespace: str, name: str, provider: str) -> ModuleRef:
    return ModuleRef(organization, registry, namespace, name, provider)


def _status(item: Any) -> dict[str, Any]:
    error = item.error
    if item.status == VersionStatus.QUARANTINED:
        reasons = (item.quarantine or {}).get("reasons") or []
        error = "Held back by the organization's publishing policy: " + "; ".join(reasons)
    return {
        "version": item.version,
        "status": item.status,
        "label": status_label(item.status),
        "error": error,
        "settled": item.status in SETTLED,
    }


@page(bp, VERSION, auth=SignedIn)
def version_page(
    ctx: WebCtx,
    organization: str,
    registry: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
) -> Response:
    """A version: its status, the upload of its archive while it is not ok, its actions, and
    its history (who published, deprecated, revoked or released it: the audit trail)."""
    from chalicelib.web.pages import module_path  # the module pages' service: first use

    ref = _ref(organization, registry, namespace, name, provider)
    module, rights = publishable(ctx, ref)
    item = versions.version_of(module, version)
    upload = versions.upload_url(item, rights)
    url = module_url(ref, item.version)
    response = ctx.render(
        "publishing/version.html",
        module=module,
        module_url=module_url(ref),
        module_page=module_path(module),
        url=url,
        state=_status(item),
        quarantine=item.quarantine,
        upload=upload,
        actions=[
            a
            for a in versions.offered_actions(item, owner=rights.is_owner)
            if a != VersionAction.UPLOAD
        ],
        labels={key: action.button for key, action in ACTIONS.items()},
        deprecation=item.deprecation,
        revocation=item.revocation,
        history=version_history(item),
        trail_url=f"/app/{organization}/audit-trail" if rights.is_owner else None,
    )
    return allow_connect(response, connect_origin(upload)) if upload else response


JSON_STATUS = Reply(
    200,
    schema={"type": "object"},
    media_type="application/json",
    description="the version's status, label, refusal reason and whether it settled",
)


SIGNED_OUT = Reply(
    401,
    schema={"type": "object"},
    media_type="application/json",
    description="no session (it ended): the page's script says to sign in again",
)


@page(bp, VERSION + "/status", auth=PublicPage, success=(JSON_STATUS, SIGNED_OUT))
def version_status(
    ctx: WebCtx,
    organization: str,
    registry: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
) -> Response:
    """The version's ingest status as JSON (the upload page polls it)."""
    if ctx.principal is None:  # JSON for the polling script, not the sign-in page
        return _json({"error": "signed out: sign in again"}, 401)
    module, _ = publishable(ctx, _ref(organization, registry, namespace, name, provider))
    return _json(_status(versions.version_of(module, version)))


def _json(body: dict[str, Any], status: int = 200) -> Response:
    headers: dict[str, str | list[str]] = {
        "Content-Type": "application/json",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
    }
    return Response(body=json.dumps(body), status_code=status, headers=headers)


def _action(name: str) -> Action:
    found = ACTIONS.get(name)
    if found is None:
        raise NotFound(f"no version action {name[:64]!r}")
    return found


def _confirm_page(
    ctx: WebCtx, ref: ModuleRef, version: str, name: str, status: int = 200, **extra: Any
) -> Response:
    action = _action(name)
    module, _ = publishable(ctx, ref, owner=action.owner)
    item = versions.version_of(module, version)
    if name == "deprecate" and "values" not in extra:  # deprecating again starts from today's
        kept = item.deprecation or {}
        extra["values"] = {
            "reason": kept.get("reason") or "",
            "link": kept.get("link") or "",
            REVOKE_AT: (kept.get(REVOKE_AT) or "").removesuffix("Z"),
        }
    return ctx.render(
        "publishing/confirm.html",
        status,
        title=action.title.format(version=item.version),
        question=f"{module.name}/{module.provider} {item.version}: {action.question}",
        action=module_url(ref, item.version) + "/" + name,
        button=action.button,
        danger=action.danger,
        cancel=module_url(ref, item.version),
        fields=action.fields,
        **extra,
    )


@page(bp, VERSION + "/{action}", auth=SignedIn)
def confirm_action(
    ctx: WebCtx,
    organization: str,
    registry: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
    action: str,
) -> Response:
    """Deprecate, undeprecate, revoke, un-revoke or delete this version? (a page of its own:
    without JavaScript there is no dialog)"""
    ref = _ref(organization, registry, namespace, name, provider)
    return _confirm_page(ctx, ref, version, action)


def _deadline(value: str | None) -> datetime | None:
    """The deprecate form's ``revoke-at`` (a ``datetime-local`` value, read as UTC; one with
    its own zone is taken as it is), None when empty; 422 when it is no time. The service
    checks the rest (``versions.change_version_lifecycle``)."""
    if not value or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise Unprocessable(
            "Revoke on must be a date and time, e.g. 2030-01-31T12:00", pointer=REVOKE_AT
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _change(action: str, form: Form) -> dict[str, LifecycleChange | None]:
    """The lifecycle change an action asks of ``change_version_lifecycle``."""
    link = form.get("link")
    if action == "deprecate":
        deadline = _deadline(form.get(REVOKE_AT))
        deprecation = LifecycleChange("Deprecated", form.get("reason"), link, deadline)
        return {"deprecation": deprecation, "revocation": None}
    changes = {
        "undeprecate": {"deprecation": LifecycleChange("Undeprecated", None, None)},
        "revoke": {"revocation": LifecycleChange("Revoked", form.get("message"), link)},
        "unrevoke": {"revocation": LifecycleChange("Unrevoked", None, None)},
    }[action]
    return {"deprecation": None, "revocation": None, **changes}


@page(
    bp, VERSION + "/{action}", ("POST",), auth=SignedIn, form=True, success=(Reply(303), Reply(422))
)
def do_action(
    ctx: WebCtx,
    organization: str,
    registry: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
    action: str,
) -> Response:
    """Do it, through the API's service; a refusal shows the form again with its reason."""
    ref = _ref(organization, registry, namespace, name, provider)
    wanted = _action(action)
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    publishable(ctx, ref, owner=wanted.owner)
    principal = ctx.principal_or_sign_in()
    if action == "delete":
        # The composer (no-code modules' service, VCS publishing): the pages that delete or create.
        from chalicelib.modules import composed

        parts = [ref.registry, ref.namespace, ref.name, ref.provider, version]
        gone = composed.delete(principal, organization, parts)  # the module, with its last one
        if gone:
            return redirect(f"/app/{organization}/registry/modules")
        return redirect(module_url(ref) + "?deleted=1")
    try:
        if action == "release":
            versions.release_version(principal, ref, version, form.get("reason"))
        else:
            versions.change_version_lifecycle(principal, ref, version, **_change(action, form))
    except Unprocessable as refused:
        values = {f.name: form.get(f.name) for f in wanted.fields}
        return _confirm_page(ctx, ref, version, action, 422, error=refused.detail, values=values)
    return redirect(module_url(ref, version))
