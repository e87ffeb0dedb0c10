"""No-code modules (``/api/v2/no-code-modules``) and registry modules' tag bindings, through
the HTTP layer (Chalice test client + moto)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api, doc, make_org, make_team
from tests.modules.helpers import MAIN_TF, ORG, create_module, create_version, upload_and_ingest

V2 = "/api/v2"
NOCODE = f"{V2}/organizations/acme/no-code-modules"
VPC = f"{ORG}/private/acme/vpc/aws"
OPTIONS = [
    {"variable-name": "region", "variable-type": "string", "options": ["eu-west-1", "us-east-1"]},
    {"variable-name": "cidr", "variable-type": "string", "options": ["10.0.0.0/16"]},
]


def nocode_doc(
    module_id: str | None,
    options: list[dict[str, Any]] | None = None,
    **attributes: Any,
) -> dict[str, Any]:
    """A create/PATCH document as go-tfe sends it: variable options inline, without ids."""
    relationships: dict[str, Any] = {}
    if module_id is not None:
        relationships["registry-module"] = {"data": {"type": "registry-modules", "id": module_id}}
    if options is not None:
        relationships["variable-options"] = {
            "data": [{"type": "variable-options", "attributes": o} for o in options]
        }
    data: dict[str, Any] = {"type": "no-code-modules", "attributes": attributes}
    if relationships:
        data["relationships"] = relationships
    return {"data": data}


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    return api


@pytest.fixture
def vpc(acme: Api) -> dict[str, Any]:
    """The vpc module with 1.0.0 published (ok) and 1.1.0 created but never uploaded."""
    module = create_module(acme)
    assert upload_and_ingest(create_version(acme, "1.0.0"), {"main.tf": MAIN_TF}) == "ok"
    assert create_version(acme, "1.1.0").status == 201
    return module


def module_relationship(api: Api) -> list[dict[str, str]]:
    return api.get(VPC).data["relationships"]["no-code-modules"]["data"]


# ----- no-code modules: shapes ----------------------------------------------------------------


def test_create_read_update_delete_render_what_clients_decode(acme: Api, vpc: dict):
    created = acme.post(NOCODE, nocode_doc(vpc["id"], OPTIONS, **{"version-pin": "1.0.0"}))
    assert created.status == 200, created.json  # TFE documents 200 for this create
    item = created.data
    assert item["id"].startswith("nocode-") and item["type"] == "no-code-modules"
    assert item["attributes"] == {"version-pin": "1.0.0", "enabled": True}
    relationships = item["relationships"]
    assert relationships["organization"] == {"data": {"id": "acme", "type": "organizations"}}
    assert relationships["registry-module"] == {
        "data": {"id": vpc["id"], "type": "registry-modules"}
    }
    option_refs = relationships["variable-options"]["data"]
    assert [ref["type"] for ref in option_refs] == ["variable-options"] * 2
    assert all(ref["id"].startswith("ncvo-") for ref in option_refs)

    path = f"{V2}/no-code-modules/{item['id']}"
    assert acme.get(path).data == item
    assert "included" not in acme.get(path).json
    # include=variable-options: the full resources, in the order they were given
    shown = acme.get(f"{path}?include=variable-options")
    assert shown.data == item
    assert [(i["type"], i["id"]) for i in shown.json["included"]] == [
        (ref["type"], ref["id"]) for ref in option_refs
    ]
    assert [i["attributes"] for i in shown.json["included"]] == OPTIONS
    assert acme.get(f"{path}?include=registry-module").status == 400

    # the module lists it, and include=no-code-modules includes it on every read
    assert module_relationship(acme) == [{"id": item["id"], "type": "no-code-modules"}]
    for read in (
        f"{ORG}?include=no-code-modules",
        f"{VPC}?include=no-code-modules",
        f"{V2}/registry-modules/{vpc['id']}?include=no_code_modules",
        f"{V2}/registry-modules/show/acme/vpc/aws?include=no-code-modules",
    ):
        assert acme.get(read).json["included"] == [item], read

    # a PATCH that changes nothing answers exactly what create answered (go-tfe compares)
    unchanged = acme.patch(path, nocode_doc(vpc["id"]))
    assert unchanged.status == 200 and unchanged.data == item
    assert acme.patch(path, nocode_doc(vpc["id"], OPTIONS, enabled=True)).data == item

    disabled = acme.patch(path, nocode_doc(vpc["id"], enabled=False))
    assert disabled.data["attributes"] == {"version-pin": "1.0.0", "enabled": False}
    # variable options replace the set: a kept variable keeps its id, a new one gets one
    replaced = acme.patch(
        path,
        nocode_doc(
            None,
            [
                OPTIONS[1] | {"options": ["10.1.0.0/16"]},
                {"variable-name": "az", "variable-type": "string"},
            ],
        ),
    )
    refs = replaced.data["relationships"]["variable-options"]["data"]
    assert refs[0]["id"] == option_refs[1]["id"] and refs[1]["id"] not in {
        r["id"] for r in option_refs
    }
    included = acme.get(f"{path}?include=variable_options").json["included"]
    assert [i["attributes"] for i in included] == [
        {"variable-name": "cidr", "variable-type": "string", "options": ["10.1.0.0/16"]},
        {"variable-name": "az", "variable-type": "string", "options": []},
    ]
    cleared = acme.patch(path, nocode_doc(None, []))
    assert cleared.data["relationships"]["variable-options"] == {"data": []}
    assert acme.patch(path, nocode_doc(None, **{"version-pin": ""})).data["attributes"] == {
        "version-pin": None,
        "enabled": False,
    }

    assert acme.delete(path).status == 204
    gone = acme.get(path)
    assert gone.status == 404 and gone.error["status"] == "404"
    assert acme.delete(path).status == 404
    assert acme.patch(path, nocode_doc(vpc["id"], enabled=True)).status == 404
    assert module_relationship(acme) == []
    assert acme.get(f"{VPC}?include=no-code-modules").json["included"] == []
    # the module is free again
    assert acme.post(NOCODE, nocode_doc(vpc["id"])).status == 200


def test_pytfe_shapes_are_accepted(acme: Api, vpc: dict):
    """pytfe names the module's type ``registry-module`` and leaves empty options out."""
    body = {
        "data": {
            "type": "no-code-modules",
            "attributes": {"enabled": False},
            "relationships": {
                "registry-module": {"data": {"type": "registry-module", "id": vpc["id"]}},
                "variable-options": {
                    "data": [
                        {
                            "type": "variable-options",
                            "attributes": {"variable-name": "x", "variable-type": "string"},
                        }
                    ]
                },
            },
        }
    }
    created = acme.post(NOCODE, body)
    assert created.status == 200, created.json
    assert created.data["attributes"] == {"version-pin": None, "enabled": False}
    # an update naming a stored option by id keeps it
    option_id = created.data["relationships"]["variable-options"]["data"][0]["id"]
    path = f"{V2}/no-code-modules/{created.data['id']}"
    renamed = {
        "type": "variable-options",
        "id": option_id,
        "attributes": {"variable-name": "y", "variable-type": "number", "options": ["1"]},
    }
    body = {
        "data": {
            "type": "no-code-modules",
            "relationships": {"variable-options": {"data": [renamed]}},
        }
    }
    updated = acme.patch(path, body)
    assert updated.status == 200, updated.json
    assert updated.data["relationships"]["variable-options"]["data"] == [
        {"id": option_id, "type": "variable-options"}
    ]


