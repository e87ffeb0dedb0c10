"""Trivy as the module scanner (chalicelib.trust.trivy), with the real binary from the venv.

The fixture modules under ``modules/``: ``insecure`` (a public-read S3 ACL, SSH open to the
world, an unencrypted EBS volume, a publicly accessible database), ``clean``, ``formats``
(``.tofu``, ``.tf.json`` and a local submodule) and, written by the tests, modules with remote
sources, inline ignores and a local source climbing out of the module.
"""

from __future__ import annotations

import gzip
import os
import socket
import stat
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from chalicelib.core.settings import get_settings
from chalicelib.trust import trivy
from chalicelib.trust.findings import ScanReport, ScanStatus, Severity
from chalicelib.trust.scanner import ScanLimits, Scanner
from chalicelib.trust.trivy import TrivyScanner
from infrastructure import scanner_layer
from tests.trust.modules import MODULES

TRIVY = Path(sys.executable).parent / "trivy"
LIMITS = ScanLimits()

# The rule each of the insecure module's four faults breaks (Trivy 0.76's embedded checks).
INSECURE_RULES = {
    "AWS-0092": ("aws_s3_bucket_acl.logs", 7),  # S3 bucket readable through a public ACL
    "AWS-0107": ("aws_security_group.ssh", 19),  # ingress to SSH from 0.0.0.0/0
    "AWS-0026": ("aws_ebs_volume.data", 23),  # EBS volume not encrypted
    "AWS-0180": ("aws_db_instance.db", 35),  # RDS instance publicly accessible
}

pytestmark = pytest.mark.skipif(not TRIVY.is_file(), reason="the venv has no trivy binary")


@pytest.fixture(scope="module")
def insecure() -> ScanReport:
    return TrivyScanner(TRIVY).scan(MODULES / "insecure", LIMITS)


