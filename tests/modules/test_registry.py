"""Registry modules and versions through the HTTP layer (Chalice test client + moto)."""

from __future__ import annotations

import pytest

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from tests.conftest import Api, doc, make_org, make_team
from tests.modules.helpers import (
    MAIN_TF,
    ORG,
    create_module,
    create_version,
    upload_and_ingest,
    upload_key,
)


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    return api


def test_create_module_renders_what_clients_compare(acme: Api):
    module = create_module(acme, registry_name="private", no_code=True)  # snake_case alias
    attrs = module["attributes"]
    assert module["id"].startswith("mod-")
    assert attrs["namespace"] == "acme" and attrs["registry-name"] == "private"
    assert attrs["status"] == "pending" and attrs["version-statuses"] == []
    assert attrs["no-code"] is True
    assert "vcs-repo" not in attrs
    assert module["relationships"]["organization"]["data"] == {
        "id": "acme",
        "type": "organizations",
    }
    # go-tfe deep-compares create, read, read-by-id and list items.
    read = acme.get(f"{ORG}/private/acme/vpc/aws").data
    by_id = acme.get(f"/api/v2/registry-modules/{module['id']}").data
    deprecated = acme.get("/api/v2/registry-modules/show/acme/vpc/aws").data
    listed = acme.get(ORG).data
    assert read == by_id == deprecated == module
    assert listed == [module]


@pytest.mark.parametrize(
    ("attributes", "pointer"),
    [
        ({"provider": "aws"}, "/data/attributes/name"),
        ({"name": "vpc"}, "/data/attributes/provider"),
        ({"name": "-vpc", "provider": "aws"}, "/data/attributes/name"),
        ({"name": "vpc_", "provider": "aws"}, "/data/attributes/name"),
        ({"name": "v" * 65, "provider": "aws"}, "/data/attributes/name"),
        ({"name": "vpc", "provider": "AWS"}, "/data/attributes/provider"),
        ({"name": "vpc", "provider": "a" * 65}, "/data/attributes/provider"),
        ({"name": "vpc", "provider": "aws", "namespace": "other"}, "/data/attributes/namespace"),
        (
            {"name": "vpc", "provider": "aws", "registry-name": "secret"},
            "/data/attributes/registry-name",
        ),
        ({"name": 5, "provider": "aws"}, "/data/attributes/name"),
        ({"name": "vpc", "provider": "aws", "no-code": "yes"}, "/data/attributes/no-code"),
    ],
)
def test_create_module_rejects_bad_attributes(acme: Api, attributes: dict, pointer: str):
    reply = acme.post(ORG, {"data": {"type": "registry-modules", "attributes": attributes}})
    assert reply.status == 422, reply.json
    assert reply.error["status"] == "422"
    assert reply.error["source"]["pointer"] == pointer
    assert acme.get(ORG).data == []


def test_duplicate_module_and_public_curation(acme: Api, hosted_off=None):
    create_module(acme)
    again = acme.post(ORG, doc("registry-modules", name="vpc", provider="aws"))
    assert again.status == 422
    public = acme.post(
        ORG,
        doc(
            "registry-modules",
            name="vpc",
            provider="aws",
            namespace="terraform-aws-modules",
            **{"registry-name": "public"},
        ),
    )
    assert public.status == 403
    assert acme.get(f"{ORG}/public/terraform-aws-modules/vpc/aws").status == 403
    assert len(acme.get(ORG).data) == 1


def test_public_modules_on_the_hosted_edition(acme: Api, hosted: None):
    public = acme.post(
        ORG,
        doc(
            "registry-modules",
            name="vpc",
            provider="aws",
            namespace="terraform-aws-modules",
            **{"registry-name": "public"},
        ),
    )
    assert public.status == 201, public.json
    assert public.data["attributes"]["registry-name"] == "public"
    assert create_version_public(acme).status == 403
    # Only the namespace-and-name delete form exists for public modules.
    assert acme.delete(f"{ORG}/public/terraform-aws-modules/vpc/aws").status == 404
    assert acme.delete(f"{ORG}/public/terraform-aws-modules/vpc").status == 204
    assert acme.get(ORG).data == []


def test_deprecated_name_delete_removes_curated_public_modules(acme: Api, hosted: None):
    """go-tfe's cleanup deletes every module by name with the deprecated POST form."""
    public = {"registry-name": "public", "namespace": "terraform-aws-modules"}
    assert (
        acme.post(ORG, doc("registry-modules", name="vpc", provider="aws", **public)).status == 201
    )
    create_module(acme, "vpc", "aws")
    create_module(acme, "vpc", "google")
    create_module(acme, "eks", "aws", **public)
    deleted = acme.post("/api/v2/registry-modules/actions/delete/acme/vpc", {})
    assert deleted.status == 204, deleted.json
    assert sorted(m["attributes"]["name"] for m in acme.get(ORG).data) == ["eks"]
    gone = acme.post("/api/v2/registry-modules/actions/delete/acme/vpc", {})
    assert gone.status == 404
    # The provider and version forms stay private-only (SPEC: 404 for public modules).
    eks = acme.post("/api/v2/registry-modules/actions/delete/acme/eks/aws", {})
    assert eks.status == 404


def create_version_public(api: Api):
    return api.post(
        f"{ORG}/public/terraform-aws-modules/vpc/aws/versions",
        doc("registry-module-versions", version="1.0.0"),
    )


