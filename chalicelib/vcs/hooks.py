"""Adding and removing a repository's webhook through the VCS host's API (the connection's
``api-url`` and token), as TFE does when a module is published.

* GitHub / GitHub Enterprise: ``POST <api>/repos/<owner>/<repo>/hooks`` (push and create
  events, JSON, the secret signs deliveries);
* GitLab: ``POST <api>/projects/<url-encoded path>/hooks`` (tag push events, the secret as
  the token);
* Bitbucket Cloud: ``POST <api>/2.0/repositories/<workspace>/<repo>/hooks`` (repo:push);
* Bitbucket Server / Data Center: ``POST <api>/rest/api/1.0/projects/<key>/repos/<repo>/webhooks``
  (repo:refs_changed).

The request shapes are per family of ``providers`` (Bitbucket Cloud apart from Server and
Data Center). Azure DevOps service hooks belong to a project subscription, not a repository:
they are added by hand (``ManualSetup`` says so). Error messages never contain the token or
secret.

The API URL is an organization owner's: every request goes through ``core.outbound``, to
that URL's origin and public addresses only (unless REGISTRY_OUTBOUND_ALLOW lists them);
an error says what status the API answered, or that the request was refused or failed,
never what a socket answered.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from chalicelib.core import outbound
from chalicelib.vcs import providers

TIMEOUT_SECONDS = 10
MAX_ANSWER_BYTES = 1024 * 1024
DESCRIPTION = "Terraform module registry"


class HookError(Exception):
    """The VCS host refused or failed; ``str(error)`` is safe to show."""


class ManualSetup(HookError):
    """This provider's webhooks cannot be added through its API by the registry."""


def _request(method: str, url: str, token: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        **({"Content-Type": "application/json"} if data is not None else {}),
    }
    try:
        destinations = outbound.Destinations.of(url)
        with outbound.fetch(
            url, destinations, timeout=TIMEOUT_SECONDS, method=method, headers=headers, body=data
        ) as response:
            if response.status >= 400:
                raise HookError(f"{method} {url} answered {response.status} {response.reason}")
            text = response.read_at_most(MAX_ANSWER_BYTES).decode("utf-8", "replace")
    except outbound.OutboundError as exc:
        raise HookError(f"{method} {url} failed: {exc}") from None
    try:
        return json.loads(text) if text.strip() else None
    except ValueError:
        raise HookError(f"{method} {url} answered with something that is not JSON") from None


@dataclass(frozen=True)
class _Api:
    """One family's webhook API: where a repository's hooks are, what adding one sends, and
    which member of the answer is the new hook's id."""

    collection: Callable[[str, str], str]  # (api base URL, identifier) -> URL of the hooks
    payload: Callable[[str, str], dict[str, Any]]  # (delivery URL, secret) -> request body
    id_member: str = "id"


def _owner_repo(identifier: str) -> tuple[str, str]:
    owner, repo = (quote(part, safe="") for part in identifier.split("/")[:2])
    return owner, repo


def _github_hooks(base: str, identifier: str) -> str:
    owner, repo = _owner_repo(identifier)
    return f"{base}/repos/{owner}/{repo}/hooks"


def _github_payload(url: str, secret: str) -> dict[str, Any]:
    return {
        "name": "web",
        "active": True,
        "events": ["push", "create"],
        "config": {"url": url, "content_type": "json", "secret": secret, "insecure_ssl": "0"},
    }


def _gitlab_hooks(base: str, identifier: str) -> str:
    return f"{base}/projects/{quote(identifier, safe='')}/hooks"


def _gitlab_payload(url: str, secret: str) -> dict[str, Any]:
    return {"url": url, "token": secret, "push_events": False, "tag_push_events": True}


def _bitbucket_cloud_hooks(base: str, identifier: str) -> str:
    workspace, repo = _owner_repo(identifier)
    return f"{base}/2.0/repositories/{workspace}/{repo}/hooks"


def _bitbucket_cloud_payload(url: str, secret: str) -> dict[str, Any]:
    return {
        "description": DESCRIPTION,
        "url": url,
        "active": True,
        "events": ["repo:push"],
        "secret": secret,
    }


def _bitbucket_server_hooks(base: str, identifier: str) -> str:
    project, repo = _owner_repo(identifier)
    return f"{base}/rest/api/1.0/projects/{project}/repos/{repo}/webhooks"


def _bitbucket_server_payload(url: str, secret: str) -> dict[str, Any]:
    return {
        "name": DESCRIPTION,
        "url": url,
        "active": True,
        "events": ["repo:refs_changed"],
        "configuration": {"secret": secret},
    }


# By family (``providers.Provider.family``); Azure DevOps has no entry (see ManualSetup).
_APIS: dict[str, _Api] = {
    "github": _Api(_github_hooks, _github_payload),
    "gitlab": _Api(_gitlab_hooks, _gitlab_payload),
    "bitbucket": _Api(_bitbucket_server_hooks, _bitbucket_server_payload),
}
# Bitbucket Cloud, the family's hosted edition, has an API of its own.
_BITBUCKET_CLOUD = _Api(_bitbucket_cloud_hooks, _bitbucket_cloud_payload, id_member="uuid")


def _api(provider: str) -> _Api:
    """The webhook API of ``provider``; ManualSetup for Azure DevOps (and for a name the
    provider table does not know)."""
    known = providers.find(provider)
    if known is not None and known.family == "bitbucket" and known.hosted:
        return _BITBUCKET_CLOUD
    api = _APIS.get(known.family) if known is not None else None
    if api is None:
        raise ManualSetup(
            "Azure DevOps service hooks are added by hand: subscribe 'Code pushed' for the "
            "repository to the webhook URL, with basic authentication and the webhook secret "
            "as the password"
        )
    return api


def _endpoint(api: _Api, api_url: str, identifier: str) -> str:
    """The collection URL of the repository's webhooks."""
    return api.collection(api_url.rstrip("/"), identifier)


def register(
    provider: str, api_url: str, token: str, identifier: str, url: str, secret: str
) -> str:
    """Add the webhook; returns the host's id for it."""
    api = _api(provider)
    endpoint = _endpoint(api, api_url, identifier)
    answer = _request("POST", endpoint, token, api.payload(url, secret))
    hook_id = (answer or {}).get(api.id_member)
    if hook_id in (None, ""):
        raise HookError(f"POST {endpoint} answered without a webhook id")
    return str(hook_id)


def unregister(provider: str, api_url: str, token: str, identifier: str, hook_id: str) -> None:
    """Remove the webhook; one that is already gone (404) counts as removed."""
    endpoint = f"{_endpoint(_api(provider), api_url, identifier)}/{quote(hook_id, safe='')}"
    try:
        _request("DELETE", endpoint, token)
    except HookError as exc:
        if " answered 404 " not in str(exc):
            raise