# ----- version pins, one per module, bad input ------------------------------------------------


def test_version_pin_rules(acme: Api, vpc: dict):
    """An existing version that has not failed, or ``latest``; left out: no pin (null, as
    go-tfe's test expects)."""
    failed = create_version(acme, "1.3.0")
    assert upload_and_ingest(failed, {"main.tf": 'locals {\n  x = "\\uD800"\n}\n'}) == "failed"
    (entry,) = [
        e for e in acme.get(VPC).data["attributes"]["version-statuses"] if e["version"] == "1.3.0"
    ]
    assert entry["error"].startswith('main.tf:2: invalid escape sequence "\\uD800"'), entry
    for pin, reason in (
        ("1.3.0", "is reg_ingress_failed (it failed; retry it first)"),
        ("1.2.5", "has no version 1.2.5"),
        ("not-a-version", "is not a version"),
    ):
        refused = acme.post(NOCODE, nocode_doc(vpc["id"], OPTIONS, **{"version-pin": pin}))
        assert refused.status == 422, refused.json
        assert refused.error["source"]["pointer"] == "/data/attributes/version-pin"
        assert reason in refused.error["detail"]
        assert module_relationship(acme) == []  # nothing created
    latest = acme.post(NOCODE, nocode_doc(vpc["id"], **{"version-pin": "latest"}))
    assert latest.data["attributes"]["version-pin"] == "latest"
    path = f"{V2}/no-code-modules/{latest.data['id']}"
    bad = acme.patch(path, nocode_doc(vpc["id"], enabled=False, **{"version-pin": "1.3.0"}))
    assert bad.status == 422 and bad.error["source"]["pointer"] == "/data/attributes/version-pin"
    assert acme.get(path).data == latest.data  # nothing changed, enabled included
    pinned = acme.patch(path, nocode_doc(vpc["id"], **{"version-pin": "1.0.0"}))
    assert pinned.data["attributes"]["version-pin"] == "1.0.0"
    # no pin at all
    assert acme.delete(path).status == 204
    unpinned = acme.post(NOCODE, nocode_doc(vpc["id"]))
    assert unpinned.data["attributes"] == {"version-pin": None, "enabled": True}