def test_version_lifecycle_upload_ingest_and_lookup(acme: Api):
    module = create_module(acme)
    created = create_version(acme, "1.0.0")
    assert created.status == 201, created.json
    version = created.data
    assert version["id"].startswith("modver-")
    assert version["attributes"]["status"] == "pending"
    assert version["relationships"]["registry-module"]["data"]["id"] == module["id"]
    upload = version["links"]["upload"]
    assert "/object/" in upload and upload.split("?")[0].endswith(".tar.gz")
    assert "X-Amz-Signature=" in upload

    assert upload_and_ingest(created, {"./main.tf": MAIN_TF, "./README.md": "# VPC"}) == "ok"

    lookup = acme.get(f"{ORG}/private/acme/vpc/aws/version?module_version=1.0.0")
    assert lookup.status == 200
    attrs = lookup.data["attributes"]
    assert attrs["status"] == "ok" and len(attrs["sha256"]) == 64
    assert "upload" not in (lookup.data.get("links") or {})
    read = acme.get(f"{ORG}/private/acme/vpc/aws").data["attributes"]
    assert read["status"] == "setup_complete"
    assert read["version-statuses"] == [{"version": "1.0.0", "status": "ok"}]

    from chalicelib.artifacts import objects
    from chalicelib.modules.store import ModuleVersionModel

    stored = next(iter(ModuleVersionModel.query(module["id"])))
    metadata = objects.get_metadata(stored.metadata_key)
    root = metadata["root"]
    assert root["name"] == "vpc" and root["readme"] == "# VPC"
    inputs = {i["name"]: i for i in root["inputs"]}
    assert inputs["region"]["default"] == '"eu-west-1"' and not inputs["region"]["required"]
    assert inputs["cidr"]["required"] is True
    assert [o["name"] for o in root["outputs"]] == ["vpc_id"]
    assert root["resources"] == [{"name": "this", "type": "aws_vpc"}]


def test_an_opentofu_module_is_ingested_with_its_tofu_files(acme: Api):
    """An archive holding ``.tofu`` files beside ``.tf`` ones: the ``.tofu`` file wins over
    the ``.tf`` file of its name, and what it declares is the version's metadata."""
    from chalicelib.artifacts import objects
    from chalicelib.modules.store import ModuleVersionModel

    module = create_module(acme)
    files = {
        "main.tofu": 'variable "cidr" { type = string }\nresource "aws_vpc" "this" {}\n',
        "main.tf": 'variable "cidr" { default = 1 }\nvariable "tf_only" {}\n',
        "outputs.tofu.json": '{"output": {"vpc_id": {"value": "x"}}}',
    }
    assert upload_and_ingest(create_version(acme, "1.0.0"), files) == "ok"
    stored = next(iter(ModuleVersionModel.query(module["id"])))
    root = objects.get_metadata(stored.metadata_key)["root"]
    assert [(i["name"], i["type"], i["required"]) for i in root["inputs"]] == [
        ("cidr", "string", True)
    ]
    assert [o["name"] for o in root["outputs"]] == ["vpc_id"]
    assert root["resources"] == [{"name": "this", "type": "aws_vpc"}]


def test_failed_ingest_keeps_a_reason_and_touches_nothing_else(acme: Api):
    create_module(acme)
    good = create_version(acme, "1.0.0")
    assert upload_and_ingest(good, {"main.tf": MAIN_TF}) == "ok"
    bad = create_version(acme, "1.1.0")
    assert upload_and_ingest(bad, {"../evil.tf": "x"}) == "failed"
    lookup = acme.get(f"{ORG}/private/acme/vpc/aws/version?module_version=1.1.0").data
    assert lookup["attributes"]["status"] == "reg_ingress_failed"
    assert "evil.tf" in lookup["attributes"]["error"]
    # The failed version can be retried: its upload link is still handed out.
    assert lookup["links"]["upload"]
    statuses = acme.get(f"{ORG}/private/acme/vpc/aws").data["attributes"]["version-statuses"]
    assert statuses[0] == {"version": "1.0.0", "status": "ok"}
    assert statuses[1]["status"] == "reg_ingress_failed" and "evil.tf" in statuses[1]["error"]

    not_gzip = create_version(acme, "1.2.0")
    assert upload_and_ingest(not_gzip, b"PK\x03\x04 this is a zip") == "failed"
    bad_hcl = create_version(acme, "1.3.0")
    assert upload_and_ingest(bad_hcl, {"main.tf": 'variable "x" {'}) == "failed"
    error = acme.get(f"{ORG}/private/acme/vpc/aws/version?module_version=1.3.0").data
    assert "main.tf" in error["attributes"]["error"]


def test_redelivered_and_late_uploads_are_harmless(acme: Api):
    from chalicelib.modules.ingest.handler import handle_s3_record

    create_module(acme)
    created = create_version(acme, "2.0.0")
    assert upload_and_ingest(created, {"main.tf": MAIN_TF}) == "ok"
    before = acme.get(f"{ORG}/private/acme/vpc/aws/version?module_version=2.0.0").data
    key = upload_key(created)
    # SQS redelivers the same event: the version is already ok, nothing changes.
    assert handle_s3_record({"s3": {"object": {"key": key}}}) == "already-ok"
    # A late re-upload over a published version is dropped; the archive stays as it was.
    assert upload_and_ingest(created, {"main.tf": "# replaced"}) == "already-ok"
    after = acme.get(f"{ORG}/private/acme/vpc/aws/version?module_version=2.0.0").data
    assert after["attributes"]["sha256"] == before["attributes"]["sha256"]


@pytest.mark.parametrize(
    ("version", "status"),
    [
        ("1.0", 422),
        ("v1.0.0", 422),
        ("01.0.0", 422),
        ("1.0.0-", 422),
        ("", 422),
        ("1.2.3-alpha+feature", 201),
        ("1.0.0-rc.1", 201),
    ],
)
def test_version_must_be_semver(acme: Api, version: str, status: int):
    create_module(acme)
    reply = create_version(acme, version)
    assert reply.status == status, reply.json
    if status == 422:
        assert reply.error["source"]["pointer"] == "/data/attributes/version"
        assert acme.get(f"{ORG}/private/acme/vpc/aws").data["attributes"]["version-statuses"] == []


def test_duplicate_version_is_422_and_both_paths_create(acme: Api):
    create_module(acme)
    new_path = acme.post(
        f"{ORG}/private/acme/vpc/aws/versions",
        doc("registry-module-versions", version="1.0.0", commit_sha="abc"),
    )
    assert new_path.status == 201
    assert new_path.data["attributes"]["commit-sha"] == "abc"
    assert create_version(acme, "1.0.0").status == 422
    assert create_version(acme, "1.0.0", name="missing").status == 404


