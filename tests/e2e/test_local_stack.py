"""The local stack holds up where people evaluating it look: S3 checks signatures as S3 does,
bursts of clients queue instead of being reset, and the state survives a restart."""

from __future__ import annotations

import functools
import io
import re
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit

import boto3
import botocore.auth
import pytest
import requests
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from infrastructure import spawn
from infrastructure.s3_auth import Refused, SigV4Check, Verifier
from tests.conftest import doc, tar_gz
from tests.e2e.conftest import ADMIN_TOKEN, Stack, wait_for

pytestmark = pytest.mark.e2e

BUCKET = "registry-dev-archives"
LOCAL = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}  # the stack's own
OCTETS = {"Content-Type": "application/octet-stream"}


def within(seconds: float) -> Any:
    """Bound a test in time (SIGALRM; the tests run in the main thread)."""

    def decorate(test: Any) -> Any:
        @functools.wraps(test)
        def bounded(*args: Any, **kwargs: Any) -> Any:
            def expire(*_: Any) -> None:
                raise TimeoutError(f"{test.__name__} took more than {seconds} s")

            previous = signal.signal(signal.SIGALRM, expire)
            signal.setitimer(signal.ITIMER_REAL, seconds)
            try:
                return test(*args, **kwargs)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)

        return bounded

    return decorate


def aws(stack_or_url: Stack | str, service: str, **credentials: str) -> Any:
    url = stack_or_url if isinstance(stack_or_url, str) else stack_or_url.moto_url
    return boto3.client(
        service,
        endpoint_url=url,
        region_name="us-east-1",
        config=Config(
            signature_version="s3v4" if service == "s3" else None,
            s3={"addressing_style": "path"},
            retries={"max_attempts": 1},
        ),
        **(credentials or LOCAL),
    )


def s3_error(response: requests.Response) -> str:
    """The S3 error code of a refusal (a 403 with S3's XML error document)."""
    assert response.status_code == 403, (response.status_code, response.text)
    assert response.headers["Content-Type"] == "application/xml"
    assert response.text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>')
    match = re.search(r"<Code>([^<]+)</Code>", response.text)
    assert match is not None
    return match.group(1)


def with_param(url: str, name: str, value: str) -> str:
    """``url`` with one query parameter's value replaced (encoded as botocore does)."""
    pattern = re.compile(rf"([?&]{re.escape(name)}=)[^&]*")
    assert pattern.search(url), (name, url)
    return pattern.sub(lambda m: m.group(1) + quote(value, safe="-_.~"), url, count=1)


def param(url: str, name: str) -> str:
    return dict(parse_qsl(urlsplit(url).query))[name]


def go_getter_url(url: str) -> str:
    """The URL as go-getter fetches it: the ``archive`` hint dropped and the query re-encoded
    by Go's url.Values.Encode (sorted, QueryEscape)."""
    parts = urlsplit(url)
    query = sorted((k, v) for k, v in parse_qsl(parts.query) if k != "archive")
    return parts._replace(query=urlencode(query, quote_via=quote_plus)).geturl()


def publish(stack: Stack, org: str, name: str, version: str, archive: bytes) -> str:
    """Create org/module/version, upload the archive to links.upload, wait for ``ok``; the
    upload URL."""
    admin = stack.session()
    created = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=org, email=f"ops@{org}.io")
    )
    assert created.status_code in (201, 422), created.text
    module = admin.post(
        stack.api(f"/organizations/{org}/registry-modules"),
        json=doc("registry-modules", name=name, provider="aws"),
    )
    assert module.status_code in (201, 422), module.text
    version_doc = admin.post(
        stack.api(f"/registry-modules/{org}/{name}/aws/versions"),
        json=doc("registry-module-versions", version=version),
    )
    assert version_doc.status_code == 201, version_doc.text
    upload = version_doc.json()["data"]["links"]["upload"]
    assert requests.put(upload, data=archive, headers=OCTETS, timeout=30).status_code == 200
    assert status(stack, org, name, version) == "ok"
    return upload


def status(stack: Stack, org: str, name: str, version: str, token: str | None = None) -> str:
    session = stack.session(token) if token else stack.session()
    path = stack.api(f"/organizations/{org}/registry-modules/private/{org}/{name}/aws")

    def fetch() -> str:
        reply = session.get(path)
        if reply.status_code != 200:
            return f"HTTP {reply.status_code}"
        statuses = reply.json()["data"]["attributes"]["version-statuses"]
        return next((s["status"] for s in statuses if s["version"] == version), "missing")

    return wait_for(fetch, lambda s: s not in ("pending", "reg_ingressing"))


