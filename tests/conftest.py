"""Fast test layer: moto's in-process mock of AWS plus Chalice's test client.

The environment is fixed before anything from chalicelib is imported, because table names
and endpoints are read when the models are defined.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

os.environ.update(
    AWS_ACCESS_KEY_ID="testing",
    AWS_SECRET_ACCESS_KEY="testing",
    AWS_DEFAULT_REGION="us-east-1",
    REGISTRY_TABLE_PREFIX="test-",
    REGISTRY_BUCKET="test-archives",
    REGISTRY_INGEST_QUEUE="test-ingest",
    REGISTRY_SCAN_QUEUE="test-scan",
    # Tests send bursts with one token; the tests of rate limiting itself switch it on with
    # the `rate_limited` fixture (production defaults to on).
    REGISTRY_RATE_LIMITING="off",
    # The `aws` fixture purges the queues after every test; moto would refuse a second purge
    # of a queue within 60 seconds, as SQS does.
    MOTO_SQS_ENFORCE_STRICT_QUEUE_PURGE_BEHAVIOUR="false",
    # A configured deployment: mailed links name only this address (the in-process browser's
    # host, tests.support.web_browser.HOST); the `no_public_address` fixture takes it away.
    REGISTRY_PUBLIC_URL="http://registry.test",
    # The local stand-ins of VCS hosts (tests/support/vcs_api_server.py, vcs_git_server.py)
    # listen on 127.0.0.1, which outbound fetches refuse unless the operator lists it
    # (chalicelib.core.outbound). The tests of those refusals set their own value.
    REGISTRY_OUTBOUND_ALLOW="127.0.0.1",
    # A request or worker message that changes state and records no audit event fails the
    # test that made it (chalicelib.core.audit.check; the `every_change_explained` fixture).
    REGISTRY_AUDIT_STRICT="1",
)
for _name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "EDITION"):
    os.environ.pop(_name, None)

import pytest  # noqa: E402
from moto import mock_aws  # noqa: E402
from moto.core import DEFAULT_ACCOUNT_ID  # noqa: E402
from moto.dynamodb.models import dynamodb_backends  # noqa: E402
from moto.s3.models import s3_backends  # noqa: E402
from moto.sqs.models import sqs_backends  # noqa: E402

from chalicelib.core.data.aws import reset_clients  # noqa: E402
from chalicelib.core.settings import get_settings  # noqa: E402

ADMIN_TOKEN = "admin-token-for-tests"


def forget_cached_state() -> None:
    """Forget what chalicelib's modules remember between requests (one Lambda instance's
    warm state): verified tokens, cached users, the general settings, parsed metadata, the
    web's CSRF signing key and the settings themselves. Every test starts as a cold instance
    would; the one place to list a new module-level cache."""
    from chalicelib.accounts.organizations.store import _disabled
    from chalicelib.accounts.render import _scim_enabled
    from chalicelib.accounts.users.store import _users
    from chalicelib.admin.store import forget_cached_settings
    from chalicelib.core.auth import verified
    from chalicelib.modules.cache import service as module_cache
    from chalicelib.modules.cache import settings as module_cache_settings
    from chalicelib.modules.downloads.store import written as downloads_written
    from chalicelib.trust.provenance import forget_public_keys
    from chalicelib.web.pages import _metadata
    from chalicelib.web.store import signing_key

    verified.clear()
    _users.clear()
    _disabled.clear()
    downloads_written.clear()
    _scim_enabled.clear()
    forget_cached_settings()
    module_cache_settings.forget()
    module_cache.forget()  # its last-use bookkeeping
    _metadata.cache_clear()
    signing_key.cache_clear()  # the pre-sign-in CSRF key: its item goes with the tables
    forget_public_keys()  # provenance signing keys' public halves
    get_settings.cache_clear()


@dataclass
class Provisioned:
    """moto's mock with every resource created once, and their names. The resources
    themselves are shared: a test that reconfigures one (a queue's attributes, the bucket's
    notifications) puts it back."""

    mock: Any
    tables: set[str]
    buckets: set[str]
    queues: set[str]  # names

    def empty(self) -> None:
        """Every table item, bucket object and queued message gone; anything a test created
        besides the provisioned resources deleted: the state right after ``provision()``.

        The provisioned resources are emptied in moto's own stores (a round trip through
        botocore per table, bucket and queue was most of a test's setup); a moto upgrade
        that renames ``items``, ``keys``, ``multiparts`` or ``queues`` fails loudly."""
        from chalicelib.core.data.aws import client

        region = get_settings().region
        dynamodb = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
        for name in [name for name in dynamodb.tables if name not in self.tables]:
            client("dynamodb").delete_table(TableName=name)
        for table in dynamodb.tables.values():
            table.items.clear()
        for name, bucket in list(s3_backends[DEFAULT_ACCOUNT_ID]["aws"].buckets.items()):
            if name in self.buckets:
                for _, versions in bucket.keys.lists():
                    for key in versions:
                        key.dispose()  # as moto's DeleteObject does
                for upload in bucket.multiparts.values():
                    upload.dispose()
                bucket.keys.clear()
                bucket.multiparts.clear()
            else:
                _delete_bucket(client("s3"), name)
        sqs = sqs_backends[DEFAULT_ACCOUNT_ID][region]
        for name in list(sqs.queues):
            if name in self.queues:
                sqs.purge_queue(name)
            else:
                client("sqs").delete_queue(
                    QueueUrl=client("sqs").get_queue_url(QueueName=name)["QueueUrl"]
                )


def _delete_bucket(s3: Any, bucket: str) -> None:
    """A bucket a test created, with whatever it holds."""
    for upload in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
        s3.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        found = page.get("Versions", []) + page.get("DeleteMarkers", [])
        if found:
            objects = [{"Key": o["Key"], "VersionId": o["VersionId"]} for o in found]
            s3.delete_objects(Bucket=bucket, Delete={"Objects": objects})
    s3.delete_bucket(Bucket=bucket)


def forget_moto_bookkeeping() -> None:
    """Drop what moto keeps of a test besides the AWS state: each ``mock.start`` registers
    its URL callbacks again (about 1,300 ``CallbackResponse`` objects, never removed while
    the data is kept), and every moto model object ever made (each TransactWriteItems
    deep-copies all the tables, items included) stays listed for moto's dashboard. Kept,
    they grew the heap by about 6,500 objects a test and made each full garbage collection
    slower as the session went on (a lookup of ``requests``' mock walked them all too).
    moto does the same when it removes the data; the tables, objects and queues are kept."""
    from moto.core.custom_responses_mock import reset_responses_mock
    from moto.core.model_instances import reset_model_data
    from moto.core.models import MockAWS, responses_mock

    if MockAWS._nested_count == 0:  # no other mock still patching
        reset_responses_mock(responses_mock)
        reset_model_data()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The end-to-end files first (each test file's own order kept): `make test` hands whole
    files to its workers in this order (pytest-xdist, ``--dist loadfile
    --no-loadscope-reorder``), so the long ones (a stack of their own, the OpenAPI fuzz, the
    browser) start early and the many short files fill in at the end, rather than one long
    file left running alone on one core."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/e2e/"))


@pytest.fixture(autouse=True)
def every_change_explained(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test in which a request or a worker's message changed the registry's state and
    recorded no audit event (``chalicelib.core.audit.check``). With
    ``REGISTRY_AUDIT_SURVEY=<file>`` the findings are appended to the file instead."""
    from chalicelib.core.audit import check

    check.VIOLATIONS.clear()
    yield
    found, check.VIOLATIONS[:] = list(check.VIOLATIONS), []
    if not found:
        return
    lines = [f"{v.where}: {', '.join(sorted(v.tables))}" for v in found]
    survey = os.environ.get("REGISTRY_AUDIT_SURVEY")
    if survey:
        with open(survey, "a", encoding="utf-8") as out:
            out.writelines(f"{request.node.nodeid}\t{line}\n" for line in lines)
        return
    pytest.fail("changed state with no audit event:\n" + "\n".join(lines), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def cheap_password_hashes() -> Iterator[Any]:
    """argon2id at its cheapest for the in-process tests: a hash, and each wrong password,
    costs about a millisecond instead of argon2-cffi's defaults (3 passes over 64 MiB, tens of
    milliseconds and more on a loaded machine). A hash names its own parameters, so what is
    stored verifies as before; tests/accounts/test_passwords.py checks production's parameters
    with ``production_password_hasher``. The e2e stack, a process of its own, keeps them."""
    from argon2 import PasswordHasher

    from chalicelib.accounts import passwords

    production = passwords._hasher
    cheap = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(passwords, "_hasher", lambda: cheap)
        passwords._dummy.cache_clear()
        yield production
    passwords._dummy.cache_clear()


@pytest.fixture
def production_password_hasher(
    cheap_password_hashes: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """``chalicelib.accounts.passwords`` with the hasher production uses, for this test."""
    from chalicelib.accounts import passwords

    monkeypatch.setattr(passwords, "_hasher", cheap_password_hashes)
    passwords._dummy.cache_clear()
    yield
    passwords._dummy.cache_clear()


@pytest.fixture(scope="session")
def aws_resources() -> Iterator[Provisioned]:
    """Tables, bucket, queues and KMS key created once per session (creating the tables is
    most of a test's setup); moto's mock is switched on only while a test uses ``aws``."""
    from chalicelib.core.data.aws import client
    from infrastructure import moto_transactions
    from infrastructure.resources import provision

    moto_transactions.install()  # a transaction's undo copy costs what it touches
    mock = mock_aws()
    mock.start()
    reset_clients()
    try:
        provision()
        tables = set(client("dynamodb").list_tables()["TableNames"])
        buckets = {b["Name"] for b in client("s3").list_buckets()["Buckets"]}
        queues = {url.rsplit("/", 1)[1] for url in client("sqs").list_queues()["QueueUrls"]}
    finally:
        mock.stop(remove_data=False)
    yield Provisioned(mock, tables, buckets, queues)
    mock.reset()
    reset_clients()


@pytest.fixture
def aws(aws_resources: Provisioned) -> Iterator[None]:
    """moto's AWS with every resource provisioned and empty, and no cached state."""
    forget_cached_state()
    aws_resources.mock.start(reset=False)
    try:
        yield
        aws_resources.empty()
    finally:
        aws_resources.mock.stop(remove_data=False)
        forget_moto_bookkeeping()
        forget_cached_state()


@pytest.fixture
def smtp(api: Api) -> Iterator[Any]:
    """The site's SMTP settings point at a local SMTP server; its mailbox, empty."""
    from tests.support.admin_servers import smtp_server, use_smtp

    with smtp_server() as (port, mailbox):
        use_smtp(api, port)
        mailbox.messages.clear()
        yield mailbox


@pytest.fixture
def hosted(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("EDITION", "hosted")
    get_settings.cache_clear()
    yield
    monkeypatch.delenv("EDITION")
    get_settings.cache_clear()


@pytest.fixture
def no_public_address(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A deployment with no public address configured (REGISTRY_PUBLIC_URL unset)."""
    monkeypatch.delenv("REGISTRY_PUBLIC_URL")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()  # the variable comes back with monkeypatch's teardown


@dataclass
class Clock:
    """A time source that moves only when the test moves it."""

    now: float

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def rate_limited(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    """API rate limiting on by default, as in production, and the limiter's clock held still
    a quarter into a second (``advance`` moves it): a burst stays in one window however slow
    the machine. The instance's local counts start empty."""
    from chalicelib.admin import ratelimit
    from chalicelib.admin.store import forget_cached_settings

    monkeypatch.setenv("REGISTRY_RATE_LIMITING", "on")
    monkeypatch.setattr(ratelimit, "clock", Clock(1_800_000_000.25))
    monkeypatch.setattr(ratelimit, "instance_counts", ratelimit.LocalCounts())  # a fresh instance
    get_settings.cache_clear()
    forget_cached_settings()
    yield ratelimit.clock
    monkeypatch.setenv("REGISTRY_RATE_LIMITING", "off")
    get_settings.cache_clear()
    forget_cached_settings()


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def data(self) -> Any:
        return self.json["data"]

    @property
    def error(self) -> dict[str, Any]:
        return self.json["errors"][0]


class Api:
    """JSON:API calls through Chalice's test client, as a given token."""

    def __init__(self, client: Any, token: str | None) -> None:
        self.client = client
        self.token = token

    def as_(self, token: str | None) -> Api:
        return Api(self.client, token)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: str | None = None,
        content_type: str = "application/vnd.api+json",
        headers: dict[str, str] | None = None,
    ) -> Reply:
        headers = {"Content-Type": content_type, **(headers or {})}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        payload = raw if raw is not None else (json.dumps(body) if body is not None else None)
        response = getattr(self.client.http, method.lower())(path, headers=headers, body=payload)
        return Reply(response.status_code, dict(response.headers), response.body)

    def get(self, path: str) -> Reply:
        return self.call("GET", path)

    def post(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return self.call("POST", path, body, **kw)

    def patch(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return self.call("PATCH", path, body, **kw)

    def delete(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return self.call("DELETE", path, body, **kw)


def moto_items() -> dict[str, Any]:
    """What the tables hold now, as moto's items (deep copies): {table name: items}, for
    ``put_back_items`` to restore in a later test instead of writing it again."""
    import copy

    tables = dynamodb_backends[DEFAULT_ACCOUNT_ID][get_settings().region].tables
    return {name: copy.deepcopy(dict(t.items)) for name, t in tables.items() if t.items}


def put_back_items(items: dict[str, Any]) -> None:
    """``moto_items()``'s items put back into the tables (deep copies: a test may change
    them)."""
    import copy

    tables = dynamodb_backends[DEFAULT_ACCOUNT_ID][get_settings().region].tables
    for name, held in items.items():
        tables[name].items.update(copy.deepcopy(held))


# The items ``bootstrap_admin(ADMIN_TOKEN)`` writes into the empty tables, taken from moto
# after the session's first bootstrap: {table name: moto's items}.
_bootstrapped: dict[str, Any] = {}


def bootstrap_admin_once() -> None:
    """The site admin with ``ADMIN_TOKEN``, as ``bootstrap_admin`` makes it on empty tables:
    made once per session, then put back as moto's items (deep copies) before each test.
    Bootstrapping on empty tables costs two transactions and a scan (the admin count is
    derived the first time), a sizeable part of every API test's setup under moto."""
    from chalicelib.accounts.users.service import bootstrap_admin

    if not _bootstrapped:
        bootstrap_admin(ADMIN_TOKEN)
        _bootstrapped.update(moto_items())
        return
    put_back_items(_bootstrapped)


@pytest.fixture
def api(aws: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    from chalice.test import Client

    from app import app

    bootstrap_admin_once()
    # An empty project dir: Chalice's client would otherwise export .chalice/config.json's
    # stage environment (EDITION, table names) into os.environ.
    with Client(app, project_dir=str(tmp_path_factory.mktemp("chalice"))) as client:
        yield Api(client, ADMIN_TOKEN)


def doc(type_: str, **attributes: Any) -> dict[str, Any]:
    return {"data": {"type": type_, "attributes": attributes}}


def make_org(api: Api, name: str = "acme") -> str:
    reply = api.post("/api/v2/organizations", doc("organizations", name=name, email="o@x.io"))
    assert reply.status == 201, reply.json
    return name


def make_team(api: Api, org: str, name: str, **access: bool) -> tuple[str, str]:
    """A team with the given organization-access flags and its token: (team id, token)."""
    flags = {k.replace("_", "-"): v for k, v in access.items()}
    reply = api.post(
        f"/api/v2/organizations/{org}/teams",
        doc("teams", name=name, **{"organization-access": flags}),
    )
    assert reply.status == 201, reply.json
    team_id = reply.data["id"]
    token = api.post(f"/api/v2/teams/{team_id}/authentication-token", None)
    assert token.status == 201, token.json
    return team_id, token.data["attributes"]["token"]


def tar_gz(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