def test_versions_are_listed_in_semver_order(acme: Api):
    create_module(acme)
    for v in ["1.10.0", "1.2.0", "1.2.0-rc.1", "1.2.0-beta.11", "1.2.0-beta.2", "0.9.0"]:
        assert create_version(acme, v).status == 201
    listed = acme.get(f"{ORG}/private/acme/vpc/aws/versions").data
    assert [v["attributes"]["version"] for v in listed] == [
        "1.10.0",
        "1.2.0",
        "1.2.0-rc.1",
        "1.2.0-beta.11",
        "1.2.0-beta.2",
        "0.9.0",
    ]
    statuses = acme.get(f"{ORG}/private/acme/vpc/aws").data["attributes"]["version-statuses"]
    assert [s["version"] for s in statuses] == [
        "0.9.0",
        "1.2.0-beta.2",
        "1.2.0-beta.11",
        "1.2.0-rc.1",
        "1.2.0",
        "1.10.0",
    ]


def test_list_search_filters_and_pagination(acme: Api):
    for name, provider in [
        ("vpc", "aws"),
        ("vpc", "google"),
        ("network", "azurerm"),
        ("bucket", "aws"),
    ]:
        create_module(acme, name, provider)

    def names(reply):
        return sorted(
            f"{m['attributes']['name']}/{m['attributes']['provider']}" for m in reply.data
        )  # noqa: E731

    assert names(acme.get(f"{ORG}?q=vpc")) == ["vpc/aws", "vpc/google"]
    assert names(acme.get(f"{ORG}?q=AZURE")) == ["network/azurerm"]
    assert names(acme.get(f"{ORG}?filter%5Bprovider%5D=aws")) == ["bucket/aws", "vpc/aws"]
    assert acme.get(f"{ORG}?filter[registry_name]=public").data == []
    assert acme.get(f"{ORG}?filter[organization_name]=other").data == []
    page = acme.get(f"{ORG}?page[size]=3&page[number]=2")
    assert len(page.data) == 1
    meta = page.json["meta"]["pagination"]
    assert meta == {
        "current-page": 2,
        "page-size": 3,
        "prev-page": 1,
        "next-page": None,
        "total-pages": 2,
        "total-count": 4,
    }
    assert page.json["links"]["first"].startswith("http")
    beyond = acme.get(f"{ORG}?page[number]=999")
    assert beyond.status == 200 and beyond.data == []
    assert beyond.json["meta"]["pagination"]["current-page"] == 999
    assert acme.get(f"{ORG}?page[size]=abc").status == 422


def test_delete_cascades_version_provider_module(acme: Api):
    create_module(acme, "vpc", "aws")
    create_module(acme, "vpc", "google")
    for v in ["1.0.0", "1.1.0"]:
        assert create_version(acme, v).status == 201
    assert create_version(acme, "1.0.0", provider="google").status == 201

    # version -> the provider survives while it has versions
    assert acme.delete(f"{ORG}/private/acme/vpc/aws/1.1.0").status == 204
    statuses = acme.get(f"{ORG}/private/acme/vpc/aws").data["attributes"]["version-statuses"]
    assert [s["version"] for s in statuses] == ["1.0.0"]
    assert acme.delete(f"{ORG}/private/acme/vpc/aws/1.1.0").status == 404
    # deleting the last version deletes the provider
    assert acme.post("/api/v2/registry-modules/actions/delete/acme/vpc/aws/1.0.0", {}).status == 204
    assert acme.get(f"{ORG}/private/acme/vpc/aws").status == 404
    assert acme.get(f"{ORG}/private/acme/vpc/google").status == 200
    # deleting the last provider leaves nothing of the name; `//` and trailing / tolerated
    assert acme.delete(f"{ORG}/private/acme/vpc/google//").status == 204
    assert acme.get(ORG).data == []
    # terrasnek joins with a trailing slash: `<name>//<provider>` and `<name>//<provider>/<v>`
    create_module(acme, "net", "aws")
    assert create_version(acme, "1.0.0", name="net").status == 201
    assert create_version(acme, "1.1.0", name="net").status == 201
    assert acme.delete(f"{ORG}/private/acme/net//aws/1.1.0").status == 204
    assert acme.delete(f"{ORG}/private/acme/net//aws").status == 204
    assert acme.get(ORG).data == []
    assert acme.delete(f"{ORG}/private/acme/vpc").status == 404


def test_delete_whole_module_and_deprecated_forms(acme: Api):
    create_module(acme, "vpc", "aws")
    create_module(acme, "vpc", "google")
    create_module(acme, "db", "aws")
    assert create_version(acme, "1.0.0").status == 201
    assert acme.post("/api/v2/registry-modules/actions/delete/acme/vpc", None).status == 204
    assert [m["attributes"]["name"] for m in acme.get(ORG).data] == ["db"]
    assert acme.post("/api/v2/registry-modules/actions/delete/acme/db/aws/", {}).status == 204
    assert acme.get(ORG).data == []


def test_permissions(acme: Api):
    make_org(acme, "other")
    create_module(acme)
    _, publisher = make_team(acme, "acme", "publishers", manage_modules=True)
    _, reader = make_team(acme, "acme", "readers")
    _, outsider = make_team(acme, "other", "owners-of-other", manage_modules=True)
    org_token = acme.post("/api/v2/organizations/acme/authentication-token", None)
    org_token = org_token.data["attributes"]["token"]

    # manage-modules may create modules and versions, but updating/deleting needs owners
    as_publisher = acme.as_(publisher)
    assert create_module(as_publisher, "db")["attributes"]["permissions"]["can-delete"] is False
    assert create_version(as_publisher, "1.0.0").status == 201
    assert as_publisher.delete(f"{ORG}/private/acme/vpc").status == 404
    assert (
        as_publisher.patch(
            f"{ORG}/private/acme/vpc/aws", doc("registry-modules", no_code=True)
        ).status
        == 404
    )
    # read-only team and organization token can read but not publish
    for token in (reader, org_token):
        caller = acme.as_(token)
        assert caller.get(f"{ORG}/private/acme/vpc/aws").status == 200
        refused = caller.post(ORG, doc("registry-modules", name="x", provider="aws"))
        assert refused.status == 404 and "not found" in refused.error["title"]
        assert create_version(caller, "2.0.0").status == 404
    # other organizations see nothing
    stranger = acme.as_(outsider)
    for path in (ORG, f"{ORG}/private/acme/vpc/aws", "/api/v2/registry-modules/show/acme/vpc/aws"):
        assert stranger.get(path).status == 404
    assert create_version(stranger, "3.0.0").status == 404
    assert stranger.delete(f"{ORG}/private/acme/vpc").status == 404
    module_id = acme.get(f"{ORG}/private/acme/vpc/aws").data["id"]
    assert stranger.get(f"/api/v2/registry-modules/{module_id}").status == 404
    assert acme.as_(None).get(ORG).status == 401
    assert acme.as_("nope").get(ORG).status == 401
    assert len(acme.get(f"{ORG}/private/acme/vpc/aws").data["attributes"]["version-statuses"]) == 1


