"""VCS connections: OAuth clients and OAuth tokens as the TFE API and go-tfe shape them.

A client records how to reach a VCS host (service provider, HTTP and API URLs); creating it
with an ``oauth-token-string`` also creates its OAuth token (``ot-``), the id publishing
names. Token strings, SSH keys, client secrets and private keys are sealed with KMS
(``chalicelib.core.secrets``) and are write-only: no response carries them.

Reading needs access to the organization; creating, updating and deleting need the owners
team. Anything else is a 404, as for the rest of the API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from chalicelib.accounts import authorization
from chalicelib.accounts.organizations import service as organizations_service
from chalicelib.core import secrets
from chalicelib.core.api.errors import Conflict, NotFound, Unprocessable
from chalicelib.core.audit import events
from chalicelib.core.audit.events import Event
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import new_id, now
from chalicelib.vcs import git, providers, store
from chalicelib.vcs.store import (
    PURPOSE_PRIVATE_KEY,
    PURPOSE_SECRET,
    PURPOSE_SSH_KEY,
    PURPOSE_TOKEN,
    OAuthClientModel,
    OAuthTokenModel,
)

if TYPE_CHECKING:
    from chalicelib.vcs.schemas import ClientAttributes, TokenAttributes

POINTER = "/data/attributes/"
MAX_SECRET_LENGTH = 16 * 1024
MAX_TEXT_LENGTH = 2048


@dataclass(frozen=True)
class Connection:
    """What fetching from a repository needs: the client and the plaintext token string."""

    client: OAuthClientModel
    token_id: str
    token: str

    @property
    def username(self) -> str:
        return git.BASIC_AUTH_USERNAMES.get(self.client.service_provider, git.DEFAULT_USERNAME)

    def repository_url(self, identifier: str) -> str:
        return git.repository_url(self.client, identifier)


# ----- audit events -------------------------------------------------------------------------


def _event(
    principal: Principal,
    item: OAuthClientModel | OAuthTokenModel,
    action: str,
    **meta: Any,
) -> Event:
    """A connection's audit event: what changed, by name; never a token, key or secret."""
    kind = "oauth-client" if isinstance(item, OAuthClientModel) else "oauth-token"
    if isinstance(item, OAuthClientModel):
        meta = {"service-provider": item.service_provider, "name": item.name, **meta}
    else:
        meta = {"oauth-client-id": item.client_id, **meta}
    return events.event(
        principal,
        organization=item.organization,
        resource_type=kind,
        resource_id=item.id,
        action=action,
        meta=meta,
    )


# ----- validation ---------------------------------------------------------------------------