def test_a_pin_may_name_a_version_just_created_and_still_pending(acme: Api):
    """go-tfe's TestRegistryNoCodeModulesCreate/with_version_pin_given: create a module and
    its version 1.2.3 (never uploaded: pending), then a no-code module pinned to 1.2.3."""
    module = create_module(acme, "pinned")
    assert create_version(acme, "1.2.3", name="pinned").data["attributes"]["status"] == "pending"
    created = acme.post(NOCODE, nocode_doc(module["id"], **{"version-pin": "1.2.3"}))
    assert created.status == 200, created.json
    assert created.data["attributes"] == {"version-pin": "1.2.3", "enabled": True}
    assert created.data["relationships"]["registry-module"]["data"]["id"] == module["id"]
    # ...and a PATCH may pin another pending one
    assert create_version(acme, "1.2.4", name="pinned").status == 201
    path = f"{V2}/no-code-modules/{created.data['id']}"
    repinned = acme.patch(path, nocode_doc(module["id"], **{"version-pin": "1.2.4"}))
    assert repinned.data["attributes"]["version-pin"] == "1.2.4"


def test_a_module_created_with_no_code_gets_its_no_code_module(acme: Api):
    """go-tfe's TestRegistryModulesList/include_no-code_modules: a private module created
    with ``no-code: true`` has a no-code module (enabled, no pin), which
    ``include=no-code-modules`` returns; created in the module's transaction."""
    plain = create_module(acme, "plain")
    module = create_module(acme, "iam", **{"registry-name": "private", "no-code": True})
    assert module["attributes"]["no-code"] is True
    refs = module["relationships"]["no-code-modules"]["data"]
    assert len(refs) == 1 and refs[0]["id"].startswith("nocode-")
    assert plain["relationships"]["no-code-modules"]["data"] == []

    listed = acme.get(f"{ORG}?include=no-code-modules").json
    by_id = {item["id"]: item for item in listed["data"]}
    assert by_id[module["id"]] == module  # go-tfe compares create and list
    assert [(i["type"], i["id"]) for i in listed["included"]] == [
        ("no-code-modules", refs[0]["id"])
    ]
    item = listed["included"][0]
    assert item["attributes"] == {"version-pin": None, "enabled": True}
    assert item["relationships"]["registry-module"]["data"]["id"] == module["id"]
    assert acme.get(f"{V2}/no-code-modules/{refs[0]['id']}").data == item
    # it is a no-code module like any other: a second one is refused, deleting the module
    # deletes it
    assert acme.post(NOCODE, nocode_doc(module["id"])).status == 422
    assert acme.delete(f"{ORG}/private/acme/iam/aws").status == 204
    assert acme.get(f"{V2}/no-code-modules/{refs[0]['id']}").status == 404