def test_update_module_no_code_and_test_config(acme: Api):
    create_module(acme)
    reply = acme.patch(
        f"{ORG}/private/acme/vpc/aws/",
        {
            "data": {
                "type": "registry-modules",
                "attributes": {"no-code": True, "test-config": {"tests-enabled": True}},
            }
        },
    )
    assert reply.status == 200, reply.json
    attrs = reply.data["attributes"]
    assert attrs["no-code"] is True
    assert attrs["test-config"]["tests-enabled"] is True
    assert attrs["test-config"]["id"].startswith("tc-")
    bad = acme.patch(f"{ORG}/private/acme/vpc/aws", doc("registry-modules", **{"no-code": 1}))
    assert bad.status == 422
    assert acme.get(f"{ORG}/private/acme/vpc/aws").data["attributes"]["no-code"] is True


JUNK = [
    "",
    "null",
    "[]",
    '{"data": 5}',
    '{"data": {"attributes": []}}',
    "{not json",
    '{"data": {"attributes": {"name": {"a": 1}, "no-code": [1], "version": {"a": 1}}}}',
]


def test_no_junk_body_yields_a_500(acme: Api):
    create_module(acme)
    targets = [
        ("POST", ORG),
        ("POST", f"{ORG}/private/acme/vpc/aws/versions"),
        ("POST", "/api/v2/registry-modules/acme/vpc/aws/versions"),
        ("PATCH", f"{ORG}/private/acme/vpc/aws"),
    ]
    for method, path in targets:
        for body in JUNK:
            reply = acme.call(method, path, raw=body)
            assert 400 <= reply.status < 500, (method, path, body, reply.json)
            assert reply.json["errors"][0]["status"] == str(reply.status)
    assert len(acme.get(ORG).data) == 1


def test_only_callers_who_could_create_a_version_receive_its_upload_link(acme: Api):
    """A presigned PUT publishes whatever it carries: readers (read-only team, organization
    token, a member of a read-only team) never see one, on any read path, for a pending or a
    failed version; site admins, owners and manage-modules teams do."""
    from tests.accounts.helpers import add_member, new_user, team_id_by_name

    module = create_module(acme)
    assert create_version(acme, "1.0.0").status == 201  # pending, never uploaded
    assert upload_and_ingest(create_version(acme, "1.1.0"), {"../evil.tf": "x"}) == "failed"

    _, publisher = make_team(acme, "acme", "ci", manage_modules=True)
    reader_team, reader = make_team(acme, "acme", "readers")
    org_token = acme.post("/api/v2/organizations/acme/authentication-token", raw="null")
    _, member = new_user(acme, "bob")
    assert add_member(acme, reader_team, "bob").status in (200, 204)
    _, owner_member = new_user(acme, "olga")
    assert add_member(acme, team_id_by_name(acme, "acme", "owners"), "olga").status in (200, 204)

    def links_seen(token_or_client) -> list[bool]:
        caller = token_or_client if isinstance(token_or_client, Api) else acme.as_(token_or_client)
        replies = [
            caller.get(f"{ORG}/private/acme/vpc/aws/version?module_version=1.0.0"),
            caller.get(f"{ORG}/private/acme/vpc/aws/version?module_version=1.1.0"),
            caller.get(f"{ORG}/private/acme/vpc/aws/versions"),
            caller.get(f"/api/v2/registry-modules/{module['id']}/versions"),
        ]
        assert all(r.status == 200 for r in replies), [r.json for r in replies]
        items = [r.data for r in replies[:2]] + [v for r in replies[2:] for v in r.data]
        return [bool((item.get("links") or {}).get("upload")) for item in items]

    readers = {
        "read-only team token": reader,
        "organization token": org_token.data["attributes"]["token"],
        "member of a read-only team": member,
    }
    for kind, caller in readers.items():
        assert not any(links_seen(caller)), kind
    writers = {"site admin": acme, "owner": owner_member, "manage-modules team": publisher}
    for kind, caller in writers.items():
        assert all(links_seen(caller)), kind


# ----- hostile archives: refused with a reason, never stuck in reg_ingressing ----------------


def _version_attributes(api: Api, version: str) -> dict:
    return api.get(f"{ORG}/private/acme/vpc/aws/version?module_version={version}").data[
        "attributes"
    ]


def test_hostile_archive_is_refused_with_a_reason_and_the_next_upload_works(
    acme: Api, caplog: pytest.LogCaptureFixture
):
    import logging

    create_module(acme)
    created = create_version(acme, "1.0.0")
    deep = '{"variable": {"a": {"default": ' + "[" * 1_000 + "]" * 1_000 + "}}}"
    with caplog.at_level(logging.INFO, logger="registry.ingest"):
        assert upload_and_ingest(created, {"main.tf": MAIN_TF, "deep.tf.json": deep}) == "failed"
    attrs = _version_attributes(acme, "1.0.0")
    assert attrs["status"] == "reg_ingress_failed"
    assert attrs["error"] == "deep.tf.json: JSON nested 1003 levels deep, over the limit of 128"
    assert [r.levelname for r in caplog.records if r.name == "registry.ingest"] == ["INFO"]
    assert not any(r.exc_info for r in caplog.records)
    # The refused archive is gone; the same link takes the next upload, escapes and all.
    assert not client("s3").list_objects_v2(Bucket=get_settings().bucket).get("KeyCount")
    fixed = MAIN_TF + 'variable "odd" { description = "\\U0001F600 \\u00e9" }\n'
    assert upload_and_ingest(created, {"main.tf": fixed}) == "ok"
    assert _version_attributes(acme, "1.0.0")["status"] == "ok"
    assert upload_and_ingest(create_version(acme, "1.1.0"), {"main.tf": MAIN_TF}) == "ok"


