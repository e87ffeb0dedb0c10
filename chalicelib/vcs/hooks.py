"""Adding and removing a repository's webhook through the VCS host's API (the connection's
``api-url`` and token), as TFE does when a module is published.

* GitHub / GitHub Enterprise: ``POST <api>/repos/<owner>/<repo>/hooks`` (push and create
  events, JSON, the secret signs deliveries);
* GitLab: ``POST <api>/projects/<url-encoded path>/hooks`` (tag push events, the secret as
  the token);
* Bitbucket Cloud: ``POST <api>/2.0/repositories/<workspace>/<repo>/hooks`` (repo:push);
* Bitbucket Server / Data Center: ``POST <api>/rest/api/1.0/projects/<key>/repos/<repo>/webhooks``
  (repo:refs_changed).

Azure DevOps service hooks belong to a project subscription, not a repository: they are
added by hand (``ManualSetup`` says so). Error messages never contain the token or secret.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

TIMEOUT_SECONDS = 10
DESCRIPTION = "Terraform module registry"


class HookError(Exception):
    """The VCS host refused or failed; ``str(error)`` is safe to show."""


class ManualSetup(HookError):
    """This provider's webhooks cannot be added through its API by the registry."""


def _request(method: str, url: str, token: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            **({"Content-Type": "application/json"} if data is not None else {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310
            text = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        raise HookError(f"{method} {url} answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HookError(f"{method} {url} failed: {reason}") from None
    try:
        return json.loads(text) if text.strip() else None
    except ValueError:
        raise HookError(f"{method} {url} answered with something that is not JSON") from None


def _endpoint(provider: str, api_url: str, identifier: str) -> str:
    """The collection URL of the repository's webhooks."""
    base = api_url.rstrip("/")
    parts = [quote(part, safe="") for part in identifier.split("/")]
    if provider.startswith("github"):
        return f"{base}/repos/{parts[0]}/{parts[1]}/hooks"
    if provider.startswith("gitlab"):
        return f"{base}/projects/{quote(identifier, safe='')}/hooks"
    if provider == "bitbucket_hosted":
        return f"{base}/2.0/repositories/{parts[0]}/{parts[1]}/hooks"
    if provider.startswith("bitbucket"):
        return f"{base}/rest/api/1.0/projects/{parts[0]}/repos/{parts[1]}/webhooks"
    raise ManualSetup(
        "Azure DevOps service hooks are added by hand: subscribe 'Code pushed' for the "
        "repository to the webhook URL, with basic authentication and the webhook secret "
        "as the password"
    )


def _payload(provider: str, url: str, secret: str) -> dict[str, Any]:
    if provider.startswith("github"):
        return {
            "name": "web",
            "active": True,
            "events": ["push", "create"],
            "config": {"url": url, "content_type": "json", "secret": secret, "insecure_ssl": "0"},
        }
    if provider.startswith("gitlab"):
        return {"url": url, "token": secret, "push_events": False, "tag_push_events": True}
    if provider == "bitbucket_hosted":
        return {
            "description": DESCRIPTION,
            "url": url,
            "active": True,
            "events": ["repo:push"],
            "secret": secret,
        }
    return {
        "name": DESCRIPTION,
        "url": url,
        "active": True,
        "events": ["repo:refs_changed"],
        "configuration": {"secret": secret},
    }


def register(
    provider: str, api_url: str, token: str, identifier: str, url: str, secret: str
) -> str:
    """Add the webhook; returns the host's id for it."""
    endpoint = _endpoint(provider, api_url, identifier)
    answer = _request("POST", endpoint, token, _payload(provider, url, secret))
    hook_id = (answer or {}).get("uuid" if provider == "bitbucket_hosted" else "id")
    if hook_id in (None, ""):
        raise HookError(f"POST {endpoint} answered without a webhook id")
    return str(hook_id)


def unregister(provider: str, api_url: str, token: str, identifier: str, hook_id: str) -> None:
    """Remove the webhook; one that is already gone (404) counts as removed."""
    endpoint = f"{_endpoint(provider, api_url, identifier)}/{quote(hook_id, safe='')}"
    try:
        _request("DELETE", endpoint, token)
    except HookError as exc:
        if " answered 404 " not in str(exc):
            raise