def download_url(stack: Stack, org: str, name: str, version: str, token: str | None = None):
    session = stack.session(token) if token else stack.session()
    reply = session.get(f"{stack.url}/api/registry/v1/modules/{org}/{name}/aws/{version}/download")
    assert reply.status_code == 204, reply.text
    return reply.headers["X-Terraform-Get"]


# ----- 1. signatures ------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def environ_for(request: AWSRequest, body: bytes = b"") -> dict[str, Any]:
    """The WSGI environ werkzeug's server would build for ``request``."""
    parts = urlsplit(request.url)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.method,
        "RAW_URI": parts.path + (f"?{parts.query}" if parts.query else ""),
        "PATH_INFO": parts.path,
        "QUERY_STRING": parts.query,
        "HTTP_HOST": parts.netloc,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }
    for name, value in request.headers.items():
        key = name.upper().replace("-", "_")
        environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value
    return environ


@within(30)
def test_the_check_accepts_what_botocore_signs_and_nothing_else():
    """Without a server: botocore's own signers against the verifier, odd keys included."""
    clock = Clock()
    verifier = Verifier({"local": "local"}, now=clock)
    credentials = Credentials("local", "local")
    keys = ["v1/a.tar.gz", "with space/ünïcode+plus~tilde=eq&amp.tgz", "a%2Fb"]
    for key in keys:
        url = f"http://127.0.0.1:5000/{BUCKET}/{quote(key, safe='/~')}"
        presigned = AWSRequest("GET", url, params={"versionId": "1 2"})
        presigned.context["timestamp"] = clock.now.strftime("%Y%m%dT%H%M%SZ")
        S3SigV4QueryAuth(credentials, "s3", "us-east-1", expires=60).add_auth(presigned)
        prepared = presigned.prepare()
        assert verifier.verify(environ_for(prepared)).presigned
        # Go's re-encoding of the same query string is the same request.
        assert verifier.verify(environ_for(AWSRequest("GET", go_getter_url(prepared.url))))
        for tampered in (
            prepared.url.replace("/" + BUCKET + "/", "/other-bucket/"),
            prepared.url + "&extra=1",
            with_param(prepared.url, "X-Amz-Expires", "61"),
        ):
            with pytest.raises(Refused, match="SignatureDoesNotMatch"):
                verifier.verify(environ_for(AWSRequest("GET", tampered)))
        with pytest.raises(Refused, match="SignatureDoesNotMatch"):
            verifier.verify(environ_for(AWSRequest("PUT", prepared.url)))
        with pytest.raises(Refused, match="AccessDenied: Access Denied"):
            verifier.verify(environ_for(AWSRequest("GET", url)))  # unsigned
        clock.now += timedelta(seconds=61)
        with pytest.raises(Refused, match="AccessDenied: Request has expired"):
            verifier.verify(environ_for(prepared))

        body = b"payload"
        header_signed = AWSRequest("PUT", url, data=body, headers={"Content-Type": "x/y"})
        S3SigV4Auth(credentials, "s3", "us-east-1").add_auth(header_signed)
        clock.now = datetime.now(UTC)
        assert not verifier.verify(environ_for(header_signed.prepare(), body)).presigned
        with pytest.raises(Refused, match="XAmzContentSHA256Mismatch"):
            verifier.verify(environ_for(header_signed.prepare(), b"other payload"))

    # A JSON-protocol service (DynamoDB): payload hash of the body, no x-amz-content-sha256.
    body = b'{"TableName": "t"}'
    dynamo = AWSRequest(
        "POST",
        "http://127.0.0.1:5000/",
        data=body,
        headers={"X-Amz-Target": "DynamoDB_20120810.DescribeTable"},
    )
    SigV4Auth(credentials, "dynamodb", "us-east-1").add_auth(dynamo)
    assert verifier.verify(environ_for(dynamo.prepare(), body)).service == "dynamodb"
    with pytest.raises(Refused, match="SignatureDoesNotMatch"):
        verifier.verify(environ_for(dynamo.prepare(), b'{"TableName": "u"}'))
    # Other credentials, and a date too far from now.
    other = AWSRequest("GET", f"http://127.0.0.1:5000/{BUCKET}")
    S3SigV4Auth(Credentials("local", "wrong"), "s3", "us-east-1").add_auth(other)
    with pytest.raises(Refused, match="SignatureDoesNotMatch"):
        verifier.verify(environ_for(other.prepare()))
    clock.now += timedelta(minutes=16)
    with pytest.raises(Refused, match="RequestTimeTooSkewed"):
        verifier.verify(environ_for(header_signed.prepare(), b"payload"))

    # The middleware answers refusals itself, as S3 does (no body for HEAD).
    def app(environ: dict, start_response: Any) -> list[bytes]:
        raise AssertionError("a refused request reached moto")

    for method in ("GET", "HEAD"):
        seen: list[str] = []
        body_parts = SigV4Check(app, verifier)(
            environ_for(AWSRequest(method, f"http://127.0.0.1:5000/{BUCKET}")),
            lambda status, headers, seen=seen: seen.append(status),
        )
        assert seen == ["403 Forbidden"]
        assert (b"".join(body_parts) == b"") == (method == "HEAD")