def test_an_unforeseen_parser_exception_is_a_refusal_logged_in_one_line(
    acme: Api, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    import logging

    from chalicelib.modules.ingest import hcl

    def crash(files, limits=None):
        raise RecursionError("maximum recursion depth exceeded " + "x" * 100_000)

    create_module(acme)
    created = create_version(acme, "1.0.0")
    monkeypatch.setattr(hcl, "parse_module", crash)
    with caplog.at_level(logging.INFO, logger="registry.ingest"):
        assert upload_and_ingest(created, {"main.tf": MAIN_TF}) == "failed"
    attrs = _version_attributes(acme, "1.0.0")
    assert attrs["status"] == "reg_ingress_failed"
    assert attrs["error"].startswith("the archive could not be parsed (unexpected RecursionError)")
    (record,) = [r for r in caplog.records if r.name == "registry.ingest"]
    assert record.levelname == "WARNING" and record.exc_info is None
    assert "RecursionError" in record.getMessage() and len(record.getMessage()) < 1_000
    monkeypatch.undo()
    assert upload_and_ingest(created, {"main.tf": MAIN_TF}) == "ok"


def test_an_s3_failure_while_reading_the_archive_stays_retryable(
    acme: Api, monkeypatch: pytest.MonkeyPatch
):
    from botocore.exceptions import ReadTimeoutError

    from chalicelib.artifacts import objects

    class DroppingBody:
        def __init__(self, body) -> None:
            self._body, self._reads = body, 0

        def read(self, size=-1):
            self._reads += 1
            if self._reads > 1:
                raise ReadTimeoutError(endpoint_url="https://s3.example")
            return self._body.read(min(size, 64))

        def close(self) -> None:
            self._body.close()

    class FlakyS3:
        def __init__(self, real) -> None:
            self._real = real

        def get_object(self, **kwargs):
            obj = self._real.get_object(**kwargs)
            return {**obj, "Body": DroppingBody(obj["Body"])}

        def __getattr__(self, name):
            return getattr(self._real, name)

    create_module(acme)
    created = create_version(acme, "1.0.0")
    monkeypatch.setattr(objects, "client", lambda name: FlakyS3(client(name)))
    with pytest.raises(ReadTimeoutError):  # SQS will deliver the message again
        upload_and_ingest(created, {"main.tf": MAIN_TF, "README.md": "x" * 100_000})
    assert _version_attributes(acme, "1.0.0")["status"] == "reg_ingressing"
    monkeypatch.undo()
    from chalicelib.modules.ingest.handler import handle_s3_record

    assert handle_s3_record({"s3": {"object": {"key": upload_key(created)}}}) == "ok"


def test_oversized_metadata_is_refused_and_a_huge_readme_truncated(acme: Api):
    from chalicelib.artifacts import objects
    from chalicelib.modules.store import ModuleVersionModel

    module = create_module(acme)
    too_many = {  # 3 MB of descriptions in files under the 1 MiB per-file cap
        f"v{j}.tf": "".join(
            f'variable "v{j}_{i}" {{\n  description = "{"d" * 1_000}"\n}}\n' for i in range(750)
        )
        for j in range(4)
    }
    refused = create_version(acme, "1.0.0")
    assert upload_and_ingest(refused, too_many) == "failed"
    error = _version_attributes(acme, "1.0.0")["error"]
    assert "without the READMEs, over the limit of 2097152 bytes" in error

    readme = "# VPC\n" + "lorem ipsum dolor sit amet\n" * 200_000  # 5.4 MB
    kept = create_version(acme, "1.1.0")
    assert upload_and_ingest(kept, {"main.tf": MAIN_TF, "README.md": readme}) == "ok"
    stored = next(v for v in ModuleVersionModel.query(module["id"]) if v.version == "1.1.0")
    text = objects.get_metadata(stored.metadata_key)["root"]["readme"]
    assert text.startswith("# VPC\nlorem") and len(text.encode()) < 1024 * 1024 + 300
    assert "README truncated by the module registry" in text


# ----- deprecating and revoking versions ----------------------------------------------------

DEPRECATE = {
    "deprecation": {"deprecated-status": "Deprecated", "reason": "old", "link": "https://x.io/a"}
}
UNDEPRECATE = {"deprecation": {"deprecated-status": "Undeprecated"}}
REVOKE = {"revocation": {"status": "Revoked", "message": "CVE-1", "link": "http://x.io/cve"}}
UNREVOKE = {"revocation": {"status": "Unrevoked"}}
DEPRECATED = {"deprecated-status": "Deprecated", "reason": "old", "link": "https://x.io/a"}
REVOKED = {"status": "Revoked", "message": "CVE-1", "link": "http://x.io/cve"}
UNREVOKED = {"status": "Unrevoked", "message": None, "link": None}


def change_version(api: Api, version: str, attributes: dict, type_: str = "module-versions"):
    return api.patch(
        f"{ORG}/private/acme/vpc/aws/{version}",
        {"data": {"type": type_, "attributes": attributes}},
    )


def published_module(api: Api, *versions: str) -> dict:
    module = create_module(api)
    for version in versions:
        assert upload_and_ingest(create_version(api, version), {"main.tf": MAIN_TF}) == "ok"
    return module


def _lifecycle(api: Api, version: str) -> tuple[dict | None, dict | None]:
    attrs = _version_attributes(api, version)
    return attrs["deprecation"], attrs["revocation"]


@pytest.mark.parametrize(
    ("before", "change", "status", "after"),
    [
        ([], DEPRECATE, 200, (DEPRECATED, None)),
        (
            [DEPRECATE],
            {"deprecation": {"deprecated-status": "Deprecated", "reason": "newer"}},
            200,
            ({"deprecated-status": "Deprecated", "reason": "newer", "link": None}, None),
        ),
        (  # case-insensitive, stored as TFE spells it
            [],
            {"deprecation": {"deprecated_status": "deprecated"}},
            200,
            ({"deprecated-status": "Deprecated", "reason": None, "link": None}, None),
        ),
        ([], UNDEPRECATE, 200, (None, None)),
        ([DEPRECATE], UNDEPRECATE, 200, (None, None)),
        ([], REVOKE, "/data/attributes/revocation/status", None),
        (
            [DEPRECATE, REVOKE, UNREVOKE, UNDEPRECATE],
            REVOKE,
            "/data/attributes/revocation/status",
            None,
        ),
        ([DEPRECATE], REVOKE, 200, (DEPRECATED, REVOKED)),
        (
            [DEPRECATE, REVOKE],
            {"revocation": {"status": "Revoked"}},
            200,
            (DEPRECATED, {"status": "Revoked", "message": None, "link": None}),
        ),
        ([DEPRECATE, REVOKE], UNREVOKE, 200, (DEPRECATED, UNREVOKED)),
        ([DEPRECATE, REVOKE, UNREVOKE], REVOKE, 200, (DEPRECATED, REVOKED)),
        ([DEPRECATE, REVOKE, UNREVOKE], UNDEPRECATE, 200, (None, None)),
        ([], UNREVOKE, 200, (None, None)),
        ([DEPRECATE], UNREVOKE, 200, (DEPRECATED, None)),
        (
            [DEPRECATE, REVOKE],
            UNDEPRECATE,
            "/data/attributes/deprecation/deprecated-status",
            None,
        ),
        (  # deprecating a revoked version again replaces its reason; it stays revoked
            [DEPRECATE, REVOKE],
            {"deprecation": {"deprecated-status": "Deprecated", "reason": "why"}},
            200,
            ({"deprecated-status": "Deprecated", "reason": "why", "link": None}, REVOKED),
        ),
    ],
)
def test_deprecation_and_revocation_rules(
    acme: Api, before: list[dict], change: dict, status: int | str, after: tuple | None
):
    """Deprecate before revoke; un-revoking leaves the version deprecated; a revoked version
    cannot be undeprecated; a refused change (422 with a pointer) changes nothing."""
    published_module(acme, "1.0.0")
    for step in before:
        assert change_version(acme, "1.0.0", step).status == 200
    previous = _version_attributes(acme, "1.0.0")
    reply = change_version(acme, "1.0.0", change)
    if status == 200:
        assert reply.status == 200, reply.json
        attrs = reply.data["attributes"]
        assert (attrs["deprecation"], attrs["revocation"]) == after
        assert _lifecycle(acme, "1.0.0") == after
    else:
        assert reply.status == 422, reply.json
        assert reply.error["source"]["pointer"] == status
        assert _version_attributes(acme, "1.0.0") == previous


def _moved(before: tuple, after: tuple) -> bool:
    """Whether a version's lifecycle changed between two (deprecation, revocation) reads:
    deprecated or not, revoked or not (a new reason or an ``Unrevoked`` again is no move)."""

    def state(lifecycle: tuple) -> tuple[bool, bool]:
        deprecation, revocation = lifecycle
        return deprecation is not None, (revocation or {}).get("status") == "Revoked"

    return state(before) != state(after)


def test_a_version_page_offers_exactly_the_changes_the_service_makes(acme: Api):
    """One rule (``statuses.TRANSITIONS``), asked by the pages (``versions.offered_actions``)
    and enforced by the API: in every state, a lifecycle change the page offers is accepted
    and moves the version; one it does not offer is refused or moves nothing. A version not
    yet ok offers its upload and no lifecycle change."""
    from chalicelib.modules import store, versions

    create_module(acme)
    module = store.find_module("acme", store.module_key("private", "acme", "vpc", "aws"))
    assert module is not None
    pending = versions.version_of(
        module, create_version(acme, "0.1.0").data["attributes"]["version"]
    )
    assert versions.offered_actions(pending, owner=True) == ["upload", "delete"]
    assert change_version(acme, "0.1.0", DEPRECATE).status == 422
    paths = {
        "published": [],
        "deprecated": [DEPRECATE],
        "revoked": [DEPRECATE, REVOKE],
        "un-revoked": [DEPRECATE, REVOKE, UNREVOKE],
    }
    changes = {"deprecate": DEPRECATE, "undeprecate": UNDEPRECATE}
    changes |= {"revoke": REVOKE, "unrevoke": UNREVOKE}
    minor = 0
    for path, steps in paths.items():
        for action, change in changes.items():
            minor += 1
            version = f"1.{minor}.0"
            assert upload_and_ingest(create_version(acme, version), {"main.tf": MAIN_TF}) == "ok"
            for step in steps:
                assert change_version(acme, version, step).status == 200
            offered = versions.offered_actions(versions.version_of(module, version), owner=False)
            assert "upload" not in offered and "delete" not in offered
            before = _lifecycle(acme, version)
            reply = change_version(acme, version, change)
            moved = reply.status == 200 and _moved(before, _lifecycle(acme, version))
            assert (action in offered) == moved, (path, action, offered, reply.status)
            assert reply.status in (200, 422), reply.json


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"data": {"type": "module-versions", "attributes": {}}}, "/data/attributes"),
        ({"data": {"type": "module-versions"}}, "/data/attributes"),
        (
            {"data": {"type": "module-versions", "attributes": {**DEPRECATE, **UNREVOKE}}},
            "/data/attributes",
        ),
        ({"data": {"type": "workspaces", "attributes": DEPRECATE}}, "/data/type"),
        ({"data": {"attributes": DEPRECATE}}, "/data/type"),
        (doc("module-versions", deprecation="Deprecated"), "/data/attributes/deprecation"),
        (doc("module-versions", deprecation={}), "/data/attributes/deprecation/deprecated-status"),
        (
            doc("module-versions", deprecation={"deprecated-status": "Obsolete"}),
            "/data/attributes/deprecation/deprecated-status",
        ),
        (
            doc("module-versions", deprecation={"deprecated-status": True}),
            "/data/attributes/deprecation/deprecated-status",
        ),
        (
            doc(
                "module-versions",
                deprecation={"deprecated-status": "Deprecated", "reason": "r" * 1001},
            ),
            "/data/attributes/deprecation/reason",
        ),
        (
            doc("module-versions", deprecation={"deprecated-status": "Deprecated", "reason": 5}),
            "/data/attributes/deprecation/reason",
        ),
        *(
            (
                doc(
                    "module-versions", deprecation={"deprecated-status": "Deprecated", "link": link}
                ),
                "/data/attributes/deprecation/link",
            )
            for link in (
                "ftp://x.io/a",
                "javascript:alert(1)",
                "x.io/upgrade",
                "https://",
                "https://x.io/a b",
                "https://x.io/\n",
                "https://[::1",
                "https://x.io/" + "a" * 2048,
            )
        ),
        (
            doc("module-versions", revocation={"status": "Gone"}),
            "/data/attributes/revocation/status",
        ),
        (doc("module-versions", revocation={}), "/data/attributes/revocation/status"),
        (
            doc("module-versions", revocation={"status": "Revoked", "message": "m" * 1001}),
            "/data/attributes/revocation/message",
        ),
        (
            doc("module-versions", revocation={"status": "Revoked", "link": "mailto:a@x.io"}),
            "/data/attributes/revocation/link",
        ),
    ],
)
def test_bad_deprecation_or_revocation_is_a_422_that_changes_nothing(
    acme: Api, body: dict, pointer: str
):
    published_module(acme, "1.0.0")
    assert change_version(acme, "1.0.0", DEPRECATE).status == 200
    previous = _version_attributes(acme, "1.0.0")
    module = acme.get(f"{ORG}/private/acme/vpc/aws").data
    reply = acme.patch(f"{ORG}/private/acme/vpc/aws/1.0.0", body)
    assert reply.status == 422, reply.json
    assert reply.error["status"] == "422"
    assert reply.error["source"]["pointer"] == pointer
    assert _version_attributes(acme, "1.0.0") == previous
    assert acme.get(f"{ORG}/private/acme/vpc/aws").data == module