def test_a_refused_no_code_create_writes_no_no_code_module(acme: Api):
    """The module and its no-code module are one transaction: a create refused because the
    module exists writes neither."""
    from chalicelib.modules.nocode import store

    first = create_module(acme, "iam", **{"no-code": True})
    again = acme.post(ORG, doc("registry-modules", name="iam", provider="aws", **{"no-code": True}))
    assert again.status == 422
    kept = store.of_organization("acme")
    assert [n.id for n in kept] == [first["relationships"]["no-code-modules"]["data"][0]["id"]]


def test_a_public_module_created_with_no_code_keeps_only_the_flag(acme: Api, hosted: None):
    public = acme.post(
        ORG,
        doc(
            "registry-modules",
            name="vpc",
            provider="aws",
            namespace="tam",
            **{"registry-name": "public", "no-code": True},
        ),
    ).data
    assert public["attributes"]["no-code"] is True
    assert public["relationships"]["no-code-modules"]["data"] == []


def test_one_no_code_module_per_registry_module(acme: Api, vpc: dict):
    first = acme.post(NOCODE, nocode_doc(vpc["id"]))
    assert first.status == 200
    second = acme.post(NOCODE, nocode_doc(vpc["id"], enabled=False))
    assert second.status == 422
    assert second.error["source"]["pointer"] == "/data/relationships/registry-module/data/id"
    assert first.data["id"] in second.error["detail"]
    assert module_relationship(acme) == [{"id": first.data["id"], "type": "no-code-modules"}]
    # another module of the organization has its own
    db = create_module(acme, "db")
    assert acme.post(NOCODE, nocode_doc(db["id"])).status == 200


@pytest.mark.parametrize(
    ("relationships", "attributes", "pointer"),
    [
        ({}, {}, "/data/relationships/registry-module"),
        ({"registry-module": {"data": None}}, {}, "/data/relationships/registry-module"),
        (
            {"registry-module": {"data": {"id": 5}}},
            {},
            "/data/relationships/registry-module/data/id",
        ),
        (
            {"registry-module": {"data": {"type": "workspaces", "id": "MOD"}}},
            {},
            "/data/relationships/registry-module/data/type",
        ),
        ({"variable-options": {"data": {}}}, {}, "/data/relationships/variable-options"),
        ({"variable-options": {"data": [5]}}, {}, "/data/relationships/variable-options/data/0"),
        (
            {
                "variable-options": {
                    "data": [
                        {"type": "variable-options", "attributes": {"variable-type": "string"}}
                    ]
                }
            },
            {},
            "/data/relationships/variable-options/data/0/attributes/variable-name",
        ),
        (
            {"variable-options": {"data": [{"attributes": {"variable-name": "a"}}]}},
            {},
            "/data/relationships/variable-options/data/0/attributes/variable-type",
        ),
        (
            {
                "variable-options": {
                    "data": [
                        {
                            "attributes": {
                                "variable-name": "a",
                                "variable-type": "string",
                                "options": [1],
                            }
                        }
                    ]
                }
            },
            {},
            "/data/relationships/variable-options/data/0/attributes/options/0",
        ),
        (
            {
                "variable-options": {
                    "data": [
                        {"attributes": {"variable-name": "a", "variable-type": "string"}},
                        {"attributes": {"variable-name": "a", "variable-type": "number"}},
                    ]
                }
            },
            {},
            "/data/relationships/variable-options/data/1/attributes/variable-name",
        ),
        (
            {
                "variable-options": {
                    "data": [
                        {
                            "id": "ncvo-unknown",
                            "attributes": {"variable-name": "a", "variable-type": "string"},
                        }
                    ]
                }
            },
            {},
            "/data/relationships/variable-options/data/0/id",
        ),
        ({}, {"enabled": "yes"}, "/data/attributes/enabled"),
        ({}, {"version-pin": 1}, "/data/attributes/version-pin"),
    ],
)
def test_bad_input_is_a_422_with_a_pointer_that_creates_nothing(
    acme: Api, vpc: dict, relationships: dict, attributes: dict, pointer: str
):
    if pointer != "/data/relationships/registry-module":
        relationships = {
            "registry-module": {"data": {"type": "registry-modules", "id": vpc["id"]}},
            **relationships,
        }
    body = {
        "data": {
            "type": "no-code-modules",
            "attributes": attributes,
            "relationships": relationships,
        }
    }
    reply = acme.post(NOCODE, body)
    assert reply.status == 422, reply.json
    assert reply.error["status"] == "422"
    assert reply.error["source"]["pointer"] == pointer
    assert module_relationship(acme) == []