@within(120)
def test_s3_refuses_unsigned_tampered_and_expired_requests(stack: Stack):
    archive = tar_gz({"main.tf": 'output "v" {\n  value = "1"\n}\n'})
    upload = publish(stack, "sigs", "store", "1.0.0", archive)

    # Nobody lists the archive bucket (or the buckets) without signing.
    assert s3_error(requests.get(f"{stack.moto_url}/{BUCKET}", timeout=10)) == "AccessDenied"
    assert s3_error(requests.get(f"{stack.moto_url}/", timeout=10)) == "AccessDenied"
    assert requests.head(f"{stack.moto_url}/{BUCKET}", timeout=10).status_code == 403
    plain = f"{stack.moto_url}/{BUCKET}/{urlsplit(upload).path.split('/', 2)[2]}"
    assert s3_error(requests.put(plain, data=b"x", headers=OCTETS, timeout=10)) == "AccessDenied"

    # The upload URL: only a PUT of that key, with every signed parameter as signed.
    def put(url: str) -> requests.Response:
        return requests.put(url, data=archive, headers=OCTETS, timeout=10)

    assert s3_error(requests.get(upload, timeout=10)) == "SignatureDoesNotMatch"  # method
    assert s3_error(requests.delete(upload, timeout=10)) == "SignatureDoesNotMatch"
    assert s3_error(put(upload.replace("/1.0.0/", "/9.9.9/"))) == "SignatureDoesNotMatch"
    assert s3_error(put(upload.replace(f"/{BUCKET}/", "/other-bucket/"))) == (
        "SignatureDoesNotMatch"
    )
    signed_at = datetime.strptime(param(upload, "X-Amz-Date"), "%Y%m%dT%H%M%SZ")
    for name, value in [
        ("X-Amz-Expires", "604800"),
        ("X-Amz-Date", (signed_at + timedelta(seconds=1)).strftime("%Y%m%dT%H%M%SZ")),
        ("X-Amz-SignedHeaders", "content-type;host"),
        ("X-Amz-Signature", "0" * 64),
    ]:
        assert s3_error(put(with_param(upload, name, value))) == "SignatureDoesNotMatch", name
    credential = param(upload, "X-Amz-Credential")
    assert (
        s3_error(put(with_param(upload, "X-Amz-Credential", "intruder" + credential[5:])))
        == "InvalidAccessKeyId"
    )
    assert s3_error(put(upload + "&x-id=PutObject")) == "SignatureDoesNotMatch"  # added
    # The host is signed: the same URL through another name of the same server is refused.
    assert s3_error(put(upload.replace("127.0.0.1", "localhost"))) == "SignatureDoesNotMatch"
    refusal = requests.get(upload, timeout=10).text
    assert "<CanonicalRequest>GET\n" in refusal and "<StringToSign>" in refusal

    # The download URL: as the registry hands it out (with go-getter's archive hint), as
    # go-getter fetches it (hint dropped, query re-encoded), and nothing else.
    download = download_url(stack, "sigs", "store", "1.0.0")
    assert download.endswith("&archive=tar.gz")
    assert requests.get(download, timeout=10).content == archive
    assert requests.get(go_getter_url(download), timeout=10).content == archive
    assert s3_error(requests.get(download.replace(".tar.gz?", ".tgz?"), timeout=10)) == (
        "SignatureDoesNotMatch"
    )
    assert s3_error(put(download)) == "SignatureDoesNotMatch"

    # Expiry, with URLs presigned by boto3 with the stack's credentials: one for a minute,
    # and the same signed as of a minute ago for two seconds (no sleeping, and no race with
    # a loaded machine's pace).
    s3 = aws(stack, "s3")
    params = {"Bucket": BUCKET, "Key": urlsplit(download).path.split("/", 2)[2]}
    fresh = s3.generate_presigned_url("get_object", Params=params, ExpiresIn=60)
    assert requests.get(fresh, timeout=10).content == archive
    signed_at = botocore.auth.get_current_datetime() - timedelta(minutes=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.auth, "get_current_datetime", lambda **_: signed_at)
        stale = s3.generate_presigned_url("get_object", Params=params, ExpiresIn=2)
    expired = requests.get(stale, timeout=10)
    assert s3_error(expired) == "AccessDenied"
    assert "<Message>Request has expired</Message>" in expired.text

    # Header-signed requests (how the app's boto3 clients talk to moto) pass only with the
    # stack's secret; DynamoDB is checked too.
    assert any(
        o["Key"].startswith("v1/archives/") for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]
    )
    for credentials, code in [
        ({"aws_access_key_id": "local", "aws_secret_access_key": "guess"}, "SignatureDoesNotMatch"),
        ({"aws_access_key_id": "AKIA0000", "aws_secret_access_key": "local"}, "InvalidAccessKeyId"),
    ]:
        with pytest.raises(ClientError) as refused:
            aws(stack, "s3", **credentials).list_objects_v2(Bucket=BUCKET)
        assert refused.value.response["Error"]["Code"] == code
        with pytest.raises(ClientError) as refused:
            aws(stack, "dynamodb", **credentials).list_tables()
        assert refused.value.response["Error"]["Code"] == code
    assert aws(stack, "dynamodb").list_tables()["TableNames"]