def test_deprecation_accepts_both_type_names_and_reaches_only_ok_versions(acme: Api):
    published_module(acme, "1.0.0")
    reply = change_version(acme, "1.0.0", DEPRECATE, type_="registry-module-versions")
    assert reply.status == 200, reply.json
    assert create_version(acme, "1.1.0").status == 201  # pending
    assert upload_and_ingest(create_version(acme, "1.2.0"), {"../x.tf": "x"}) == "failed"
    for version in ("1.1.0", "1.2.0"):
        refused = change_version(acme, version, DEPRECATE)
        assert refused.status == 422, refused.json
        assert "only published versions" in refused.error["detail"]
        assert _lifecycle(acme, version) == (None, None)
    for version in ("9.9.9", "not-a-version"):
        assert change_version(acme, version, DEPRECATE).status == 404
    assert (
        acme.patch(f"{ORG}/private/acme/nope/aws/1.0.0", doc("module-versions", **DEPRECATE)).status
        == 404
    )


def test_deprecation_and_revocation_are_rendered_on_every_read(acme: Api):
    module = published_module(acme, "1.0.0", "1.1.0", "1.2.0")
    deprecated = change_version(acme, "1.1.0", DEPRECATE)
    assert deprecated.status == 200
    # TFE answers a deprecation with the deprecation resource, related and included.
    relationship = deprecated.data["relationships"]["deprecation"]["data"]
    assert relationship["type"] == "deprecations" and relationship["id"].startswith("dep-")
    assert deprecated.json["included"] == [
        {
            "id": relationship["id"],
            "type": "deprecations",
            "attributes": {"reason": "old", "link": "https://x.io/a"},
        }
    ]
    assert change_version(acme, "1.2.0", DEPRECATE).status == 200
    revoked = change_version(acme, "1.2.0", REVOKE)
    assert revoked.status == 200
    assert revoked.data["attributes"]["revocation"] == REVOKED

    expected = {
        "1.0.0": (None, None),
        "1.1.0": (DEPRECATED, None),
        "1.2.0": (DEPRECATED, REVOKED),
    }
    for version, lifecycle in expected.items():
        assert _lifecycle(acme, version) == lifecycle
    for path in (
        f"{ORG}/private/acme/vpc/aws/versions",
        f"/api/v2/registry-modules/{module['id']}/versions",
    ):
        listed = {v["attributes"]["version"]: v for v in acme.get(path).data}
        for version, lifecycle in expected.items():
            attrs = listed[version]["attributes"]
            assert (attrs["deprecation"], attrs["revocation"]) == lifecycle
        assert "deprecation" not in listed["1.0.0"]["relationships"]
        assert listed["1.1.0"]["relationships"]["deprecation"] == {"data": relationship}

    attrs = acme.get(f"{ORG}/private/acme/vpc/aws").data["attributes"]
    assert attrs["version-statuses"] == [
        {"version": "1.0.0", "status": "ok"},
        {"version": "1.1.0", "status": "ok", "deprecation": DEPRECATED},
        {"version": "1.2.0", "status": "ok", "deprecation": DEPRECATED, "revocation": REVOKED},
    ]
    assert attrs["revoked-versions"] == ["1.2.0"]

    # Un-revoking: still deprecated, no longer among the revoked versions.
    assert change_version(acme, "1.2.0", UNREVOKE).status == 200
    attrs = acme.get(f"{ORG}/private/acme/vpc/aws").data["attributes"]
    assert attrs["version-statuses"][2] == {
        "version": "1.2.0",
        "status": "ok",
        "deprecation": DEPRECATED,
        "revocation": UNREVOKED,
    }
    assert attrs["revoked-versions"] == []
    # Undeprecating clears both, and the relationship goes with them.
    reply = change_version(acme, "1.2.0", UNDEPRECATE)
    assert "deprecation" not in reply.data["relationships"] and "included" not in reply.json
    assert acme.get(f"{ORG}/private/acme/vpc/aws").data["attributes"]["version-statuses"][2] == {
        "version": "1.2.0",
        "status": "ok",
    }