def test_a_bad_patch_changes_nothing(acme: Api, vpc: dict):
    created = acme.post(NOCODE, nocode_doc(vpc["id"], OPTIONS)).data
    path = f"{V2}/no-code-modules/{created['id']}"
    before = acme.get(f"{path}?include=variable-options").json
    too_many = [{"variable-name": f"v{i}", "variable-type": "string"} for i in range(51)]
    other = create_module(acme, "db")
    for body, pointer in (
        (nocode_doc(None, too_many, enabled=False), "/data/relationships/variable-options/data"),
        (nocode_doc(other["id"], enabled=False), "/data/relationships/registry-module/data/id"),
        ({"data": {"type": "registry-modules", "attributes": {}}}, "/data/type"),
    ):
        reply = acme.patch(path, body)
        assert reply.status == 422 and reply.error["source"]["pointer"] == pointer, reply.json
    assert acme.get(f"{path}?include=variable-options").json == before


def test_modules_that_cannot_be_no_code_modules(acme: Api, vpc: dict):
    make_org(acme, "other")
    elsewhere = acme.post(
        f"{V2}/organizations/other/registry-modules",
        doc("registry-modules", name="x", provider="aws"),
    ).data
    for module_id in (elsewhere["id"], "mod-doesnotexist", "x" * 300):
        reply = acme.post(NOCODE, nocode_doc(module_id))
        assert reply.status in (404, 422), reply.json
        assert reply.status == 404 or reply.error["source"]["pointer"].endswith("/data/id")
    assert (
        acme.post(f"{V2}/organizations/nowhere/no-code-modules", nocode_doc(vpc["id"])).status
        == 404
    )


def test_a_curated_public_module_is_not_a_no_code_module(acme: Api, hosted: None):
    public = acme.post(
        ORG,
        doc(
            "registry-modules",
            name="vpc",
            provider="aws",
            namespace="tam",
            **{"registry-name": "public"},
        ),
    ).data
    reply = acme.post(NOCODE, nocode_doc(public["id"]))
    assert reply.status == 422
    assert reply.error["source"]["pointer"] == "/data/relationships/registry-module/data/id"


# ----- permissions ----------------------------------------------------------------------------