# ----- 2. bursts of clients -----------------------------------------------------------------

CLIENTS = 50


@within(180)
def test_fifty_concurrent_clients_get_no_connection_reset(stack: Stack):
    """50 clients at once, each on fresh connections: the protocol's version list, the
    download, then the archive from moto; none is reset, refused or wrong."""
    archive = tar_gz({"main.tf": 'output "burst" {\n  value = "1"\n}\n'})
    publish(stack, "burst", "net", "1.0.0", archive)
    base = f"{stack.url}/api/registry/v1/modules/burst/net/aws"
    headers = stack.session().headers
    barrier = threading.Barrier(CLIENTS)

    def client(_: int) -> tuple[str, float]:
        barrier.wait(timeout=30)
        started = time.monotonic()
        try:
            versions = requests.get(f"{base}/versions", headers=headers, timeout=60)
            assert versions.status_code == 200, versions.status_code
            listed = versions.json()["modules"][0]["versions"]
            assert [v["version"] for v in listed] == ["1.0.0"]
            download = requests.get(f"{base}/1.0.0/download", headers=headers, timeout=60)
            assert download.status_code == 204, download.status_code
            body = requests.get(download.headers["X-Terraform-Get"], timeout=60)
            assert body.status_code == 200 and body.content == archive, body.status_code
        except Exception as exc:  # noqa: BLE001 - counted below
            return f"{type(exc).__name__}: {exc}", time.monotonic() - started
        return "ok", time.monotonic() - started

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        results = list(pool.map(client, range(CLIENTS), timeout=150))
    elapsed = time.monotonic() - started
    outcomes = Counter(outcome for outcome, _ in results)
    slowest = max(seconds for _, seconds in results)
    print(f"{CLIENTS} clients: {elapsed:.2f} s, slowest {slowest:.2f} s, {dict(outcomes)}")
    assert outcomes == {"ok": CLIENTS}, outcomes
    assert elapsed < 60