def test_only_owners_and_manage_modules_teams_deprecate_or_revoke(acme: Api):
    """The callers who may publish may deprecate and revoke; everyone else gets the 404 the
    rest of the API gives (a reader's attempt changes nothing)."""
    from tests.accounts.helpers import add_member, new_user, team_id_by_name

    published_module(acme, "1.0.0")
    make_org(acme, "other")
    _, publisher = make_team(acme, "acme", "ci", manage_modules=True)
    reader_team, reader = make_team(acme, "acme", "readers")
    _, workspace_manager = make_team(acme, "acme", "ws", manage_workspaces=True)
    _, outsider = make_team(acme, "other", "owners-of-other", manage_modules=True)
    org_token = acme.post("/api/v2/organizations/acme/authentication-token", raw="null")
    _, member = new_user(acme, "bob")
    assert add_member(acme, reader_team, "bob").status in (200, 204)
    _, owner_member = new_user(acme, "olga")
    assert add_member(acme, team_id_by_name(acme, "acme", "owners"), "olga").status in (200, 204)

    def caller(token_or_client) -> Api:
        return token_or_client if isinstance(token_or_client, Api) else acme.as_(token_or_client)

    refused = {
        "read-only team token": reader,
        "manage-workspaces team token": workspace_manager,
        "organization token": org_token.data["attributes"]["token"],
        "member of a read-only team": member,
        "another organization's team": outsider,
    }
    for kind, who in refused.items():
        for change in (DEPRECATE, UNDEPRECATE, REVOKE, UNREVOKE):
            reply = change_version(caller(who), "1.0.0", change)
            assert reply.status == 404, (kind, reply.json)
        assert _lifecycle(acme, "1.0.0") == (None, None), kind
    assert change_version(acme.as_(None), "1.0.0", DEPRECATE).status == 401
    allowed = {"site admin": acme, "owner": owner_member, "manage-modules team": publisher}
    for kind, who in allowed.items():
        for change, lifecycle in (
            (DEPRECATE, (DEPRECATED, None)),
            (REVOKE, (DEPRECATED, REVOKED)),
            (UNREVOKE, (DEPRECATED, UNREVOKED)),
            (UNDEPRECATE, (None, None)),
        ):
            reply = change_version(caller(who), "1.0.0", change)
            assert reply.status == 200, (kind, reply.json)
            assert _lifecycle(acme, "1.0.0") == lifecycle, kind