def test_managers_write_readers_read_everyone_else_gets_404(acme: Api, vpc: dict):
    make_org(acme, "other")
    _, publisher = make_team(acme, "acme", "publishers", manage_modules=True)
    _, reader = make_team(acme, "acme", "readers")
    _, outsider = make_team(acme, "other", "owners-of-other", manage_modules=True)
    org_token = acme.post(f"{V2}/organizations/acme/authentication-token").data["attributes"][
        "token"
    ]

    for token in (reader, org_token, outsider):
        refused = acme.as_(token).post(NOCODE, nocode_doc(vpc["id"]))
        assert refused.status == 404, refused.json
    assert module_relationship(acme) == []

    created = acme.as_(publisher).post(NOCODE, nocode_doc(vpc["id"], OPTIONS))
    assert created.status == 200, created.json
    path = f"{V2}/no-code-modules/{created.data['id']}"
    variables = f"{path}/versions/1.0.0/module-variables"
    for token in (reader, org_token):
        caller = acme.as_(token)
        assert caller.get(path).data == created.data
        assert caller.get(variables).status == 200
        assert caller.patch(path, nocode_doc(vpc["id"], enabled=False)).status == 404
        assert caller.delete(path).status == 404
    stranger = acme.as_(outsider)
    for reply in (
        stranger.get(path),
        stranger.get(variables),
        stranger.patch(path, nocode_doc(vpc["id"], enabled=False)),
        stranger.delete(path),
        stranger.post(
            f"{path}/workspaces", {"data": {"type": "workspaces", "attributes": {"name": "w"}}}
        ),
    ):
        assert reply.status == 404
    assert acme.as_(None).get(path).status == 401
    assert acme.get(path).data == created.data
    assert acme.as_(publisher).patch(path, nocode_doc(vpc["id"], enabled=False)).status == 200
    assert acme.as_(publisher).delete(path).status == 204


# ----- module variables -----------------------------------------------------------------------


def test_module_variables_of_a_version(acme: Api, vpc: dict):
    created = acme.post(NOCODE, nocode_doc(vpc["id"], OPTIONS[:1])).data
    path = f"{V2}/no-code-modules/{created['id']}"
    reply = acme.get(f"{path}/versions/1.0.0/module-variables")
    assert reply.status == 200, reply.json
    assert [v["type"] for v in reply.data] == ["registry-module-variables"] * 2
    by_name = {v["attributes"]["name"]: v["attributes"] for v in reply.data}
    assert by_name["region"] == {
        "name": "region",
        "type": "string",
        "description": "Where to deploy",
        "default": '"eu-west-1"',
        "required": False,
        "sensitive": False,
        "options": ["eu-west-1", "us-east-1"],
        "has-global": False,
    }
    assert by_name["cidr"]["required"] is True and by_name["cidr"]["default"] is None
    assert by_name["cidr"]["options"] == []
    # stable ids
    assert acme.get(f"{path}/versions/1.0.0/module-variables").data == reply.data
    for version in ("1.1.0", "9.9.9", "nope"):  # pending, unknown, not a version
        missing = acme.get(f"{path}/versions/{version}/module-variables")
        assert missing.status == 404 and missing.error["status"] == "404"
    assert (
        acme.get(f"{V2}/no-code-modules/nocode-nope/versions/1.0.0/module-variables").status == 404
    )


# ----- provisioning ---------------------------------------------------------------------------


def test_provisioning_is_refused_with_a_clear_422_after_the_404_checks(acme: Api, vpc: dict):
    created = acme.post(NOCODE, nocode_doc(vpc["id"])).data
    path = f"{V2}/no-code-modules/{created['id']}"
    body = {"data": {"type": "workspaces", "attributes": {"name": "app"}}}
    for target in (f"{path}/workspaces", f"{path}/workspaces/ws-anything/upgrade"):
        reply = acme.post(target, body)
        assert reply.status == 422, reply.json
        assert reply.error["title"] == "no-code provisioning is not available"
        assert "runs no Terraform" in reply.error["detail"]
        assert acme.post(target, raw="{not json").status in (400, 422)
    for target in (
        f"{V2}/no-code-modules/nocode-unknown/workspaces",
        f"{V2}/no-code-modules/nocode-unknown/workspaces/ws-x/upgrade",
    ):
        assert acme.post(target, body).status == 404