@within(120)
def test_a_burst_of_connections_is_queued_not_dropped(stack: Stack):
    """200 connections opened at once on each server. With socketserver's backlog of 5 the
    kernel drops the handshakes that do not fit: clients wait for a SYN retransmission (1 s)
    or, once SYN cookies kick in, find their connection reset or never answered."""
    if shutil.which("ss"):
        for url in (stack.url, stack.moto_url):
            port = urlsplit(url).port
            listing = subprocess.run(
                ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, timeout=10
            ).stdout.split()
            assert int(listing[2]) >= 128, listing  # Send-Q of a listener: its backlog

    connections = 200
    barrier = threading.Barrier(connections)

    def connect(url: str, request: bytes) -> tuple[float, str]:
        parts = urlsplit(url)
        barrier.wait(timeout=30)
        started = time.monotonic()
        try:
            with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
                connected = time.monotonic() - started
                sock.sendall(request)
                reply = b""
                while chunk := sock.recv(65536):
                    reply += chunk
        except OSError as exc:
            return time.monotonic() - started, type(exc).__name__
        return connected, reply.split(b"\r\n", 1)[0].decode()

    for url, request, expected in [
        (stack.url, b"GET /.well-known/terraform.json HTTP/1.1\r\nHost: r\r\n", "200"),
        (stack.moto_url, f"GET /{BUCKET} HTTP/1.1\r\nHost: m\r\n".encode(), "403"),
    ]:
        request += b"Connection: close\r\n\r\n"
        barrier.reset()
        with ThreadPoolExecutor(max_workers=connections) as pool:
            results = list(
                pool.map(connect, [url] * connections, [request] * connections, timeout=90)
            )
        outcomes = Counter(
            outcome.split(" ")[1] if " " in outcome else outcome for _, outcome in results
        )
        assert outcomes == {expected: connections}, (url, outcomes)
        retransmitted = [seconds for seconds, _ in results if seconds >= 1.0]
        assert not retransmitted, f"{len(retransmitted)} handshakes waited for a retransmission"


TERRAFORMS = 50


@within(300)
@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_parallel_terraform_gets_of_one_module(stack: Stack, tmp_path: Path):
    from tests.e2e.test_terraform_cli import HOST, terraform_get, write_cli_config

    archive = tar_gz({"main.tf": 'output "parallel" {\n  value = "2.0.0"\n}\n'})
    publish(stack, "parallel", "vpc", "2.0.0", archive)
    config = write_cli_config(tmp_path, stack, ADMIN_TOKEN)
    source = f"{HOST}/parallel/vpc/aws"

    def get(index: int) -> str:
        version, directory = terraform_get(tmp_path / f"w{index}", config, "~> 2.0", source)
        assert '"2.0.0"' in (directory / "main.tf").read_text()
        return version

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=TERRAFORMS) as pool:
        versions = list(pool.map(get, range(TERRAFORMS), timeout=240))
    print(f"{TERRAFORMS} parallel terraform get: {time.monotonic() - started:.1f} s")
    assert versions == ["2.0.0"] * TERRAFORMS


# ----- 3. state across restarts -------------------------------------------------------------


@within(30)
def test_a_snapshot_is_taken_between_requests_and_only_after_changes():
    from infrastructure.persistence import Gate
    from infrastructure.s3_auth import ENVIRON_SERVICE

    inside = threading.Event()
    release = threading.Event()

    def moto(environ: dict, start_response: Any) -> list[bytes]:
        if environ.get("slow"):
            inside.set()
            release.wait(10)
        return [b""]

    gate = Gate(moto)

    def request(service: str, method: str = "POST", target: str = "", **extra: Any) -> None:
        environ = {ENVIRON_SERVICE: service, "REQUEST_METHOD": method, **extra}
        if target:
            environ["HTTP_X_AMZ_TARGET"] = target
        gate(environ, lambda *_: None)

    request("s3", "GET")
    request("dynamodb", target="DynamoDB_20120810.Query")
    request("sqs", target="AmazonSQS.ReceiveMessage")
    request("kms", target="TrentService.Decrypt")
    assert gate.dirty == set()
    request("dynamodb", target="DynamoDB_20120810.TransactWriteItems")
    request("s3", "PUT")  # an upload can also send the ingest queue its event
    assert gate.dirty == {"dynamodb", "s3", "sqs"}

    slow = threading.Thread(target=request, args=("dynamodb",), kwargs={"slow": True})
    slow.start()
    assert inside.wait(5)
    taken = threading.Event()

    def snapshot() -> None:
        with gate.exclusive():
            taken.set()

    snapshotting = threading.Thread(target=snapshot)
    snapshotting.start()
    request("s3", "GET")  # not blocked while the snapshot waits for a quiet moment
    assert not taken.wait(0.3)  # never in the middle of a request
    release.set()
    assert taken.wait(5)
    slow.join(5)
    snapshotting.join(5)


def minted_token(spawned: spawn.Spawned) -> str:
    match = re.search(r"token \(shown once\): (\S+)", spawned.startup_output)
    assert match, spawned.startup_output
    return match.group(1)


def as_stack(spawned: spawn.Spawned) -> Stack:
    return Stack(spawned.url, spawned.moto_url, spawned.startup_seconds)


