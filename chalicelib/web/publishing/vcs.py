"""Publishing a module from a connected VCS repository: the new-module page's second form
(the connection, the repository, tags or a branch), through ``publishing.publish`` as
``POST /organizations/:org/registry-modules/vcs`` does: the same checks, the same 422
messages, the webhook registered and the tags synced by the same jobs.

The API shows the module's webhook secret once; this page does not show it (the webhook is
registered at the host with it). A host whose webhook is added by hand (Azure DevOps) gets
a new secret through ``actions/regenerate-webhook-secret``.
"""

from __future__ import annotations

from chalice import Response

from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.api.openapi import Reply
from chalicelib.modules.service import ModuleRef
from chalicelib.web.publishing.common import PUBLISH, bp, module_url, publisher
from chalicelib.web.publishing.modules import new_module_page
from chalicelib.web.view import SignedIn, WebCtx, page, posted, redirect

FIELDS = ("oauth_token_id", "identifier", "branch", "initial_version")


@page(bp, PUBLISH + "/vcs", ("POST",), auth=SignedIn, form=True, success=(Reply(303), Reply(422)))
def new_module_from_vcs(ctx: WebCtx, organization: str) -> Response:
    """Create a module from a repository: a version per version tag, or (with a branch)
    versions created on its page from the branch head."""
    from pydantic import ValidationError  # with the request models, not the cold start

    from chalicelib.modules.publishing import service as publishing  # VCS only
    from chalicelib.modules.publishing.schemas import PublishAttributes

    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal, _ = publisher(ctx, organization)
    wanted = {name: form.get(name) for name in FIELDS}
    branch = wanted["branch"] or None
    try:
        attrs = PublishAttributes.model_validate(
            {
                "initial-version": wanted["initial_version"] or None,
                "vcs-repo": {
                    "identifier": wanted["identifier"] or None,
                    "oauth-token-id": wanted["oauth_token_id"] or None,
                    "branch": branch,
                    "tags": None if branch else True,
                },
            }
        )
        module, _, _ = publishing.publish(principal, organization, attrs)
    except (Unprocessable, ValidationError) as refused:
        message = refused.detail if isinstance(refused, Unprocessable) else "check the fields"
        return new_module_page(ctx, organization, 422, vcs_error=message, vcs_wanted=wanted)
    ref = ModuleRef(organization, "private", module.namespace, module.name, module.provider)
    return redirect(module_url(ref) + "?connected=1")