# ----- cascades -------------------------------------------------------------------------------


def no_code_items() -> list[str]:
    from chalicelib.modules.nocode.store import NoCodeModuleModel

    return [item.id for item in NoCodeModuleModel.scan()]


def test_deleting_the_registry_module_deletes_its_no_code_module(acme: Api, vpc: dict):
    created = acme.post(NOCODE, nocode_doc(vpc["id"])).data
    assert acme.delete(VPC).status == 204
    assert acme.get(f"{V2}/no-code-modules/{created['id']}").status == 404
    assert no_code_items() == []
    # the deprecated name-level delete, and the last version taking its module with it
    for delete in (
        lambda: acme.post(f"{V2}/registry-modules/actions/delete/acme/vpc", {}),
        lambda: acme.delete(f"{VPC}/1.0.0"),
        lambda: acme.delete(f"{ORG}/private/acme/vpc"),
    ):
        module = create_module(acme)
        assert upload_and_ingest(create_version(acme, "1.0.0"), {"main.tf": MAIN_TF}) == "ok"
        assert acme.post(NOCODE, nocode_doc(module["id"])).status == 200
        assert delete().status == 204
        assert no_code_items() == []


def test_deleting_the_pinned_version_keeps_the_pin(acme: Api, vpc: dict):
    """As TFE does: the pin stays, and that version's variables are a 404 from then on."""
    assert upload_and_ingest(create_version(acme, "2.0.0"), {"main.tf": MAIN_TF}) == "ok"
    created = acme.post(NOCODE, nocode_doc(vpc["id"], **{"version-pin": "2.0.0"})).data
    path = f"{V2}/no-code-modules/{created['id']}"
    assert acme.get(f"{path}/versions/2.0.0/module-variables").status == 200
    assert acme.delete(f"{VPC}/2.0.0").status == 204
    assert acme.get(path).data["attributes"]["version-pin"] == "2.0.0"
    assert acme.get(f"{path}/versions/2.0.0/module-variables").status == 404
    assert acme.get(f"{path}/versions/1.0.0/module-variables").status == 200


def test_deleting_the_organization_deletes_its_no_code_modules(acme: Api, vpc: dict):
    make_org(acme, "other")
    other = acme.post(
        f"{V2}/organizations/other/registry-modules",
        doc("registry-modules", name="x", provider="aws"),
    ).data
    kept = acme.post(f"{V2}/organizations/other/no-code-modules", nocode_doc(other["id"])).data
    acme.post(NOCODE, nocode_doc(vpc["id"]))
    assert acme.delete(f"{V2}/organizations/acme").status == 204
    assert no_code_items() == [kept["id"]]


# ----- tag bindings on registry modules -------------------------------------------------------


def bindings_doc(bindings: list[dict[str, str]] | None, **attributes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"type": "registry-modules", "attributes": attributes}
    if bindings is not None:
        data["relationships"] = {
            "tag-bindings": {"data": [{"type": "tag-bindings", "attributes": b} for b in bindings]}
        }
    return {"data": data}


def listed_bindings(api: Api, module_id: str) -> list[tuple[str, str]]:
    reply = api.get(f"{V2}/registry-modules/{module_id}/tag-bindings")
    assert reply.status == 200, reply.json
    assert all(b["type"] == "tag-bindings" and b["id"].startswith("tb-") for b in reply.data)
    return [(b["attributes"]["key"], b["attributes"]["value"]) for b in reply.data]