def kill(spawned: spawn.Spawned) -> None:
    spawned.process.send_signal(signal.SIGKILL)
    spawned.process.communicate(timeout=20)


COUNTERS = "registry-dev-rate-limits"  # TTL on, as in AWS (attribute read from the table)


def put_counter(dynamodb: Any, name: str, expires: int) -> dict[str, Any]:
    """A rate-limit row expiring at ``expires``; its key."""
    table = dynamodb.describe_table(TableName=COUNTERS)["Table"]
    types = {a["AttributeName"]: a["AttributeType"] for a in table["AttributeDefinitions"]}
    key = {k["AttributeName"]: {types[k["AttributeName"]]: name} for k in table["KeySchema"]}
    ttl = dynamodb.describe_time_to_live(TableName=COUNTERS)["TimeToLiveDescription"]
    dynamodb.put_item(TableName=COUNTERS, Item={**key, ttl["AttributeName"]: {"N": str(expires)}})
    return key


def present(dynamodb: Any, key: dict[str, Any]) -> bool:
    return "Item" in dynamodb.get_item(TableName=COUNTERS, Key=key, ConsistentRead=True)


def snapshot_after(data: Path, moment_ns: int, timeout: float = 10.0) -> None:
    """Wait until the periodic snapshot has been written after ``moment_ns`` (written whole,
    between requests: a change seen before ``moment_ns`` is in it)."""
    state = data / "moto-state.pickle"
    written = wait_for(lambda: state.stat().st_mtime_ns, lambda ns: ns > moment_ns, timeout)
    assert written > moment_ns, "no snapshot was taken after the change"