def write_module(directory: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    return directory


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_is_a_scanner() -> None:
    scanner: Scanner = TrivyScanner(TRIVY)
    assert scanner.name == "trivy"


def test_the_insecure_module_gets_a_finding_for_each_fault(insecure: ScanReport) -> None:
    assert insecure.status == ScanStatus.FINDINGS and not insecure.error
    by_rule = {f.rule_id: f for f in insecure.findings}
    for rule, (resource, line) in INSECURE_RULES.items():
        finding = by_rule[rule]
        assert finding.severity == Severity.HIGH
        assert (finding.resource, finding.file) == (resource, "main.tf")
        assert finding.start_line is not None and finding.end_line is not None
        assert finding.start_line <= line <= finding.end_line
        assert finding.title and finding.description and finding.resolution
        assert finding.guidance_url == f"https://avd.aquasec.com/misconfig/{rule.lower()}"


def test_a_report_says_what_scanned_and_counts_every_finding(insecure: ScanReport) -> None:
    assert insecure.scanner == "trivy" and insecure.scanner_version == "0.76.0"
    assert insecure.rules_version.startswith("trivy-checks v1.")
    assert sum(insecure.counts.values()) == len(insecure.findings) > 4
    assert not insecure.truncated
    ranks = [f.severity.rank for f in insecure.findings]
    assert ranks == sorted(ranks, reverse=True)


def test_the_clean_module_has_nothing_above_low() -> None:
    report = TrivyScanner(TRIVY).scan(MODULES / "clean", LIMITS)
    assert report.status in (ScanStatus.PASSED, ScanStatus.FINDINGS) and not report.error
    assert all(f.severity.rank <= Severity.LOW.rank for f in report.findings)
    assert report.counts["high"] == report.counts["critical"] == report.counts["medium"] == 0


def test_tofu_and_tf_json_files_and_local_submodules_are_read() -> None:
    report = TrivyScanner(TRIVY).scan(MODULES / "formats", LIMITS)
    where = {(f.rule_id, f.file) for f in report.findings}
    assert ("AWS-0107", "main.tofu") in where
    assert ("AWS-0180", "db.tf.json") in where
    assert ("AWS-0026", "modules/disk/main.tf") in where


def test_findings_kept_are_capped_most_severe_first(insecure: ScanReport) -> None:
    report = TrivyScanner(TRIVY).scan(MODULES / "insecure", ScanLimits(max_findings=3))
    assert len(report.findings) == 3 and report.truncated
    assert report.counts == insecure.counts  # every finding counted, kept or not
    dropped_worst = max(f.severity.rank for f in insecure.findings[3:])
    assert all(f.severity.rank >= dropped_worst for f in report.findings)
    assert report.summary()["status"] == "findings"


class Listener:
    """A TCP server on loopback recording what each connection sends first."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.received: list[bytes] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    self.received.append(connection.recv(4096))
                except OSError:
                    self.received.append(b"")

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.server.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    served = Listener()
    yield served
    served.close()


def test_remote_module_sources_are_not_fetched(
    tmp_path: Path, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sources of every kind, most of them at a loopback server: nothing is downloaded, no
    request reaches it (a registry host's TLS handshake may: it fails before any request),
    and the module's own resources are still scanned."""
    # The test's own environment lets loopback through (what a scan must not rely on) and
    # closes the rest of the network.
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(proxy, "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    local = f"127.0.0.1:{listener.port}"
    calls = {
        "registry": 'source = "terraform-aws-modules/security-group/aws"\n  version = "5.1.0"',
        "own_registry": f'source = "{local}/acme/open-ssh/aws"\n  version = "1.0.0"',
        "git_http": f'source = "git::http://{local}/open-ssh.git?ref=v1"',
        "git_ssh": 'source = "git::ssh://git@github.com/acme/open-ssh.git"',
        "github": 'source = "github.com/acme/terraform-aws-open-ssh"',
        "archive": f'source = "https://{local}/open-ssh.zip"',
        "s3": 'source = "s3::https://s3.amazonaws.com/acme-modules/open-ssh.zip"',
        "gcs": 'source = "gcs::https://www.googleapis.com/storage/v1/acme/open-ssh.zip"',
    }
    module = write_module(
        tmp_path / "remote",
        {
            "main.tf": "".join(f'module "{n}" {{\n  {s}\n}}\n' for n, s in calls.items())
            + 'resource "aws_ebs_volume" "data" {\n  availability_zone = "us-east-1a"\n'
            "  size = 10\n}\n"
        },
    )
    report = TrivyScanner(TRIVY).scan(module, LIMITS)
    assert report.status == ScanStatus.FINDINGS, report.error
    assert {f.file for f in report.findings} == {"main.tf"}
    assert "AWS-0026" in {f.rule_id for f in report.findings}
    methods = (b"GET ", b"POST ", b"HEAD ", b"PUT ", b"CONNECT ")
    assert not [data for data in listener.received if data.startswith(methods)]


def test_inline_ignores_in_the_module_do_not_hide_findings(tmp_path: Path) -> None:
    ingress = (
        '  ingress {{\n    description = "SSH"\n    from_port = 22\n    to_port = 22\n'
        '    protocol = "tcp"\n    cidr_blocks = ["0.0.0.0/0"] {comment}\n  }}\n'
    )
    main = "".join(
        f'{above}\nresource "aws_security_group" "{name}" {{\n  description = "ssh"\n'
        + ingress.format(comment=inline)
        + "}\n"
        for name, above, inline in (
            ("trivy_inline", "", "# trivy:ignore:AWS-0107"),
            ("tfsec_above", "#tfsec:ignore:aws-ec2-no-public-ingress-sgr", ""),
            ("trivy_above", "// trivy:ignore:*", ""),
        )
    )
    module = write_module(tmp_path / "ignoring", {"main.tf": main, ".trivyignore": "AWS-0107\n"})
    report = TrivyScanner(TRIVY).scan(module, LIMITS)
    flagged = {f.resource for f in report.findings if f.rule_id == "AWS-0107"}
    assert flagged == {
        "aws_security_group.trivy_inline",
        "aws_security_group.tfsec_above",
        "aws_security_group.trivy_above",
    }


def test_disarming_an_ignore_keeps_every_line_and_column() -> None:
    text = b'a = 1 # trivy:ignore:AWS-0107\n#tfsec:ignore:x\n/* trivy:ignore:y */ b = "mytrivy:z"\n'
    disarmed = trivy.disarm_inline_ignores(text)
    assert len(disarmed) == len(text) and disarmed.count(b"\n") == text.count(b"\n")
    assert b"trivy:ignore" not in disarmed and b"tfsec:ignore" not in disarmed
    assert b'"mytrivy:z"' in disarmed  # not the start of a word: no ignore to disarm


def test_files_outside_the_module_never_reach_the_report(tmp_path: Path) -> None:
    """A local source may climb out of the module (Trivy reads it): its findings are dropped."""
    outside = write_module(
        tmp_path / "elsewhere",
        {"disk.tf": 'resource "aws_ebs_volume" "secret" {\n  availability_zone = "a"\n}\n'},
    )
    climb = "../" * 40 + str(outside).lstrip("/")
    module = write_module(
        tmp_path / "climbing",
        {"main.tf": f'module "out" {{\n  source = "{climb}"\n}}\n'},
    )
    report = TrivyScanner(TRIVY).scan(module, LIMITS)
    assert report.status == ScanStatus.PASSED, report.findings
    assert trivy._inside_module("../../etc/x.tf") is None
    assert trivy._inside_module("/etc/x.tf") is None
    assert trivy._inside_module("modules/./a/../b/main.tf") == "modules/b/main.tf"


def test_only_the_modules_terraform_files_are_scanned(tmp_path: Path) -> None:
    module = write_module(
        tmp_path / "mixed",
        {
            "main.tf": "",
            "sub/x.tofu.json": "{}",
            ".terraform/modules/vendored/main.tf": "",
            ".git/hooks/a.tf": "",
            "Dockerfile": "FROM scratch\n",
            "k8s.yaml": "kind: Pod\n",
        },
    )
    (module / "linked.tf").symlink_to(module / "main.tf")
    target = tmp_path / "copy"
    assert trivy.copy_terraform_files(module, target) == 2
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()) == [
        "main.tf",
        "sub/x.tofu.json",
    ]


def test_a_scan_over_its_time_fails_and_kills_what_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    hanging = script(tmp_path / "trivy", f"/bin/sleep 600 &\necho $! > {pids}\nwait\n")
    report = TrivyScanner(hanging).scan(MODULES / "clean", ScanLimits(seconds=1))
    assert report.status == ScanStatus.FAILED
    assert report.error == "the scan took longer than its limit of 1 s"
    assert report.findings == () and sum(report.counts.values()) == 0
    child = int(pids.read_text())
    for _ in range(100):  # SIGKILL is delivered at once; the reaping by init may take a moment
        if not running(child):
            break
        time.sleep(0.05)
    assert not running(child)


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_a_scan_over_its_memory_fails() -> None:
    report = TrivyScanner(TRIVY).scan(MODULES / "insecure", ScanLimits(memory_bytes=64 << 20))
    assert report.status == ScanStatus.FAILED
    assert report.error.startswith("Trivy ran out of memory (limit 64 MB)")


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("echo 'fatal: broken' >&2\nexit 3\n", "Trivy exited with status 3: fatal: broken"),
        ('echo "not json" > "${3#--output=}"\n', "Trivy's report is not JSON"),
        ("kill -SEGV $$\n", "Trivy was killed by signal 11"),
    ],
)
def test_a_broken_binary_gives_a_failed_scan(tmp_path: Path, body: str, error: str) -> None:
    report = TrivyScanner(script(tmp_path / "trivy", body)).scan(MODULES / "clean", LIMITS)
    assert (report.status, report.error) == (ScanStatus.FAILED, error)
    assert report.scanner == "trivy" and report.summary()["error"] == error


