"""Lists page with keys (chalicelib.core.data.lists): a page reads its own items, a later page a
lean entry for each item before it, a search the lean index, whatever the organization's
size; the kept counts and the protocol's lean list follow every write; the backfill creates
them for data written before they existed. Bytes are counted as DynamoDB bills them (the
items each call returns, bench/reads.py)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from bench.reads import counting_reads
from tests.conftest import Api, doc, make_org, moto_items, put_back_items
from tests.core.helpers import LEAN, seed
from tests.modules.helpers import create_module, publish

V1 = "/api/registry/v1/modules"


def modules_url(org: str) -> str:
    return f"/api/v2/organizations/{org}/registry-modules"


def read(api: Api, path: str) -> tuple[Any, int]:
    """The reply and the bytes DynamoDB returned for it."""
    with counting_reads() as reads:
        reply = api.get(path)
    assert reply.status == 200, reply.json
    return reply.json, reads.bytes


# The tables as ``orgs`` seeded them the first time (moto's items); the tests using ``orgs``
# only read, so later ones start from a copy instead of writing 420 modules again.
_seeded: dict[str, Any] = {}


@pytest.fixture
def orgs(api: Api) -> Api:
    """Organizations ``small`` (20 modules) and ``large`` (400), as ``seed`` writes them."""
    if _seeded:
        put_back_items(_seeded)
    else:
        for org, count in (("small", 20), ("large", 400)):
            make_org(api, org)
            seed(org, count)
        _seeded.update(moto_items())
    api.get(modules_url("small"))  # warm: each model describes its table once per process
    return api


def test_a_page_reads_its_own_items_whatever_the_organization_size(orgs: Api):
    small, small_bytes = read(orgs, modules_url("small"))
    large, large_bytes = read(orgs, modules_url("large"))
    assert small["meta"]["pagination"]["total-count"] == 20
    assert large["meta"]["pagination"]["total-count"] == 400
    assert large["meta"]["pagination"]["total-pages"] == 20
    assert [m["attributes"]["name"] for m in large["data"]] == [f"mod{i:05d}" for i in range(20)]
    # The old list read all 400 modules (about 1 MB) for the same page.
    assert large_bytes <= 1.5 * small_bytes

    page10, page10_bytes = read(orgs, modules_url("large") + "?page[number]=10")
    assert [m["attributes"]["name"] for m in page10["data"]] == [
        f"mod{i:05d}" for i in range(180, 200)
    ]
    assert page10["meta"]["pagination"]["prev-page"] == 9
    assert page10_bytes <= large_bytes + 180 * LEAN


def searched(api: Api, path: str) -> tuple[Any, tuple[dict[str, int], int]]:
    """The reply, and the Queries and BatchGetItems it made and the items they returned
    (GetItems, one item each, are authentication's: its caches may expire between calls)."""
    with counting_reads() as reads:
        reply = api.get(path)
    assert reply.status == 200, reply.json
    listed = {op: n for op, n in reads.calls.items() if op in ("Query", "BatchGetItem")}
    return reply.json, (listed, reads.items - reads.calls["GetItem"])


def test_a_search_and_a_filter_read_the_kept_keys_not_the_modules(orgs: Api):
    from chalicelib.core.data import lists

    page, page_bytes = read(orgs, modules_url("large"))
    found_bytes = read(orgs, modules_url("large") + "?q=MOD0019")[1]
    found, (calls, items) = searched(orgs, modules_url("large") + "?q=MOD0019")
    assert [m["attributes"]["name"] for m in found["data"]] == [
        f"mod{i:05d}" for i in range(190, 200)
    ]
    assert found["meta"]["pagination"]["total-count"] == 10
    # The page's 10 modules, and a key per module of the organization.
    assert found_bytes <= page_bytes + 400 * LEAN
    # A search costs what it returns: the same calls at 20 modules and at 400, and at most
    # one item more per key set (the lean index: one entry more per module).
    small, (small_calls, small_items) = searched(orgs, modules_url("small") + "?q=MOD0001")
    assert small["meta"]["pagination"]["total-count"] == 10
    assert calls == small_calls
    assert items <= small_items + lists.KEY_SHARDS

    google, google_bytes = read(orgs, modules_url("large") + "?filter[provider]=google")
    assert google["meta"]["pagination"]["total-count"] == 200
    assert {m["attributes"]["provider"] for m in google["data"]} == {"google"}
    assert google_bytes <= page_bytes + 400 * LEAN


def test_the_protocol_list_and_search_read_only_lean_entries(orgs: Api):
    from chalicelib.core.data import lists

    listed, listed_bytes = read(orgs, f"{V1}/large?limit=10&offset=20")
    assert [m["id"] for m in listed["modules"]] == [
        f"large/mod{i:05d}/{'aws' if i % 2 == 0 else 'google'}/1.29.0" for i in range(20, 30)
    ]
    assert listed["meta"]["next_offset"] == 30 and listed["meta"]["prev_offset"] == 10
    _, small_bytes = read(orgs, f"{V1}/small?limit=10&offset=20")
    # No module item (about 2.5 KB here) is read: lean entries up to the page and one more.
    assert listed_bytes <= small_bytes + 31 * LEAN

    found, found_bytes = read(orgs, f"{V1}/search?q=mod0039&namespace=large")
    assert [m["name"] for m in found["modules"]] == [f"mod{i:05d}" for i in range(390, 400)]
    assert "next_offset" not in found["meta"]
    assert found_bytes <= small_bytes + 400 * LEAN
    # A search costs what it returns: the kept keys, then only the matching entries.
    _, (calls, items) = searched(orgs, f"{V1}/search?q=mod0039&namespace=large")
    few, (few_calls, few_items) = searched(orgs, f"{V1}/search?q=mod0001&namespace=small")
    assert [m["name"] for m in few["modules"]] == [f"mod{i:05d}" for i in range(10, 20)]
    assert calls == few_calls
    assert items <= few_items + lists.KEY_SHARDS
    paged, _ = read(orgs, f"{V1}/search?q=MOD00&namespace=large&limit=5&offset=397")
    assert [m["name"] for m in paged["modules"]] == ["mod00397", "mod00398", "mod00399"]
    assert paged["meta"]["prev_offset"] == 392 and "next_offset" not in paged["meta"]

    # Across organizations (a site admin reads both), in the protocol's order.
    both, _ = read(orgs, f"{V1}?limit=100&offset=390")
    assert [m["namespace"] for m in both["modules"]] == ["large"] * 10 + ["small"] * 20


def test_page_modules_answers_what_the_whole_list_answered(api: Api, hosted: None):
    """Every page, filter and search of a mixed organization (two registries, several
    providers) equals the old answer: the whole organization read, filtered and sliced."""
    from chalicelib.core.api.pagination import Page, paginate
    from chalicelib.modules import service

    make_org(api, "acme")
    for name, provider in itertools.product(("vpc", "db", "net-core"), ("aws", "google")):
        create_module(api, name, provider)
    for namespace in ("hashicorp", "terraform-aws-modules"):
        reply = api.post(
            modules_url("acme"),
            doc(
                "registry-modules",
                name="vpc",
                provider="aws",
                **{"registry-name": "public", "namespace": namespace},
            ),
        )
        assert reply.status == 201, reply.json
    principal = _admin()
    queries = [None, "vpc", "AWS", "hashi", "nothing"]
    filters = [{}, {"provider": "aws"}, {"registry_name": "public"}, {"registry_name": "private"}]
    for q, wanted in itertools.product(queries, filters):
        everything, _ = service.list_modules(principal, "acme", q, wanted)
        for size, number in itertools.product((1, 3, 20), (1, 2, 4, 9)):
            page = Page(number, size)
            old = paginate(everything, page, "u", {})
            new, total, _ = service.page_modules(principal, "acme", q, wanted, page)
            assert [m.key for m in new] == [m.key for m in old.items], (q, wanted, size, number)
            assert total == old.meta["pagination"]["total-count"]


def _admin():
    from chalicelib.core.auth import authenticate
    from tests.conftest import ADMIN_TOKEN

    return authenticate(f"Bearer {ADMIN_TOKEN}")


def test_counts_and_protocol_entries_follow_every_write(api: Api):
    from chalicelib.modules import service

    make_org(api, "acme")
    create_module(api, "vpc", "aws")
    create_module(api, "db", "aws")

    def total() -> int:
        return api.get(modules_url("acme")).json["meta"]["pagination"]["total-count"]

    def listed() -> list[str]:
        return [m["id"] for m in api.get(f"{V1}/acme").json["modules"]]

    assert total() == 2 and listed() == []  # nothing servable yet
    assert service.providers_in_use("acme") == ["aws"]
    publish(api, "1.0.0")
    publish(api, "1.1.0")
    publish(api, "2.0.0-rc.1")
    assert listed() == ["acme/vpc/aws/1.1.0"]
    published = api.get(f"{V1}/acme").json["modules"][0]["published_at"]
    assert published == api.get(f"{V1}/acme/vpc/aws/1.1.0").json["published_at"]

    revoke = {
        "data": {
            "type": "registry-module-versions",
            "attributes": {"revocation": {"status": "Revoked", "message": "bad"}},
        }
    }
    base = modules_url("acme") + "/private/acme/vpc/aws"
    deprecate = {
        "data": {
            "type": "registry-module-versions",
            "attributes": {"deprecation": {"deprecated-status": "Deprecated"}},
        }
    }
    assert api.patch(f"{base}/1.1.0", deprecate).status == 200, "deprecate first"
    reply = api.patch(f"{base}/1.1.0", revoke)
    assert reply.status == 200, reply.json
    assert listed() == ["acme/vpc/aws/1.0.0"]
    assert api.delete(f"{base}/1.0.0").status == 204
    assert listed() == ["acme/vpc/aws/2.0.0-rc.1"]  # only a pre-release is left

    create_module(api, "db", "google")
    assert service.providers_in_use("acme") == ["aws", "google"]
    assert api.delete(modules_url("acme") + "/private/acme/db").status == 204
    assert total() == 1 and service.providers_in_use("acme") == ["aws"]
    assert api.delete(modules_url("acme") + "/private/acme/vpc").status == 204
    assert total() == 0 and listed() == []
    create_module(api, "vpc", "aws")
    assert total() == 1


def test_the_key_sets_follow_every_write_and_the_lean_index_stands_in_for_them(api: Api):
    from chalicelib.core.data import lists
    from chalicelib.modules import service, store

    def kept() -> list[str] | None:
        return store.kept_keys("acme", service.module_counts("acme"))

    def found(q: str) -> list[str]:
        reply = api.get(modules_url("acme") + f"?q={q}").json
        assert reply["meta"]["pagination"]["total-count"] == len(reply["data"])
        return [f"{m['attributes']['name']}/{m['attributes']['provider']}" for m in reply["data"]]

    make_org(api, "acme")
    assert kept() is None  # no module, no count: the lean index is read (and is empty)
    for name, provider in itertools.product(("vpc", "db"), ("aws", "google")):
        create_module(api, name, provider)
    assert kept() == sorted(m.key for m in store.modules_of("acme"))
    assert api.delete(modules_url("acme") + "/private/acme/db").status == 204
    assert kept() == ["private#acme#vpc#aws", "private#acme#vpc#google"]
    assert found("VPC") == ["vpc/aws", "vpc/google"] and found("db") == []

    # A key lost (or sets written before they were kept): the sets no longer hold the whole
    # list, so a search reads the lean index, and answers the same, until the backfill.
    scope = lists.key_set_scope(store.count_scope("acme"))
    lists.KeySetModel(scope, lists.key_shard("private#acme#vpc#google")).delete()
    assert kept() is None
    assert found("goo") == ["vpc/google"]
    assert store.backfill_lists()["key sets written"] == 1
    assert kept() == ["private#acme#vpc#aws", "private#acme#vpc#google"]
    assert "key sets written" not in store.backfill_lists()


def test_the_backfill_creates_what_the_lists_read_and_is_safe_to_rerun(api: Api):
    from chalicelib.core.data import lists
    from chalicelib.modules import store
    from infrastructure import backfill

    make_org(api, "acme")
    # Small items: moto copies every table a transaction names, and the backfill writes
    # in transactions; the number of versions changes nothing it does.
    seed("acme", 30, kept=False, versions=2)
    # A stack deployed before the lists: no count (the lean index is counted meanwhile), no
    # protocol entry.
    with counting_reads() as reads:
        before = api.get(modules_url("acme") + "?page[size]=7&page[number]=5").json
    assert before["meta"]["pagination"]["total-count"] == 30
    assert [m["attributes"]["name"] for m in before["data"]] == ["mod00028", "mod00029"]
    assert reads.items <= 3 + 30 + 2  # auth and count, the lean entries, the page
    assert api.get(f"{V1}/acme").json["modules"] == []

    first = store.backfill_lists()
    assert first["modules"] == 30 and first["entries written"] == 30
    assert first["counts written"] == 1
    listed = api.get(modules_url("acme") + "?page[size]=7&page[number]=5").json
    assert listed["meta"]["pagination"]["total-count"] == 30
    assert [m["attributes"]["name"] for m in listed["data"]] == ["mod00028", "mod00029"]
    assert len(api.get(f"{V1}/acme?limit=100").json["modules"]) == 30

    assert store.backfill_lists() == {"modules": 30, "organizations": 1}  # nothing to write

    # Drift is corrected: a wrong count, a lost entry, an entry of a module that is gone.
    lists.set_counts(store.count_scope("acme"), {"private": 99, "public": 3})
    store.ProtocolEntryModel(
        "acme", store.protocol_key("private", "acme", "mod00003", "google")
    ).delete()
    store.ProtocolEntryModel("acme", "acme#gone#aws#0", version="1.0.0").save()
    assert store.backfill_lists()["entries removed"] == 1
    assert lists.counts(store.count_scope("acme")) == {
        "private": 30,
        "public": 0,
        "provider:aws": 15,
        "provider:google": 15,
    }
    names = [m["name"] for m in api.get(f"{V1}/acme?limit=100").json["modules"]]
    assert names == [f"mod{i:05d}" for i in range(30)]
    assert backfill.main([]) == 0


# ----- organization tags: the tag items are lean (about 100 bytes), the count is kept -------


def seed_tags(org: str, count: int) -> None:
    from chalicelib.core.data.ids import new_id, now
    from chalicelib.tags.store import TagIdModel, TagModel

    with TagModel.batch_write() as tags, TagIdModel.batch_write() as ids:
        for index in range(count):
            tag_id, name = new_id("tag"), f"tag-{index:05d}"
            tags.save(TagModel(org, name, id=tag_id, instance_count=1, created_at=now()))
            ids.save(TagIdModel(tag_id, organization=org, name=name))


def tags_url(org: str) -> str:
    return f"/api/v2/organizations/{org}/tags"


def test_a_tag_page_reads_its_own_tags_whatever_the_organization_size(api: Api):
    from chalicelib.tags import store

    for org, count in (("small", 20), ("large", 600)):
        make_org(api, org)
        seed_tags(org, count)
    # Before the backfill no count is kept: the tags are counted.
    assert api.get(tags_url("large")).json["meta"]["pagination"]["total-count"] == 600
    assert store.backfill_counts() == {"organizations": 2, "counts written": 2}
    assert store.backfill_counts() == {"organizations": 2, "counts written": 0}
    api.get(tags_url("small"))  # warm

    small, small_bytes = read(api, tags_url("small"))
    large, large_bytes = read(api, tags_url("large"))
    assert large["meta"]["pagination"]["total-count"] == 600
    assert [t["attributes"]["name"] for t in large["data"]] == [f"tag-{i:05d}" for i in range(20)]
    assert large_bytes <= 1.5 * small_bytes  # the old list read all 600 tags

    page, page_bytes = read(api, tags_url("large") + "?page[number]=25")
    assert [t["attributes"]["name"] for t in page["data"]] == [
        f"tag-{i:05d}" for i in range(480, 500)
    ]
    assert page_bytes <= large_bytes + 480 * LEAN
    found, _ = read(api, tags_url("large") + "?q=TAG-0059")
    assert found["meta"]["pagination"]["total-count"] == 10


def test_the_tag_count_follows_creates_and_deletes(api: Api):
    from tests.tags.helpers import add, make_ws, remove, tag_ids

    org = make_org(api, "acme")
    one, two = make_ws(api, org, "one"), make_ws(api, org, "two")

    def total() -> int:
        return api.get(tags_url(org)).json["meta"]["pagination"]["total-count"]

    add(api, one, "a", "b", "c")
    add(api, two, "b", "d")
    assert total() == 4
    remove(api, one, "a")  # its last workspace: the tag goes
    remove(api, one, "b")  # still on "two"
    assert total() == 3
    ids = tag_ids(api, org)
    reply = api.delete(tags_url(org), {"data": [{"type": "tags", "id": ids["b"]}]})
    assert reply.status == 204
    assert total() == 2
    assert api.delete(f"/api/v2/workspaces/{two}").status in (200, 204)
    assert sorted(tag_ids(api, org)) == ["c"] and total() == 1


def test_a_version_page_reads_the_module_and_its_own_versions(api: Api):
    """The module item names every version: the count and where the page starts."""
    from tests.modules.helpers import create_version

    make_org(api, "acme")
    create_module(api, "vpc", "aws")
    versions = [f"1.{minor}.{patch}" for minor in range(6) for patch in range(5)]
    for version in versions:
        assert create_version(api, version).status == 201
    url = modules_url("acme") + "/private/acme/vpc/aws/versions"
    api.get(url)  # warm

    with counting_reads() as reads:
        page = api.get(url + "?page[size]=10&page[number]=2").json
    newest_first = sorted(versions, key=lambda v: tuple(map(int, v.split("."))), reverse=True)
    assert [v["attributes"]["version"] for v in page["data"]] == newest_first[10:20]
    assert page["meta"]["pagination"]["total-count"] == 30
    assert page["meta"]["pagination"]["next-page"] == 3
    # The token, the module and the page's 10 versions: not the 30.
    assert reads.items <= 2 + 1 + 10
    beyond = api.get(url + "?page[size]=10&page[number]=4").json
    assert beyond["data"] == [] and beyond["meta"]["pagination"]["prev-page"] == 3


def test_the_protocol_listing_answers_what_reading_every_module_answered(api: Api):
    """Two organizations of modules whose versions are in every state (ok, pending, failed,
    revoked, pre-releases only): every filter, search, offset and limit gives what the old
    listing gave, which read every module and computed each one's latest version."""
    from chalicelib.core.data.ids import iso, new_id, now
    from chalicelib.modules import store
    from chalicelib.modules.protocol import service as protocol
    from chalicelib.modules.store import ModuleModel, module_key

    revoked = {"status": "Revoked", "message": "no"}
    shapes = [
        {"1.0.0": {"status": "ok"}, "1.1.0": {"status": "ok"}},
        {"1.0.0": {"status": "ok"}, "2.0.0": {"status": "ok", "revocation": revoked}},
        {"0.1.0-rc.1": {"status": "ok"}, "0.2.0": {"status": "pending"}},
        {"1.0.0": {"status": "reg_ingress_failed"}},
        {"3.0.0": {"status": "ok", "revocation": revoked}},
        {},
    ]
    for org in ("acme", "zeta"):
        make_org(api, org)
        for index, (name, provider) in enumerate(
            itertools.product(("vpc", "db", "net-core", "a"), ("aws", "google", "b"))
        ):
            statuses = {
                v: {**entry, "published-at": iso(now())}
                for v, entry in shapes[(index + len(org)) % len(shapes)].items()
            }
            ModuleModel(
                org,
                module_key("private", org, name, provider),
                id=new_id("mod"),
                registry_name="private",
                namespace=org,
                name=name,
                provider=provider,
                version_statuses=statuses,
                created_at=now(),
                updated_at=now(),
            ).save()
    store.backfill_lists()
    principal = _admin()

    def old(namespace=None, name=None, provider=None, query=None):
        out = []
        terms = [t for t in (query or "").lower().split() if t]
        for org in [namespace] if namespace else ["acme", "zeta"]:
            condition = None
            if name is not None:
                condition = ModuleModel.key.startswith(f"private#{org}#{name}#")
            for module in ModuleModel.query(org, condition):
                haystack = f"{module.namespace} {module.name} {module.provider}".lower()
                if (provider and module.provider != provider) or any(
                    t not in haystack for t in terms
                ):
                    continue
                found = protocol.published(module)
                if found.latest is not None:
                    out.append(protocol.summary(found, found.latest))
        out.sort(key=lambda m: (m["namespace"], m["name"], m["provider"]))
        return out

    asks = [
        {},
        {"namespace": "zeta"},
        {"provider": "aws"},
        {"query": "net"},
        {"query": "ACME db"},
        {"namespace": "acme", "name": "vpc"},
        {"namespace": "acme", "provider": "b", "query": "a"},
    ]
    for ask in asks:
        expected = old(**ask)
        for want in (1, 3, 100):
            got = list(itertools.islice(protocol.listing(principal, want=want, **ask), 200))
            assert got == expected, (ask, want)
    assert len(old()) >= 8  # the shapes leave something to list in each organization


# ----- projects: the name claims (organization, lower-cased name) are the lean index ------


def test_a_project_page_reads_the_claims_before_it_and_its_own_projects(api: Api):
    from chalicelib.accounts.authorization import organization_access  # noqa: F401 - loads models
    from chalicelib.core.api.pagination import Page
    from chalicelib.projects import service, store

    def create(org: str, name: str) -> None:
        reply = api.post(
            f"/api/v2/organizations/{org}/projects",
            doc("projects", name=name, description="x" * 200),
        )
        assert reply.status == 201, reply.json

    names = [f"{'Pr' if i % 3 else 'pr'}oject {i:03d}" for i in range(60)]
    for org, count in (("small", 6), ("large", 60)):
        make_org(api, org)
        for name in names[:count]:
            create(org, name)
    url = "/api/v2/organizations/{}/projects?page[size]=5"
    api.get(url.format("small"))  # warm
    small, small_bytes = read(api, url.format("small"))
    large, large_bytes = read(api, url.format("large"))
    assert large["meta"]["pagination"]["total-count"] == 61  # and the default project
    assert large_bytes <= 1.5 * small_bytes  # the old list read all 61 projects
    later, later_bytes = read(api, url.format("large") + "&page[number]=10")
    assert later_bytes <= large_bytes + 45 * LEAN

    # Every page, order, search and name filter equals the old answer (every project read).
    principal = _admin()
    queries = [{}, {"sort": "-name"}, {"q": "PROJECT 01"}, {"filter[names]": "project 004,nope"}]
    for query in queries:
        everything, _ = service.list_projects(principal, "large", query)
        for size, number in itertools.product((1, 7, 100), (1, 2, 9)):
            page = Page(number, size)
            got, total, _ = service.page_projects(principal, "large", query, page)
            assert total == len(everything), query
            expected = everything[page.offset : page.offset + page.size]
            assert [p.id for p in got] == [p.id for p in expected], (query, size, number)

    # The count follows deletes, and the backfill finds nothing to correct.
    victim = next(p for p in large["data"] if p["attributes"]["name"] != "Default Project")
    assert api.delete(f"/api/v2/projects/{victim['id']}").status == 204
    total = api.get(url.format("large")).json["meta"]["pagination"]["total-count"]
    assert total == 60 == store.project_count("large")
    assert store.backfill_counts()["counts written"] == 0


# ----- workspaces: the name claims (organization, name) are the lean index ----------------


def test_a_workspace_page_reads_the_claims_before_it_and_its_own_workspaces(api: Api):
    from chalicelib.core.api.pagination import Page
    from chalicelib.workspaces import service, store
    from tests.tags.helpers import add, make_ws

    for org, count in (("small", 5), ("large", 40)):
        make_org(api, org)
        for index in range(count):
            ws = make_ws(api, org, f"{'App' if index % 2 else 'app'}-{index:03d}")
            if index % 5 == 0:
                add(api, ws, "env-prod", "x" * 100)
    url = "/api/v2/organizations/{}/workspaces?page[size]=5"
    api.get(url.format("small"))  # warm
    small, small_bytes = read(api, url.format("small"))
    large, large_bytes = read(api, url.format("large"))
    assert large["meta"]["pagination"]["total-count"] == 40
    assert large_bytes <= 1.5 * small_bytes  # the old list read all 40 workspaces
    later, later_bytes = read(api, url.format("large") + "&page[number]=7")
    assert later_bytes <= large_bytes + 30 * LEAN

    principal = _admin()
    queries = [{}, {"search[name]": "APP-01"}, {"search[tags]": "env-prod"}]
    for query in queries:
        everything, _ = service.list_workspaces(principal, "large", query)
        for size, number in itertools.product((1, 6, 100), (1, 2, 8)):
            page = Page(number, size)
            got, total, _ = service.page_workspaces(principal, "large", query, page)
            assert total == len(everything), query
            expected = everything[page.offset : page.offset + page.size]
            assert [w.id for w in got] == [w.id for w in expected], (query, size, number)

    victim = large["data"][0]["id"]
    assert api.delete(f"/api/v2/workspaces/{victim}").status in (200, 204)
    total = api.get(url.format("large")).json["meta"]["pagination"]["total-count"]
    assert total == 39 == store.workspace_count("large")
    assert store.backfill_counts()["counts written"] == 0


def test_deleting_an_organization_leaves_every_count_exact(api: Api):
    """The cascade deletes through the same counted writes: a new organization of the same
    name starts from zero, and the backfill finds nothing to correct."""
    from infrastructure.backfill import backfill_all
    from tests.tags.helpers import add, make_ws

    def totals() -> list[int]:
        paths = ("registry-modules", "tags", "projects", "workspaces")
        return [
            api.get(f"/api/v2/organizations/acme/{path}").json["meta"]["pagination"]["total-count"]
            for path in paths
        ]

    make_org(api, "acme")
    create_module(api, "vpc", "aws")
    create_module(api, "db", "google")
    ws = make_ws(api, "acme", "web")
    add(api, ws, "env", "team")
    reply = api.post("/api/v2/organizations/acme/projects", doc("projects", name="infra"))
    assert reply.status == 201, reply.json
    assert totals() == [2, 2, 2, 1]  # the default project too
    assert api.delete("/api/v2/organizations/acme").status in (200, 204)
    make_org(api, "acme")
    assert totals() == [0, 0, 1, 0]  # the new organization's default project
    assert all(report.get("counts written", 0) == 0 for report in backfill_all().values())


def test_a_team_page_reads_the_lean_index_and_its_own_teams(api: Api):
    """Teams are few: the total is counted from their keys-only index, and only the page's
    teams are read."""
    from tests.conftest import make_team

    make_org(api, "acme")
    for index in range(24):
        make_team(api, "acme", f"team-{index:02d}", manage_modules=index % 2 == 0)
    url = "/api/v2/organizations/acme/teams?page[size]=5"
    api.get(url)  # warm
    with counting_reads() as reads:
        page = api.get(url + "&page[number]=3").json
    names = sorted(["owners", *(f"team-{i:02d}" for i in range(24))])
    assert [t["attributes"]["name"] for t in page["data"]] == names[10:15]
    assert page["meta"]["pagination"]["total-count"] == 25
    assert reads.items <= 4 + 25 + 5  # auth, every lean entry, the page's 5 teams
    picked = api.get(url + "&filter[names]=team-03,owners,nope").json
    assert [t["attributes"]["name"] for t in picked["data"]] == ["owners", "team-03"]
    assert picked["meta"]["pagination"]["total-count"] == 2
