"""The VCS service providers the registry can connect to: one table, one row per provider.

Everything else in ``chalicelib.vcs`` that differs between providers reads it from here:
the connection defaults (``service``), the git username and identifier format (``git``), how
deliveries are signed (``deliveries``) and which webhook API applies (``hooks``, by family).

Providers of one *family* (``github``, ``gitlab``, ``bitbucket``, ``ado``) share their
webhook payloads and delivery signatures; the hosted edition of a family (the one with
default URLs) may still differ from its self-hosted editions, as Bitbucket Cloud's API does.
"""

from __future__ import annotations

from dataclasses import dataclass

ORG_REPO = "<org>/<repo>"


@dataclass(frozen=True)
class Provider:
    """One service provider, named as the TFE API's ``service-provider`` attribute."""

    name: str
    family: str
    display_name: str
    # Self-hosted editions have no defaults: a connection must give both URLs.
    default_http_url: str | None
    default_api_url: str | None
    # The username of the HTTP basic-auth pair that carries the token to the git host.
    git_username: str
    # How a repository identifier is written, for error messages.
    identifier_format: str
    # How a delivery proves it knows the webhook secret, for error messages.
    delivery_scheme: str
    # Appended to the repository's http URL to show a commit; ``{sha}`` is the commit.
    commit_path: str
    # Whether a key and private key (an application link) can replace a token string.
    app_link: bool = False

    @property
    def hosted(self) -> bool:
        """The SaaS edition (it has default URLs), not a self-hosted one."""
        return self.default_http_url is not None


@dataclass(frozen=True)
class _FamilyTraits:
    """What all providers of one family share."""

    git_username: str
    identifier_format: str
    delivery_scheme: str
    commit_path: str


_FAMILIES: dict[str, _FamilyTraits] = {
    "github": _FamilyTraits(
        git_username="x-access-token",
        identifier_format=ORG_REPO,
        delivery_scheme="X-Hub-Signature-256 HMAC-SHA256",
        commit_path="/commit/{sha}",
    ),
    "gitlab": _FamilyTraits(
        git_username="oauth2",
        identifier_format=ORG_REPO,
        delivery_scheme="X-Gitlab-Token",
        commit_path="/-/commit/{sha}",
    ),
    "bitbucket": _FamilyTraits(
        git_username="x-token-auth",
        # For Bitbucket Server and Data Center the first part is the project key.
        identifier_format="<project key>/<repository>",
        delivery_scheme="X-Hub-Signature HMAC-SHA256",
        commit_path="/commits/{sha}",
    ),
    "ado": _FamilyTraits(
        git_username="pat",
        identifier_format="<organization>/<project>/_git/<repository>",
        delivery_scheme="basic authentication, the secret as password",
        commit_path="/commit/{sha}",
    ),
}


def _row(
    name: str,
    family: str,
    display_name: str,
    http_url: str | None = None,
    api_url: str | None = None,
    *,
    app_link: bool = False,
) -> Provider:
    traits = _FAMILIES[family]
    return Provider(
        name=name,
        family=family,
        display_name=display_name,
        default_http_url=http_url,
        default_api_url=api_url,
        git_username=traits.git_username,
        identifier_format=traits.identifier_format,
        delivery_scheme=traits.delivery_scheme,
        commit_path=traits.commit_path,
        app_link=app_link,
    )


# In the order error messages list them.
ALL: tuple[Provider, ...] = (
    _row("github", "github", "GitHub", "https://github.com", "https://api.github.com"),
    _row("github_enterprise", "github", "GitHub Enterprise"),
    _row("gitlab_hosted", "gitlab", "GitLab.com", "https://gitlab.com", "https://gitlab.com/api/v4"),
    _row("gitlab_community_edition", "gitlab", "GitLab Community Edition"),
    _row("gitlab_enterprise_edition", "gitlab", "GitLab Enterprise Edition"),
    _row("bitbucket_hosted", "bitbucket", "Bitbucket Cloud", "https://bitbucket.org",
         "https://api.bitbucket.org"),
    _row("bitbucket_server", "bitbucket", "Bitbucket Server", app_link=True),
    _row("bitbucket_data_center", "bitbucket", "Bitbucket Data Center", app_link=True),
    _row("ado_services", "ado", "Azure DevOps Services", "https://dev.azure.com",
         "https://dev.azure.com"),
    _row("ado_server", "ado", "Azure DevOps Server"),
)  # fmt: skip
BY_NAME: dict[str, Provider] = {provider.name: provider for provider in ALL}
NAMES: tuple[str, ...] = tuple(BY_NAME)
FAMILIES: tuple[str, ...] = tuple(_FAMILIES)


def get(name: str) -> Provider:
    """The provider called ``name``; KeyError for a name the table does not know."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown VCS service provider {name!r}") from None


def find(name: str | None) -> Provider | None:
    """The provider called ``name``, or None: for callers that tolerate unknown names."""
    return BY_NAME.get(name) if name is not None else None


def family(name: str) -> str:
    """``github`` for github and github_enterprise, ``gitlab`` for gitlab_hosted, and so on;
    KeyError for an unknown provider."""
    return get(name).family


def commit_url(repo_http_url: str, provider: str, sha: str) -> str:
    """Where the VCS host shows commit ``sha`` of the repository at ``repo_http_url``.

    An unknown provider gets GitHub's ``/commit/<sha>``, the most common form."""
    known = find(provider)
    path = known.commit_path if known else _FAMILIES["github"].commit_path
    return repo_http_url + path.format(sha=sha)