def test_module_tag_bindings_are_replaced_by_the_patch_and_listed(acme: Api):
    module = create_module(acme)
    link = f"{V2}/registry-modules/{module['id']}/tag-bindings"
    assert module["relationships"]["tag-bindings"] == {"links": {"related": link}}
    assert listed_bindings(acme, module["id"]) == []

    set_ = acme.patch(VPC, bindings_doc([{"key": "team", "value": "net"}, {"key": "tier"}]))
    assert set_.status == 200, set_.json
    assert set_.data["relationships"]["tag-bindings"] == {"links": {"related": link}}
    assert listed_bindings(acme, module["id"]) == [("team", "net"), ("tier", "")]
    team_id = acme.get(link).data[0]["id"]

    # absent: unchanged (other attributes still change)
    assert acme.patch(VPC, bindings_doc(None, **{"no-code": True})).status == 200
    assert listed_bindings(acme, module["id"]) == [("team", "net"), ("tier", "")]
    # replaced: a kept key keeps its id
    acme.patch(VPC, bindings_doc([{"key": "team", "value": "platform"}]))
    assert listed_bindings(acme, module["id"]) == [("team", "platform")]
    assert acme.get(link).data[0]["id"] == team_id
    # bad input: 422 with a pointer, nothing changed (the no-code flag included)
    for bad, pointer in (
        ([{"key": ""}], "/data/relationships/tag-bindings/data/0/attributes/key"),
        ([{"key": "a"}, {"key": "a"}], "/data/relationships/tag-bindings/data/1/attributes/key"),
        ([{"key": "hc:x"}], "/data/relationships/tag-bindings/data/0/attributes/key"),
    ):
        reply = acme.patch(VPC, bindings_doc(bad, **{"no-code": False}))
        assert reply.status == 422 and reply.error["source"]["pointer"] == pointer, reply.json
    malformed = {
        "data": {"type": "registry-modules", "relationships": {"tag-bindings": {"data": 5}}}
    }
    assert acme.patch(VPC, malformed).status == 422
    assert listed_bindings(acme, module["id"]) == [("team", "platform")]
    assert acme.get(VPC).data["attributes"]["no-code"] is True
    # [] clears
    assert acme.patch(VPC, bindings_doc([])).status == 200
    assert listed_bindings(acme, module["id"]) == []


def test_module_tag_bindings_permissions(acme: Api):
    make_org(acme, "other")
    module = create_module(acme)
    _, publisher = make_team(acme, "acme", "publishers", manage_modules=True)
    _, reader = make_team(acme, "acme", "readers")
    _, outsider = make_team(acme, "other", "owners-of-other", manage_modules=True)
    acme.patch(VPC, bindings_doc([{"key": "team", "value": "net"}]))
    link = f"{V2}/registry-modules/{module['id']}/tag-bindings"
    assert listed_bindings(acme.as_(reader), module["id"]) == [("team", "net")]
    # updating a module is for owners (404 for everyone else), and changes nothing
    for token in (publisher, reader, outsider):
        assert acme.as_(token).patch(VPC, bindings_doc([])).status == 404
    assert acme.as_(outsider).get(link).status == 404
    assert acme.get(f"{V2}/registry-modules/mod-unknown/tag-bindings").status == 404
    assert listed_bindings(acme, module["id"]) == [("team", "net")]


def test_a_curated_public_module_is_patched_on_the_hosted_edition(acme: Api, hosted: None):
    public_path = f"{ORG}/public/terraform-aws-modules/vpc/aws"
    public = acme.post(
        ORG,
        doc(
            "registry-modules",
            name="vpc",
            provider="aws",
            namespace="terraform-aws-modules",
            **{"registry-name": "public"},
        ),
    ).data
    reply = acme.patch(
        public_path, bindings_doc([{"key": "curated", "value": "yes"}], **{"no-code": True})
    )
    assert reply.status == 200, reply.json
    assert reply.data["attributes"]["no-code"] is True
    assert listed_bindings(acme, public["id"]) == [("curated", "yes")]


def test_public_modules_stay_refused_on_the_self_hosted_edition(acme: Api):
    reply = acme.patch(f"{ORG}/public/terraform-aws-modules/vpc/aws", bindings_doc([{"key": "a"}]))
    assert reply.status == 403
