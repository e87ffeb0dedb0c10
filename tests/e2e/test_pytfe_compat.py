"""The official Python client, pytfe 1.5.0, unchanged against the real local stack.

Every call goes through pytfe's own request building and response parsing; assertions are on
the parsed model objects. pytfe quirks we tolerate (not emulate), see client-compat.md and
tfe-api.md section 6:

* ``RegistryModule.permissions`` is always ``None``: pytfe reads ``permissions`` from the
  resource object instead of ``attributes``.
* ``RegistryModule.organization`` is ``{"name": ""}``: pytfe reads the name from
  ``relationships.organization.data.attributes``, which JSON:API never carries.
* ``RegistryModuleVersion.registry_module`` is a stub with only the id.
* ``Organization.created_at`` is ``None``: the model has no alias for ``created-at``.
* Deletes use the deprecated ``POST /registry-modules/actions/delete/...`` paths with ``{}``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

pytest.importorskip("pytfe")

from pytfe import TFEClient, TFEConfig
from pytfe.errors import NotFound, TFEError
from pytfe.models import OrganizationCreateOptions
from pytfe.models.registry_module import (
    PublishingMechanism,
    RegistryModule,
    RegistryModuleCreateOptions,
    RegistryModuleCreateVersionOptions,
    RegistryModuleID,
    RegistryModuleListIncludeOpt,
    RegistryModuleListOptions,
    RegistryModuleStatus,
    RegistryModuleUpdateOptions,
    RegistryModuleVersion,
    RegistryModuleVersionStatus,
    RegistryName,
)
from pytfe.models.team import (
    OrganizationAccessOptions,
    TeamCreateOptions,
    TeamListOptions,
)
from pytfe.models.team_token import TeamTokenCreateOptions

from tests.conftest import tar_gz
from tests.e2e.conftest import ADMIN_TOKEN, Stack, wait_for

pytestmark = pytest.mark.e2e

ORG = "pytfe-co"
OK = RegistryModuleVersionStatus.OK
MODULE_TF = """
variable "cidr" {
  type    = string
  default = "10.0.0.0/16"
}
resource "aws_vpc" "this" { cidr_block = var.cidr }
output "id" { value = aws_vpc.this.id }
"""


@dataclass
class Session:
    admin: TFEClient
    ci: TFEClient
    team_id: str
    token_id: str


def client(stack: Stack, token: str) -> TFEClient:
    # Everything else is pytfe's default (http2=True, its own headers and parsing). ca_bundle
    # would default to $SSL_CERT_FILE, which httpx 0.28 warns about; it is moot over http://.
    config = TFEConfig(address=stack.url, token=token, max_retries=1, timeout=15, ca_bundle=None)
    return TFEClient(config)


@pytest.fixture(scope="module")
def session(stack: Stack) -> Iterator[Session]:
    """An organization, a CI team allowed to publish and its token, all minted through pytfe."""
    admin = client(stack, ADMIN_TOKEN)
    created = admin.organizations.create(OrganizationCreateOptions(name=ORG, email="ops@pytfe.io"))
    assert (created.id, created.name, created.email) == (ORG, ORG, "ops@pytfe.io")
    team = admin.teams.create(
        ORG,
        TeamCreateOptions(
            name="ci", organization_access=OrganizationAccessOptions(manage_modules=True)
        ),
    )
    token = admin.team_tokens.create(team.id)
    assert token.token and token.id.startswith("at-")
    yield Session(admin, client(stack, token.token), team.id, token.id)
    admin.organizations.delete(ORG)


def module_id(name: str, provider: str) -> RegistryModuleID:
    return RegistryModuleID(organization=ORG, name=name, provider=provider)


def publish(ci: TFEClient, mid: RegistryModuleID, version: str, archive: bytes):
    """create_version, then pytfe's own upload helper on the version's upload link."""
    created = ci.registry_modules.create_version(
        mid, RegistryModuleCreateVersionOptions(version=version)
    )
    assert isinstance(created, RegistryModuleVersion)
    assert created.version == version
    assert created.status == RegistryModuleVersionStatus.PENDING
    assert created.id.startswith("modver-")
    assert created.links["upload"].startswith("http")
    ci.registry_modules.upload_tar_gzip(created.links["upload"], io.BytesIO(archive))
    return created


def settled(ci: TFEClient, mid: RegistryModuleID, version: str) -> RegistryModuleVersion:
    busy = (RegistryModuleVersionStatus.PENDING, RegistryModuleVersionStatus.REG_INGRESSING)
    return wait_for(
        lambda: ci.registry_modules.read_version(mid, version), lambda v: v.status not in busy
    )


def statuses(module: RegistryModule) -> list[tuple[str, RegistryModuleVersionStatus]]:
    return [(s.version, s.status) for s in module.version_statuses]


def test_accounts_through_pytfe(session: Session):
    admin = session.admin
    org = admin.organizations.read(ORG)
    assert (org.id, org.name, org.email) == (ORG, ORG, "ops@pytfe.io")
    assert ORG in [o.name for o in admin.organizations.list()]

    owners = list(admin.teams.list(ORG, TeamListOptions(names=["owners"])))
    assert [t.name for t in owners] == ["owners"]
    team = admin.teams.read(session.team_id)
    assert team.name == "ci"
    assert team.organization_access is not None and team.organization_access.manage_modules
    assert not team.organization_access.manage_workspaces

    held = admin.team_tokens.read(session.team_id)
    assert held.id == session.token_id
    assert held.token is None  # the secret is shown once, on creation
    assert held.team is not None and held.team.id == session.team_id

    # The CI token reads its own organization.
    assert session.ci.organizations.read(ORG).name == ORG


def test_team_token_with_description(session: Session):
    """pytfe's multi-token path: POST /teams/:id/authentication-tokens, then read, list and
    delete by id; the team's legacy single token keeps working throughout."""
    tokens = session.admin.team_tokens
    token = tokens.create_with_options(
        session.team_id, TeamTokenCreateOptions(description="nightly publisher")
    )
    assert token.token and token.description == "nightly publisher"
    assert tokens.read_by_id(token.id).description == "nightly publisher"
    assert token.id in [t.id for t in tokens.list(ORG)]
    tokens.delete_by_id(token.id)
    with pytest.raises(NotFound):
        tokens.read_by_id(token.id)
    assert session.ci.organizations.read(ORG).name == ORG