def test_a_binary_that_is_not_there_or_not_a_program_gives_a_failed_scan(tmp_path: Path) -> None:
    missing = TrivyScanner(tmp_path / "nowhere").scan(MODULES / "clean", LIMITS)
    assert missing.status == ScanStatus.FAILED
    assert missing.error == f"Trivy is unavailable: no executable file at {tmp_path / 'nowhere'}"
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x7fELF not really")
    garbage.chmod(0o755)
    report = TrivyScanner(garbage).scan(MODULES / "clean", LIMITS)
    assert report.status == ScanStatus.FAILED
    assert report.error == "Trivy could not start: Exec format error"


def test_scanning_no_directory_is_the_callers_mistake(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        TrivyScanner(TRIVY).scan(tmp_path / "nothing", LIMITS)


@pytest.fixture
def settings_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def test_the_scan_settings(settings_env: pytest.MonkeyPatch) -> None:
    assert ScanLimits.from_settings() == ScanLimits(60.0, 1024 << 20, 500)
    settings_env.setenv("REGISTRY_SCAN_SECONDS", "90")
    settings_env.setenv("REGISTRY_SCAN_MEMORY_MB", "768")
    settings_env.setenv("REGISTRY_SCAN_MAX_FINDINGS", "50")
    get_settings.cache_clear()
    assert ScanLimits.from_settings() == ScanLimits(90.0, 768 << 20, 50)


def test_the_binary_setting_comes_first(settings_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert trivy.locate_trivy() == TRIVY  # beside the interpreter (the venv's)
    chosen = script(tmp_path / "my-trivy", "exit 0\n")
    settings_env.setenv("REGISTRY_TRIVY_PATH", str(chosen))
    get_settings.cache_clear()
    assert trivy.locate_trivy() == chosen
    settings_env.setenv("REGISTRY_TRIVY_PATH", str(tmp_path / "absent"))
    get_settings.cache_clear()
    with pytest.raises(trivy.TrivyUnavailable):
        trivy.locate_trivy()
    report = TrivyScanner().scan(MODULES / "clean", LIMITS)
    assert report.status == ScanStatus.FAILED and "REGISTRY_TRIVY_PATH" in report.error


def test_the_layers_binary_is_decompressed_once(tmp_path: Path) -> None:
    program = b"#!/bin/sh\n# mod\tgithub.com/aquasecurity/trivy\tv9.9.9\n" + os.urandom(1000)
    archive = tmp_path / "opt" / "trivy.gz"
    archive.parent.mkdir()
    archive.write_bytes(gzip.compress(program))
    target = tmp_path / "tmp" / "trivy"
    assert trivy.unpack_layer_binary(archive, target) == target
    assert target.read_bytes() == program and os.access(target, os.X_OK)
    first = target.stat().st_ino
    assert trivy.unpack_layer_binary(archive, target) == target
    assert target.stat().st_ino == first  # used as it was, not written again
    target.write_bytes(program[:10])  # an interrupted copy is replaced
    trivy.unpack_layer_binary(archive, target)
    assert target.read_bytes() == program
    assert trivy.read_versions(target) == ("9.9.9", "")


def test_the_layer_zip_holds_the_gzipped_binary_and_its_versions(tmp_path: Path) -> None:
    binary = tmp_path / "trivy"
    binary.write_bytes(
        b"#!/bin/sh\n# mod\tgithub.com/aquasecurity/trivy\tv0.76.0\n"
        b"# dep\tgithub.com/aquasecurity/trivy-checks\tv1.2.3-x\th1:abc=\n"
    )
    binary.chmod(0o755)
    cached, out = tmp_path / "build" / "layer.zip", tmp_path / "out" / "layer.zip"
    assert scanner_layer.build(binary, cached, out)
    with zipfile.ZipFile(out) as layer:
        assert sorted(layer.namelist()) == ["trivy/VERSION", "trivy/trivy.gz"]
        assert gzip.decompress(layer.read("trivy/trivy.gz")) == binary.read_bytes()
        assert layer.read("trivy/VERSION") == b"0.76.0\ntrivy-checks v1.2.3-x\n"
    built_at = cached.stat().st_mtime_ns
    out.unlink()
    assert not scanner_layer.build(binary, cached, out)  # newer than the binary: kept
    assert cached.stat().st_mtime_ns == built_at and out.is_file()
    os.utime(binary, ns=(built_at + 10**9, built_at + 10**9))
    assert scanner_layer.build(binary, cached, out)  # the binary changed: built again