def _url(value: str | None, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Unprocessable(f"{name} is required for this service provider", pointer=POINTER + name)
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Unprocessable(f"{name} must be an http or https URL", pointer=POINTER + name)
    if parts.username or parts.password:
        raise Unprocessable(f"{name} must not contain credentials", pointer=POINTER + name)
    if parts.query or parts.fragment:
        raise Unprocessable(f"{name} must not have a query or fragment", pointer=POINTER + name)
    return value.strip().rstrip("/")


def _text(value: str | None, name: str, limit: int = MAX_TEXT_LENGTH) -> str | None:
    if value is None:
        return None
    if len(value) > limit:
        raise Unprocessable(f"{name} is longer than {limit} characters", pointer=POINTER + name)
    return value


def _secret_text(value: str | None, name: str) -> str | None:
    if value is None:
        return None
    if not value.strip():
        raise Unprocessable(f"{name} must not be empty", pointer=POINTER + name)
    return _text(value, name, MAX_SECRET_LENGTH)


def _provider(value: str | None) -> providers.Provider:
    known = providers.find(value)
    if known is None:
        allowed = ", ".join(providers.NAMES)
        raise Unprocessable(
            f"service-provider must be one of {allowed}", pointer=POINTER + "service-provider"
        )
    return known


# ----- access -------------------------------------------------------------------------------


def _current(item: OAuthClientModel | OAuthTokenModel) -> bool:
    """Whether ``item`` belongs to the organization of that name that exists now (not to a
    deleted one whose name was reused)."""
    return item.organization_id == organizations_service.organization_external_id(item.organization)


def _require_owner(principal: Principal, organization: str, what: str) -> None:
    refusal = f"not found: {what} needs a user or team token of the owners team"
    authorization.authorize(principal, "own", organization, refusal)


def _visible(
    get: Callable[[str], OAuthClientModel | OAuthTokenModel | None],
    item_id: str,
    label: str,
    principal: Principal,
    owner: bool,
) -> Any:
    """The client or token ``item_id`` if ``principal`` may see it (or, with ``owner``,
    change it) and it belongs to the organization of that name that exists now; else 404."""
    item = get(item_id)
    if item is None:
        raise NotFound(f"{label} {item_id} not found")
    rights = authorization.access(principal, item.organization)
    if not authorization.allows(rights, "own" if owner else "read") or not _current(item):
        raise NotFound(f"{label} {item_id} not found")
    return item


def _client(principal: Principal, client_id: str, *, owner: bool = False) -> OAuthClientModel:
    return _visible(store.get_client, client_id, "oauth client", principal, owner)


def _token(principal: Principal, token_id: str, *, owner: bool = False) -> OAuthTokenModel:
    return _visible(store.get_token, token_id, "oauth token", principal, owner)


# ----- clients ------------------------------------------------------------------------------


def create_client(
    principal: Principal, organization: str, attrs: ClientAttributes
) -> tuple[OAuthClientModel, list[OAuthTokenModel]]:
    _require_owner(principal, organization, "creating an OAuth client")
    organization_id = organizations_service.organization_external_id(organization)
    if organization_id is None:
        raise NotFound(f"organization {organization!r} not found")
    provider = _provider(attrs.service_provider)
    http_url = _url(attrs.http_url or provider.default_http_url, "http-url")
    api_url = _url(attrs.api_url or provider.default_api_url, "api-url")
    token_string = _secret_text(attrs.oauth_token_string, "oauth-token-string")
    private_key = _secret_text(attrs.private_key, "private-key")
    secret = _secret_text(attrs.secret, "secret")
    key = _text(attrs.key, "key")
    if token_string is None and not (provider.app_link and key and private_key):
        need = "oauth-token-string is required"
        if provider.app_link:
            need += " (or key and private-key for an application link)"
        raise Unprocessable(need, pointer=POINTER + "oauth-token-string")

    moment = now()
    client = OAuthClientModel(
        new_id("oc"),
        organization=organization,
        organization_id=organization_id,
        service_provider=provider.name,
        name=_text(attrs.name, "name"),
        http_url=http_url,
        api_url=api_url,
        key=key,
        rsa_public_key=_text(attrs.rsa_public_key, "rsa-public-key", MAX_SECRET_LENGTH),
        organization_scoped=True
        if attrs.organization_scoped is None
        else attrs.organization_scoped,
        callback_id=new_id("cb").removeprefix("cb-"),
        secret=secrets.seal(secret, purpose=PURPOSE_SECRET) if secret else None,
        private_key=(
            secrets.seal(private_key, purpose=PURPOSE_PRIVATE_KEY) if private_key else None
        ),
        created_at=moment,
        updated_at=moment,
    )
    token = _new_token(client, token_string) if token_string is not None else None
    extra = {"oauth-token-id": token.id} if token is not None else {}
    store.create_client(client, token, _event(principal, client, "created", **extra))
    return client, [token] if token is not None else []


def _new_token(client: OAuthClientModel, token_string: str) -> OAuthTokenModel:
    moment = now()
    return OAuthTokenModel(
        new_id("ot"),
        client_id=client.id,
        organization=client.organization,
        organization_id=client.organization_id,
        token=secrets.seal(token_string, purpose=PURPOSE_TOKEN),
        created_at=moment,
        updated_at=moment,
    )


def list_clients(principal: Principal, organization: str) -> list[OAuthClientModel]:
    authorization.organization_access(principal, organization)
    current = organizations_service.organization_external_id(organization)
    clients = store.clients_of_organization(organization)
    return [c for c in clients if c.organization_id == current]


def get_client(principal: Principal, client_id: str) -> OAuthClientModel:
    return _client(principal, client_id)


def client_tokens(client: OAuthClientModel) -> list[OAuthTokenModel]:
    return store.tokens_of_client(client.id)


def update_client(
    principal: Principal, client_id: str, attrs: ClientAttributes
) -> OAuthClientModel:
    client = _client(principal, client_id, owner=True)
    given = attrs.model_fields_set
    if "service_provider" in given and attrs.service_provider != client.service_provider:
        raise Unprocessable(
            "service-provider cannot be changed; create a new OAuth client",
            pointer=POINTER + "service-provider",
        )
    # Validate everything before anything is written.
    changes: dict[str, Any] = {}
    if "name" in given:
        changes["name"] = _text(attrs.name, "name")
    if "http_url" in given:
        changes["http_url"] = _url(attrs.http_url, "http-url")
    if "api_url" in given:
        changes["api_url"] = _url(attrs.api_url, "api-url")
    if "key" in given:
        changes["key"] = _text(attrs.key, "key")
    if "rsa_public_key" in given:
        changes["rsa_public_key"] = _text(attrs.rsa_public_key, "rsa-public-key", MAX_SECRET_LENGTH)
    if "organization_scoped" in given and attrs.organization_scoped is not None:
        changes["organization_scoped"] = attrs.organization_scoped
    secret = _secret_text(attrs.secret, "secret") if "secret" in given else None
    private_key = _secret_text(attrs.private_key, "private-key") if "private_key" in given else None
    token_string = (
        _secret_text(attrs.oauth_token_string, "oauth-token-string")
        if "oauth_token_string" in given
        else None
    )
    if "secret" in given:
        changes["secret"] = secrets.seal(secret, purpose=PURPOSE_SECRET) if secret else None
    if "private_key" in given:
        changes["private_key"] = (
            secrets.seal(private_key, purpose=PURPOSE_PRIVATE_KEY) if private_key else None
        )

    for name, value in changes.items():
        setattr(client, name, value)
    client.updated_at = now()
    # The names of what the request set (a secret's name, never its value).
    changed = sorted({*changes, *(["oauth_token_string"] if token_string else [])})
    event = _event(principal, client, "updated", changed=[n.replace("_", "-") for n in changed])
    if token_string is None:
        store.update_client(client, event)
        return client
    # A new token string replaces the client's token, or becomes its first one.
    existing = client_tokens(client)
    if existing:
        token = existing[0]
        token.token = secrets.seal(token_string, purpose=PURPOSE_TOKEN)
        token.updated_at = now()
        store.update_client(client, event, token)
    else:
        store.update_client(client, event, _new_token(client, token_string), new_token=True)
    return client


def delete_client(principal: Principal, client_id: str) -> None:
    client = _client(principal, client_id, owner=True)
    event = _event(principal, client, "deleted")
    if not store.delete_client(client, client_tokens(client), event):
        raise Conflict("the OAuth client changed while it was being deleted; retry")


def delete_all_for_organization(organization: str) -> None:
    """Remove every connection of an organization being deleted (idempotent)."""
    for client in store.clients_of_organization(organization):
        for token in client_tokens(client):
            token.delete()
        client.delete()


# ----- tokens -------------------------------------------------------------------------------


def list_client_tokens(principal: Principal, client_id: str) -> list[OAuthTokenModel]:
    return client_tokens(_client(principal, client_id))


def get_token(principal: Principal, token_id: str) -> OAuthTokenModel:
    return _token(principal, token_id)


def update_token(principal: Principal, token_id: str, attrs: TokenAttributes) -> OAuthTokenModel:
    token = _token(principal, token_id, owner=True)
    if "ssh_key" in attrs.model_fields_set:
        ssh_key = _secret_text(attrs.ssh_key, "ssh-key")
        token.ssh_key = secrets.seal(ssh_key, purpose=PURPOSE_SSH_KEY) if ssh_key else None
        token.updated_at = now()
        store.update_token(token, _event(principal, token, "updated", changed=["ssh-key"]))
    return token


def delete_token(principal: Principal, token_id: str) -> None:
    token = _token(principal, token_id, owner=True)
    if not store.delete_token(token, _event(principal, token, "deleted")):
        raise NotFound(f"oauth token {token_id} not found")


# ----- for publishing -----------------------------------------------------------------------


POINTER_TOKEN = "/data/attributes/vcs-repo/oauth-token-id"


def _publishing_token(token_id: str) -> OAuthTokenModel:
    token = store.get_token(token_id)
    if token is None or not _current(token):
        raise Unprocessable(f"oauth token {token_id!r} not found", pointer=POINTER_TOKEN)
    return token


def token_organization(principal: Principal, token_id: str) -> str:
    """The organization an OAuth token belongs to (the deprecated publish path names no
    organization: the token does); the same 422 when there is no such token and when the
    caller cannot read its organization, so an ``ot-`` id never tells whose it is."""
    organization = _publishing_token(token_id).organization
    if not authorization.access(principal, organization).can_read:
        raise Unprocessable(f"oauth token {token_id!r} not found", pointer=POINTER_TOKEN)
    return organization


def _token_and_client(organization: str, token_id: str) -> tuple[OAuthTokenModel, OAuthClientModel]:
    token = _publishing_token(token_id)
    if token.organization != organization:
        raise Unprocessable(f"oauth token {token_id!r} not found", pointer=POINTER_TOKEN)
    client = store.get_client(token.client_id)
    if client is None:
        raise Unprocessable(f"oauth token {token_id!r} not found", pointer=POINTER_TOKEN)
    return token, client


def resolve_connection(organization: str, token_id: str, *, unseal: bool = True) -> Connection:
    """The client and plaintext token behind ``token_id`` for fetching from ``organization``'s
    repositories; 422 when the token does not exist or belongs to another organization.
    With ``unseal=False`` the token string is left sealed (``token`` is empty): enough to
    validate a publish request without a KMS call.

    The caller has already checked the principal's rights on ``organization``."""
    token, client = _token_and_client(organization, token_id)
    plaintext = secrets.unseal(token.token, purpose=PURPOSE_TOKEN) if unseal else ""
    return Connection(client=client, token_id=token.id, token=plaintext)


def hook_access(organization: str, token_id: str) -> dict[str, Any]:
    """What removing a webhook at the VCS host needs later, when the connection may be gone:
    the provider, its API URL and the token string, still sealed (no KMS call here). 422 as
    ``resolve_connection``."""
    token, client = _token_and_client(organization, token_id)
    return {
        "service-provider": client.service_provider,
        "api-url": client.api_url,
        "sealed-token": token.token,
    }


def unseal_token(sealed: Any) -> str:
    """The token string sealed in a ``hook_access`` answer."""
    return secrets.unseal(sealed, purpose=PURPOSE_TOKEN)