def test_publish_read_and_list_through_pytfe(session: Session):
    ci, modules = session.ci, session.ci.registry_modules
    aws, google = module_id("vpc", "aws"), module_id("vpc", "google")

    created = modules.create(ORG, RegistryModuleCreateOptions(name="vpc", provider="aws"))
    assert created.id.startswith("mod-")
    assert (created.name, created.provider, created.namespace) == ("vpc", "aws", ORG)
    assert created.registry_name == RegistryName.PRIVATE
    assert created.status == RegistryModuleStatus.PENDING
    assert created.publishing_mechanism == PublishingMechanism.NON_VCS
    assert created.version_statuses == [] and created.vcs_repo is None
    assert created.no_code is False
    second = modules.create(ORG, RegistryModuleCreateOptions(name="vpc", provider="google"))
    nocode = modules.create(
        ORG, RegistryModuleCreateOptions(name="db", provider="aws", no_code=True)
    )
    assert nocode.no_code is True
    # update (owners only) sends snake_case ``no_code``, not ``no-code``: accepted as an alias.
    updated = session.admin.registry_modules.update(
        module_id("db", "aws"), RegistryModuleUpdateOptions(no_code=False)
    )
    assert (updated.id, updated.no_code) == (nocode.id, False)

    v1 = publish(ci, aws, "1.0.0", tar_gz({"main.tf": MODULE_TF, "README.md": "# VPC\n"}))
    assert v1.registry_module is not None and v1.registry_module.id == created.id
    publish(ci, aws, "1.1.0-rc.1", tar_gz({"main.tf": MODULE_TF}))
    publish(ci, aws, "1.2.0", tar_gz({"../escape.tf": "x"}))

    done = settled(ci, aws, "1.0.0")
    assert (done.id, done.version, done.status) == (v1.id, "1.0.0", OK)
    assert done.source == "tfe-api"
    assert settled(ci, aws, "1.1.0-rc.1").status == OK
    refused = settled(ci, aws, "1.2.0")
    assert refused.status == RegistryModuleVersionStatus.REG_INGRESS_FAILED

    # read: by address (org-scoped path) and by id
    module = modules.read(aws)
    assert module.id == created.id
    assert module.status == RegistryModuleStatus.SETUP_COMPLETE
    assert statuses(module) == [
        ("1.0.0", OK),
        ("1.1.0-rc.1", OK),
        ("1.2.0", RegistryModuleVersionStatus.REG_INGRESS_FAILED),
    ]
    failure = module.version_statuses[2].error
    assert failure and "escape.tf" in failure
    assert modules.read(RegistryModuleID(id=created.id)).version_statuses == module.version_statuses

    # list, unfiltered (page size 1, so pytfe follows meta.pagination) and filtered
    def listed(**options) -> list[tuple[str, str]]:
        found = modules.list(ORG, RegistryModuleListOptions(**options) if options else None)
        return sorted((m.name, m.provider) for m in found)

    everything = [("db", "aws"), ("vpc", "aws"), ("vpc", "google")]
    assert listed() == everything
    assert listed(page_size=1) == everything
    assert listed(search="vp") == [("vpc", "aws"), ("vpc", "google")]
    assert listed(provider="google") == [("vpc", "google")]
    assert listed(search="vpc", provider="aws") == [("vpc", "aws")]
    assert listed(registry_name=RegistryName.PRIVATE, organization_name=ORG) == everything
    assert listed(include=[RegistryModuleListIncludeOpt.NO_CODE_MODULES]) == everything
    assert listed(search="no-such-module") == []
    by_id = {m.id: m for m in modules.list(ORG)}
    assert statuses(by_id[created.id]) == statuses(module)
    assert by_id[second.id].status == RegistryModuleStatus.PENDING

    # list_versions: the real endpoint, not pytfe's silent fallback to version-statuses
    # (which fabricates ids "modver-<version>" and has no timestamps).
    for mid in (aws, RegistryModuleID(id=created.id)):
        versions = {v.version: v for v in modules.list_versions(mid)}
        assert set(versions) == {"1.0.0", "1.1.0-rc.1", "1.2.0"}
        assert versions["1.0.0"].id == v1.id and versions["1.0.0"].created_at
        assert versions["1.0.0"].status == OK
        assert versions["1.2.0"].status == RegistryModuleVersionStatus.REG_INGRESS_FAILED
    assert list(modules.list_versions(google)) == []

    # errors pytfe surfaces as exceptions
    with pytest.raises(TFEError) as duplicate:
        modules.create_version(aws, RegistryModuleCreateVersionOptions(version="1.0.0"))
    assert duplicate.value.status == 422
    with pytest.raises(TFEError) as taken:
        modules.create(ORG, RegistryModuleCreateOptions(name="vpc", provider="aws"))
    assert taken.value.status == 422
    with pytest.raises(NotFound):
        modules.read_version(aws, "9.9.9")
    with pytest.raises(NotFound):
        modules.read(module_id("vpc", "azurerm"))
    with pytest.raises(NotFound):  # publishing is not deleting: that needs the owners team
        modules.delete_version(aws, "1.2.0")
    assert modules.read_version(aws, "1.2.0").id == refused.id