def test_a_lifecycle_write_on_a_stale_or_deleted_version_changes_nothing(acme: Api):
    """The store's condition: the version is still the ok one that was read. A request that
    lost a race decides again on the fresh item; one whose version went away is a 404."""
    from chalicelib.core.audit import events, trail
    from chalicelib.core.data.ids import now
    from chalicelib.modules import writes
    from chalicelib.modules.store import ModuleVersionModel

    module = published_module(acme, "1.0.0", "1.1.0")
    stale = next(v for v in ModuleVersionModel.query(module["id"]) if v.version == "1.0.0")
    assert change_version(acme, "1.0.0", DEPRECATE).status == 200
    # The change recorded its audit event, with it.
    recorded, _ = trail.read_page("acme", None, 1, 100)
    versions = [e for e in recorded if e["resource"]["type"] == "registry-module-version"]
    assert [(e["resource"]["id"], e["resource"]["action"]) for e in versions] == [
        (stale.id, "deprecated")
    ]

    def lost() -> events.Event:
        return events.event(
            None,
            organization="acme",
            resource_type="registry-module-version",
            resource_id=stale.id,
            action="undeprecated",
        )

    with pytest.raises(writes.VersionChanged):
        writes.record_version_lifecycle(stale, None, None, now(), lost())
    assert _lifecycle(acme, "1.0.0") == (DEPRECATED, None)
    assert acme.delete(f"{ORG}/private/acme/vpc/aws/1.0.0").status == 204
    deprecated = {"deprecated-status": "Deprecated"}
    with pytest.raises(writes.VersionChanged):
        writes.record_version_lifecycle(stale, deprecated, None, now(), lost())
    # Neither refused write recorded an event.
    assert trail.read_page("acme", None, 1, 100)[0] == recorded
    statuses = acme.get(f"{ORG}/private/acme/vpc/aws").data["attributes"]["version-statuses"]
    assert statuses == [{"version": "1.1.0", "status": "ok"}]


def test_a_change_that_lost_a_race_is_decided_again_on_the_fresh_version(
    acme: Api, monkeypatch: pytest.MonkeyPatch
):
    """The first write finds the version changed by a concurrent revoke: the request reads it
    again and applies its rule to what it finds (undeprecating a revoked version is refused);
    a version that keeps changing is a 409."""
    from chalicelib.modules import writes

    published_module(acme, "1.0.0")
    assert change_version(acme, "1.0.0", DEPRECATE).status == 200
    real = writes.record_version_lifecycle
    calls = []

    def revoked_meanwhile(version, *args):
        calls.append(version.revocation)
        if len(calls) == 1:
            real(version, version.deprecation, {"status": "Revoked"}, *args[2:])
            raise writes.VersionChanged
        return real(version, *args)

    monkeypatch.setattr(writes, "record_version_lifecycle", revoked_meanwhile)
    refused = change_version(acme, "1.0.0", UNDEPRECATE)
    assert refused.status == 422, refused.json
    assert refused.error["source"]["pointer"] == "/data/attributes/deprecation/deprecated-status"
    assert calls == [None]  # decided again on the fresh item, which is revoked: no second write
    assert _lifecycle(acme, "1.0.0")[1]["status"] == "Revoked"

    def always_changed(*args):
        raise writes.VersionChanged

    monkeypatch.setattr(writes, "record_version_lifecycle", always_changed)
    busy = change_version(acme, "1.0.0", UNREVOKE)
    assert busy.status == 409, busy.json
    assert _lifecycle(acme, "1.0.0")[1]["status"] == "Revoked"
