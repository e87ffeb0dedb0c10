"""The real ``terraform`` binary installs a public provider through the registry's network
mirror: terraform uses a mirror over HTTPS only, so a throwaway CA signs a certificate for a
small local TLS proxy in front of the local stack, and the mirror's pull-through cache
fetches ``registry.terraform.io/hashicorp/fake`` from a local stand-in upstream (never the
internet: the shared stack's ``mirror_upstream``)."""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import os
import re
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import ADMIN_TOKEN, MIRRORED_BINARY, Stack
from tests.support.mirror_upstream import Listener, Upstream
from tests.support.provider_files import expected_h1

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH"),
]

BINARY = MIRRORED_BINARY


def throwaway_ca(directory: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) for 127.0.0.1, in PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def certificate(subject: str, key: Any, issuer: Any, signer: Any, ca: bool) -> Any:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mirror test CA")])
    ca = certificate("mirror test CA", ca_key, ca_name, ca_key, ca=True)
    server = certificate("127.0.0.1", server_key, ca.subject, ca_key, ca=False)
    pem = serialization.Encoding.PEM
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    paths[0].write_bytes(ca.public_bytes(pem))
    paths[1].write_bytes(server.public_bytes(pem))
    paths[2].write_bytes(
        server_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths


class TlsProxy:
    """HTTPS on 127.0.0.1 forwarded to ``target`` (http) with ``X-Forwarded-Proto: https``,
    as a TLS-terminating load balancer does."""

    def __init__(self, target: str, cert: Path, key: Path) -> None:
        upstream = urlsplit(target)
        self.requests: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                proxy.requests.append(self.path)
                connection = http.client.HTTPConnection(upstream.netloc, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                connection.request(
                    "GET", self.path, headers={**headers, "X-Forwarded-Proto": "https"}
                )
                response = connection.getresponse()
                body = response.read()
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                connection.close()

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def upstream(mirror_upstream: Upstream) -> Upstream:
    return mirror_upstream


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory, stack: Stack) -> Iterator[tuple[Path, TlsProxy]]:
    """The throwaway CA's certificate and the TLS proxy in front of the stack."""
    ca, cert, key = throwaway_ca(tmp_path_factory.mktemp("tls"))
    proxy = TlsProxy(stack.url, cert, key)
    yield ca, proxy
    proxy.close()


def terraform_init(
    workdir: Path, tls: tuple[Path, TlsProxy], token: str, source: str, version: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``terraform init`` of a configuration requiring ``source`` at ``version``, with the
    registry's mirror (behind the TLS proxy) as the only installation method: (the run, its
    seconds)."""
    ca, proxy = tls
    return mirror_init(workdir, proxy.host, ca, token, source, version)


def mirror_init(
    workdir: Path, host: str, trusted: Path, token: str, source: str, version: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``terraform init`` as ``terraform_init``, with the mirror at ``https://host`` and
    ``SSL_CERT_FILE`` naming ``trusted``."""
    workdir.mkdir()
    config = workdir / "cli.tfrc"
    config.write_text(
        "provider_installation {\n"
        "  network_mirror {\n"
        f'    url = "https://{host}/api/registry/mirror/v1/"\n'
        "  }\n"
        "}\n"
        f'credentials "{host}" {{\n  token = "{token}"\n}}\n'
    )
    (workdir / "main.tf").write_text(
        "terraform {\n  required_providers {\n    wanted = {\n"
        f'      source  = "{source}"\n'
        f'      version = "{version}"\n    }}\n  }}\n}}\n'
    )
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": str(config),
        "SSL_CERT_FILE": str(trusted),
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
    }
    started = time.monotonic()
    result = subprocess.run(
        ["terraform", "init", "-no-color", "-input=false"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    return result, time.monotonic() - started


def lock_hashes(workdir: Path) -> list[str]:
    return re.findall(r'"((?:h1|zh):[^"]+)"', (workdir / ".terraform.lock.hcl").read_text())


def test_terraform_init_installs_a_public_provider_through_the_mirror(
    tmp_path: Path, upstream: Upstream, tls: tuple[Path, TlsProxy]
) -> None:
    workdir = tmp_path / "public"
    result, seconds = terraform_init(
        workdir, tls, ADMIN_TOKEN, "registry.terraform.io/hashicorp/fake", "1.0.0"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    print(f"terraform init through the mirror (pull-through): {seconds:.1f} s")  # noqa: T201
    assert "Installed hashicorp/fake v1.0.0" in result.stdout
    # The mirror was asked over TLS, with the token terraform sends to the mirror's host.
    _, proxy = tls
    assert "/api/registry/mirror/v1/registry.terraform.io/hashicorp/fake/index.json" in (
        proxy.requests
    )
    installed = workdir / ".terraform/providers/registry.terraform.io/hashicorp/fake/1.0.0"
    assert (installed / "linux_amd64/terraform-provider-fake_v1.0.0").read_bytes() == BINARY
    # The lock file holds terraform's own h1: of the package it installed (a mirror's
    # hashes are not signed, so terraform records no others): the very h1: the mirror
    # reported for that archive, which terraform checked the download against.
    assert lock_hashes(workdir) == [expected_h1(upstream.zips[("1.0.0", "linux_amd64")])]

    # A second consumer is served from the cache: the upstream is not asked again.
    asked = len(upstream.requests)
    again, seconds = terraform_init(
        tmp_path / "again", tls, ADMIN_TOKEN, "registry.terraform.io/hashicorp/fake", "1.0.0"
    )
    assert again.returncode == 0, again.stdout + again.stderr
    print(f"terraform init through the mirror (cached): {seconds:.1f} s")  # noqa: T201
    assert len(upstream.requests) == asked


def test_the_mirror_works_on_the_stacks_own_https(
    tmp_path: Path, stack: Stack, upstream: Upstream
) -> None:
    """``make run``'s own HTTPS (its local CA), not this module's proxy: terraform, told
    only what ``make run`` printed (its "terraform host:" and the ``SSL_CERT_FILE`` line),
    installs the stand-in upstream's public provider through the mirror. The docs'
    walkthroughs install a private one this way (tests/e2e/test_walkthroughs.py)."""
    host = re.search(r"terraform host: (\S+)", stack.startup)
    bundle = re.search(r"export SSL_CERT_FILE=(\S+)", stack.startup)
    assert host and bundle, stack.startup
    result, seconds = mirror_init(
        tmp_path / "own-https",
        host.group(1),
        Path(bundle.group(1)),
        ADMIN_TOKEN,
        "registry.terraform.io/hashicorp/fake",
        "1.0.0",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    print(f"terraform init through the mirror on make run's HTTPS: {seconds:.1f} s")  # noqa: T201
    assert "Installed hashicorp/fake v1.0.0" in result.stdout
    assert lock_hashes(tmp_path / "own-https") == [
        expected_h1(upstream.zips[("1.0.0", "linux_amd64")])
    ]
    # The same mirror refuses a token it does not know (401) over HTTPS too.
    refused, _ = mirror_init(
        tmp_path / "no-token",
        host.group(1),
        Path(bundle.group(1)),
        "not-a-token",
        "registry.terraform.io/hashicorp/fake",
        "1.0.0",
    )
    assert refused.returncode != 0, refused.stdout
    said = " ".join(refused.stderr.split())  # terraform wraps its lines
    assert "rejected the given authentication credentials" in said, refused.stderr


def test_terraform_init_installs_a_private_provider_through_the_mirror(
    tmp_path: Path, stack: Stack, tls: tuple[Path, TlsProxy]
) -> None:
    import hashlib

    import requests

    from tests.conftest import doc
    from tests.e2e.conftest import wait_for
    from tests.support.mirror_upstream import provider_zip
    from tests.support.provider_files import new_signing_key, shasums

    api = f"{stack.url}/api/v2"
    admin = requests.Session()
    admin.headers.update(
        {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/vnd.api+json"}
    )
    org = "mirror-e2e"
    assert admin.post(
        f"{api}/organizations", json=doc("organizations", name=org, email="o@m.io")
    ).ok
    providers = f"{api}/organizations/{org}/registry-providers"
    body = doc("registry-providers", name="fake", namespace=org, **{"registry-name": "private"})
    assert admin.post(providers, json=body).status_code == 201
    signer = new_signing_key("Mirror E2E Signer")
    key = {"namespace": org, "ascii-armor": signer.armor}
    keys_url = f"{stack.url}/api/registry/private/v2/gpg-keys"
    assert admin.post(keys_url, json=doc("gpg-keys", **key)).status_code == 201
    versions = f"{providers}/private/{org}/fake/versions"
    body = doc("registry-provider-versions", version="2.0.0", **{"key-id": signer.key_id})
    body["data"]["attributes"]["protocols"] = ["5.0"]
    created = admin.post(versions, json=body)
    assert created.status_code == 201, created.text
    links = created.json()["data"]["links"]
    archive = provider_zip("2.0.0", "linux", "amd64", binary=BINARY)
    name = "terraform-provider-fake_2.0.0_linux_amd64.zip"
    attributes = {
        "os": "linux",
        "arch": "amd64",
        "shasum": hashlib.sha256(archive).hexdigest(),
        "filename": name,
    }
    platform = admin.post(
        f"{versions}/2.0.0/platforms",
        json={"data": {"type": "registry-provider-version-platforms", "attributes": attributes}},
    )
    assert platform.status_code == 201, platform.text
    sums = shasums({name: archive})
    octets = {"Content-Type": "application/octet-stream"}
    for link, data in (
        (links["shasums-upload"], sums),
        (links["shasums-sig-upload"], signer.sign(sums)),
        (platform.json()["data"]["links"]["provider-binary-upload"], archive),
    ):
        assert requests.put(link, data=data, headers=octets, timeout=30).status_code == 200

    def verified() -> bool:
        read = admin.get(f"{versions}/2.0.0/platforms/linux/amd64").json()
        return read["data"]["attributes"]["status"] == "verified"

    assert wait_for(verified, bool), admin.get(f"{versions}/2.0.0").text

    # Any host name but a public registry's means this registry's own providers.
    workdir = tmp_path / "private"
    result, seconds = terraform_init(
        workdir, tls, ADMIN_TOKEN, f"registry.example.com/{org}/fake", "2.0.0"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    print(f"terraform init through the mirror (private): {seconds:.1f} s")  # noqa: T201
    assert lock_hashes(workdir) == [expected_h1(archive)]


def test_a_download_link_to_another_loopback_port_is_refused_unconnected(
    stack: Stack, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33, finding 5, over the wire: the upstream's download answer names a loopback
    port (standing for the metadata service); the stack's cache refuses it without
    connecting, and its 502 says nothing of what that port would answer."""
    import json

    import requests

    listener = Listener()
    answer = upstream.answer

    def lying(path: str) -> tuple[int, bytes]:
        status, body = answer(path)
        if "/download/" in path:
            link = f"http://127.0.0.1:{listener.port}/latest/meta-data/iam/"
            body = json.dumps({**json.loads(body), "download_url": link}).encode()
        return status, body

    monkeypatch.setattr(upstream, "answer", lying)
    # registry.opentofu.org: the same upstream, a cache no other test fills.
    path = "/api/registry/mirror/v1/registry.opentofu.org/hashicorp/fake/1.0.0.json"
    try:
        reply = requests.get(
            stack.url + path, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=60
        )
    finally:
        listener.close()
    assert reply.status_code == 502, reply.text
    error = reply.json()["errors"][0]
    assert "not an allowed destination" in error
    assert not listener.told(error), error
    assert listener.connections == []