@within(240)
def test_the_state_survives_restarts_and_a_fresh_data_dir_starts_empty(tmp_path: Path):
    """State kept across a Ctrl-C, a crash (SIGKILL: what the periodic snapshot saved) and
    restored; a fresh data directory starts empty. Expired rows: moto never applies
    DynamoDB's TTL (counters, sessions and login codes piled up in memory and in the
    snapshot), so the stack sweeps every REGISTRY_TTL_SWEEP_SECONDS and before each snapshot:
    one expired at Ctrl-C (no periodic sweep or snapshot in time) is never saved, and one
    expiring while a stack runs is deleted."""
    data = tmp_path / "data"
    persisting = {"REGISTRY_DATA_DIR": str(data), "REGISTRY_SNAPSHOT_SECONDS": "1"}
    # Only the Ctrl-C snapshot (and the sweep before it) in the first stack's life.
    only_at_exit = {**persisting, "REGISTRY_SNAPSHOT_SECONDS": "3600"}
    now = int(time.time())
    # No REGISTRY_ADMIN_TOKEN: the first start mints the admin's token and prints it once.
    first = spawn.start(
        "", REGISTRY_RATE_LIMITING="off", REGISTRY_TTL_SWEEP_SECONDS="3600", **only_at_exit
    )
    try:
        dynamodb = aws(first.moto_url, "dynamodb")
        expired = put_counter(dynamodb, "expired", now - 5)
        current = put_counter(dynamodb, "current", now + 3600)
        token = minted_token(first)
        stack = as_stack(first)
        archive = tar_gz({"main.tf": 'output "kept" {\n  value = "1.0.0"\n}\n'})
        admin = stack.session(token)
        assert (
            admin.post(
                stack.api("/organizations"), json=doc("organizations", name="keep", email="k@x.io")
            ).status_code
            == 201
        )
        module = admin.post(
            stack.api("/organizations/keep/registry-modules"),
            json=doc("registry-modules", name="vpc", provider="aws"),
        )
        assert module.status_code == 201, module.text
        created = admin.post(
            stack.api("/registry-modules/keep/vpc/aws/versions"),
            json=doc("registry-module-versions", version="1.0.0"),
        )
        assert created.status_code == 201, created.text
        upload = created.json()["data"]["links"]["upload"]
        assert requests.put(upload, data=archive, headers=OCTETS, timeout=30).status_code == 200
        assert status(stack, "keep", "vpc", "1.0.0", token) == "ok"
        # A secret sealed with the stack's KMS key must open after a restart.
        kms = aws(stack, "kms")
        sealed = kms.encrypt(KeyId="alias/registry-dev-secrets", Plaintext=b"sealed")[
            "CiphertextBlob"
        ]
        # One data directory, one stack.
        with pytest.raises(RuntimeError, match="another local registry is using"):
            spawn.start("", **persisting)
        assert present(dynamodb, expired)  # not swept yet
    finally:
        output = spawn.stop(first)
    assert "stopped" in output
    assert (data / "moto-state.pickle").exists()
    # It holds the KMS key material: owner only.
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "moto-state.pickle").stat().st_mode) == 0o600

    second = spawn.start("", REGISTRY_RATE_LIMITING="off", **persisting)
    try:
        assert "restored" in second.startup_output
        assert "shown once" not in second.startup_output  # the first token stays the token
        stack = as_stack(second)
        assert status(stack, "keep", "vpc", "1.0.0", token) == "ok"
        url = download_url(stack, "keep", "vpc", "1.0.0", token)
        assert requests.get(url, timeout=10).content == archive
        assert aws(stack, "kms").decrypt(CiphertextBlob=sealed)["Plaintext"] == b"sealed"
        dynamodb = aws(second.moto_url, "dynamodb")
        assert not present(dynamodb, expired)  # swept before the Ctrl-C snapshot
        assert present(dynamodb, current)
        # A change saved by the periodic snapshot survives even a crash (SIGKILL).
        admin = stack.session(token)
        created = admin.post(
            stack.api("/registry-modules/keep/vpc/aws/versions"),
            json=doc("registry-module-versions", version="1.1.0"),
        )
        assert created.status_code == 201, created.text
        later = tar_gz({"main.tf": 'output "kept" {\n  value = "1.1.0"\n}\n'})
        upload = created.json()["data"]["links"]["upload"]
        assert requests.put(upload, data=later, headers=OCTETS, timeout=30).status_code == 200
        assert status(stack, "keep", "vpc", "1.1.0", token) == "ok"
        snapshot_after(data, time.time_ns())
    finally:
        kill(second)

    third = spawn.start("", REGISTRY_RATE_LIMITING="off", **persisting)
    try:
        stack = as_stack(third)
        assert status(stack, "keep", "vpc", "1.1.0", token) == "ok"
        url = download_url(stack, "keep", "vpc", "1.1.0", token)
        assert requests.get(url, timeout=10).content == later
    finally:
        spawn.stop(third)

    fresh = spawn.start(
        "",
        REGISTRY_RATE_LIMITING="off",
        REGISTRY_DATA_DIR=str(tmp_path / "new"),
        REGISTRY_TTL_SWEEP_SECONDS="1",
    )
    try:
        stack = as_stack(fresh)
        assert "(new)" in fresh.startup_output
        new_token = minted_token(fresh)
        assert stack.session(token).get(stack.api("/organizations/keep")).status_code == 401
        assert stack.session(new_token).get(stack.api("/organizations/keep")).status_code == 404
        # The periodic sweep deletes a row once it has expired, and only that one.
        dynamodb = aws(fresh.moto_url, "dynamodb")
        expired = put_counter(dynamodb, "expired", int(time.time()) - 5)
        current = put_counter(dynamodb, "current", int(time.time()) + 3600)
        assert not wait_for(lambda: present(dynamodb, expired), lambda found: not found, 10)
        assert present(dynamodb, current)
    finally:
        spawn.stop(fresh)


@within(30)
def test_the_default_data_dir_is_ignored_by_git():
    root = Path(__file__).resolve().parents[2]
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", ".data/moto-state.pickle"], cwd=root, check=False
    )
    if ignored.returncode == 128:
        pytest.skip("not a git checkout")
    assert ignored.returncode == 0


# ----- 4. request bodies API Gateway would refuse -------------------------------------------

MB = 1024 * 1024
POST_HEAD = b"POST /api/v2/organizations HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\n"