def test_deletes_through_pytfe_deprecated_paths(session: Session):
    modules, admin = session.ci.registry_modules, session.admin.registry_modules
    aws, azure = module_id("net", "aws"), module_id("net", "azurerm")
    for mid in (aws, azure):
        modules.create(ORG, RegistryModuleCreateOptions(name=mid.name, provider=mid.provider))
    publish(session.ci, aws, "2.0.0", tar_gz({"main.tf": MODULE_TF}))
    modules.create_version(aws, RegistryModuleCreateVersionOptions(version="2.1.0"))
    modules.create_version(azure, RegistryModuleCreateVersionOptions(version="0.1.0"))
    assert settled(session.ci, aws, "2.0.0").status == OK

    # one version
    admin.delete_version(aws, "2.1.0")
    assert [s.version for s in modules.read(aws).version_statuses] == ["2.0.0"]
    with pytest.raises(NotFound):
        modules.read_version(aws, "2.1.0")

    # one provider (with its published version); the other provider stays
    admin.delete_provider(aws)
    with pytest.raises(NotFound):
        modules.read(aws)
    assert [s.version for s in modules.read(azure).version_statuses] == ["0.1.0"]

    # the whole module by name
    admin.delete_by_name(azure)
    with pytest.raises(NotFound):
        modules.read(azure)
    assert "net" not in {m.name for m in modules.list(ORG)}

    # the older delete(organization, name) spelling
    modules.create(ORG, RegistryModuleCreateOptions(name="legacy", provider="aws"))
    admin.delete(ORG, "legacy")
    assert "legacy" not in {m.name for m in modules.list(ORG)}
    with pytest.raises(NotFound):
        admin.delete(ORG, "legacy")


def test_an_invited_person_through_pytfe(session: Session):
    """go-tfe's createOrganizationMembership flow (admin_user_integration_test.go
    TestAdminUsers_List "query by username or email" and TestAdminUsers_Delete) made with
    pytfe over the wire: invite a new address, read the membership with its user included
    (the invited person's user parses: pytfe's ``User`` refuses a null username), find
    them through the admin users list by that address, delete them; then the list is empty
    and the invitation gone."""
    from pytfe.models.admin_user import AdminUserListOptions
    from pytfe.models.organization_membership import (
        OrganizationMembershipCreateOptions,
        OrganizationMembershipReadOptions,
        OrgMembershipIncludeOpt,
    )

    admin = session.admin
    email = "pytfe-invitee@example.com"
    created = admin.organization_memberships.create(
        ORG, OrganizationMembershipCreateOptions(email=email)
    )
    read = admin.organization_memberships.read_with_options(
        created.id, OrganizationMembershipReadOptions(include=[OrgMembershipIncludeOpt.USER])
    )
    assert read.user is not None and read.user.email == email
    assert read.user.two_factor is not None and not read.user.two_factor.enabled
    listed = list(admin.admin.users.list(AdminUserListOptions(query=email)))
    assert [(u.id, u.email) for u in listed] == [(read.user.id, email)]
    admin.admin.users.delete(read.user.id)
    assert list(admin.admin.users.list(AdminUserListOptions(query=email))) == []
    with pytest.raises(NotFound):
        admin.organization_memberships.read(created.id)