def exchange(stack: Stack, head: bytes, body: bytes | Any = b"") -> tuple[int, dict, bytes]:
    """Send ``head`` (and ``body``, bytes or an iterable of pieces sent by a second thread
    while the reply is read) on a raw connection; the reply read to the connection's end
    (a refusal closes it: no 5 s timeout, no reset)."""
    parts = urlsplit(stack.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
        sock.sendall(head + b"\r\n")

        def send_body() -> None:
            pieces = [body] if isinstance(body, bytes) else body
            try:
                for piece in pieces:
                    sock.sendall(piece)
            except OSError:
                pass  # the server answered and closed before taking it all

        sender = threading.Thread(target=send_body)
        sender.start()
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
        sender.join(10)
    status_line, _, rest = reply.partition(b"\r\n")
    raw_headers, _, content = rest.partition(b"\r\n\r\n")
    headers = dict(
        line.decode().lower().split(": ", 1) for line in raw_headers.split(b"\r\n") if line
    )
    return int(status_line.split()[1]), headers, content


def assert_refused(reply: tuple[int, dict, bytes], status: int, detail: str) -> None:
    code, headers, content = reply
    assert code == status, (code, content)
    assert headers["content-type"] == "application/vnd.api+json"
    assert headers["connection"] == "close"
    import json

    (error,) = json.loads(content)["errors"]
    assert error["status"] == str(status) and detail in error["detail"], error


def still_serving(stack: Stack) -> None:
    assert requests.get(f"{stack.url}/.well-known/terraform.json", timeout=5).status_code == 200


@within(60)
def test_a_declared_body_over_10_mb_is_refused_before_it_is_read(stack: Stack):
    """413 as API Gateway answers it, from the Content-Length alone: the server used to read
    any body whole (11 MB: no answer until the client sent it all; 50 GB: a MemoryError and
    a dropped connection)."""
    for length in (11 * MB, 50 * 1024 * MB, 10 * MB + 1):
        started = time.monotonic()
        reply = exchange(stack, POST_HEAD + b"Content-Length: %d\r\n" % length)
        assert_refused(reply, 413, "larger than 10485760 bytes")
        assert time.monotonic() - started < 2, length  # answered without waiting for a body
        still_serving(stack)
    # A client that waits for 100 Continue is told at once, not invited to send.
    reply = exchange(
        stack, POST_HEAD + b"Expect: 100-continue\r\nContent-Length: %d\r\n" % (10 * MB + 1)
    )
    assert_refused(reply, 413, "larger than")
    # A client sending the body anyway (as requests does) gets the answer, not a reset.
    sent = requests.post(stack.api("/organizations"), data=b"x" * (11 * MB), timeout=30)
    assert sent.status_code == 413 and sent.json()["errors"][0]["status"] == "413"
    # A declared length that is not one is a 400.
    for bad in (b"Content-Length: ten\r\n", b"Content-Length: 5\r\nContent-Length: 6\r\n"):
        assert_refused(exchange(stack, POST_HEAD + bad), 400, "Content-Length")
    still_serving(stack)


@within(60)
def test_a_chunked_body_over_10_mb_or_malformed_is_refused(stack: Stack):
    """Chunked bodies were refused by an exception nothing caught (Chalice binds do_POST to
    its own handler): the client got no answer at all."""
    chunked = POST_HEAD + b"Transfer-Encoding: chunked\r\n"
    # Eleven 1 MB chunks: refused at the size line of the one that passes 10 MB.
    pieces = [b"100000\r\n" + b"x" * MB + b"\r\n" for _ in range(11)] + [b"0\r\n\r\n"]
    assert_refused(exchange(stack, chunked, iter(pieces)), 413, "larger than 10485760 bytes")
    still_serving(stack)
    # One chunk claiming 11 MB (or 2^64 - 1): refused from its size line.
    for size in (b"B00000", b"FFFFFFFFFFFFFFFF"):
        assert_refused(exchange(stack, chunked, size + b"\r\n"), 413, "larger than")
        still_serving(stack)
    for malformed in (b"zz\r\n", b"-5\r\nabc\r\n0\r\n\r\n", b"0x5\r\n", b"3\r\nabcdef\r\n"):
        assert_refused(exchange(stack, chunked, malformed), 400, "malformed chunked")
        still_serving(stack)


@within(30)
def test_the_servers_own_refusals_are_json_api_4xx(stack: Stack):
    """http.server's refusals (answered by our send_error) stay 4xx JSON:API documents; an
    HTTP version it does not speak is a 400, not a 505."""
    for request, status in [
        (b"GET / HTTP/9.9\r\nHost: r\r\n", 400),
        (b"GET / HTTP/2.0\r\nHost: r\r\n", 400),
        (b"BREW / HTTP/1.1\r\nHost: r\r\n", 405),
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: r\r\n", 414),
        (b"GET / HTTP/1.1\r\nX-Long: " + b"a" * 70_000 + b"\r\n", 431),
        (b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(150)), 431),
    ]:
        code, headers, content = exchange(stack, request)
        assert code == status, (request[:40], code, content)
        assert headers["content-type"] == "application/vnd.api+json"
        assert content.startswith(b'{"errors": [{"status": "%d"' % status), content
    still_serving(stack)
