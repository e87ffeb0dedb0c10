"""The deployment template agrees with the code: tables, route groups, event handlers."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from chalicelib.core.data import db
from infrastructure import template
from infrastructure.groups import ALL_FUNCTIONS, EVENT_FUNCTIONS, ROUTE_GROUPS


def _keys(schema: list[dict]) -> set[tuple[str, str]]:
    return {(k["AttributeName"], k["KeyType"]) for k in schema}


def test_template_tables_match_the_models_and_the_local_tables(aws: None):
    from chalicelib.core.data.aws import client

    merged = template.merge_template()["Resources"]
    tables = {
        r["Properties"]["TableName"]["Fn::Sub"]: r["Properties"]
        for r in merged.values()
        if r.get("Type") == "AWS::DynamoDB::Table"
    }
    shorts = template.table_short_names()
    assert set(tables) == {f"${{AWS::StackName}}-{short}" for short in shorts}
    dynamodb = client("dynamodb")
    for short, model in shorts.items():
        cfn = tables[f"${{AWS::StackName}}-{short}"]
        local = dynamodb.describe_table(TableName=model.Meta.table_name)["Table"]
        assert _keys(cfn["KeySchema"]) == _keys(local["KeySchema"]), short
        assert cfn["KeySchema"][0]["KeyType"] == "HASH"
        cfn_indexes = {
            i["IndexName"]: _keys(i["KeySchema"]) for i in cfn.get("GlobalSecondaryIndexes", [])
        }
        local_indexes = {
            i["IndexName"]: _keys(i["KeySchema"]) for i in local.get("GlobalSecondaryIndexes", [])
        }
        assert cfn_indexes == local_indexes, short
        defined = {a["AttributeName"] for a in cfn["AttributeDefinitions"]}
        used = {name for name, _ in _keys(cfn["KeySchema"])}
        used |= {name for keys in cfn_indexes.values() for name, _ in keys}
        assert defined == used, short  # CloudFormation rejects unused attribute definitions
        assert cfn["BillingMode"] == "PAY_PER_REQUEST"
        assert cfn["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"]
        ttl = model._ttl_attribute()
        assert cfn.get("TimeToLiveSpecification", {}).get("AttributeName") == (
            ttl.attr_name if ttl else None
        ), short
    assert len(shorts) == len(db.MODELS)


def test_deleting_the_stack_keeps_the_data_the_secrets_key_and_old_archive_versions():
    """Tables, bucket and the KMS key survive a stack deletion or replacement (the secrets in
    the tables are unreadable without the key); archives keep their earlier versions."""
    merged = template.merge_template()
    resources = merged["Resources"]
    kept = [
        name
        for name, r in resources.items()
        if r.get("Type") in ("AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::KMS::Key")
    ]
    assert "SecretsKey" in kept and "ArchiveBucket" in kept and "SigningKey" in kept
    assert "AuditBucket" in kept  # the audit trail's export (Object Lock)
    assert len(kept) == len(db.MODELS) + 4
    for name in kept:
        assert resources[name]["DeletionPolicy"] == "Retain", name
        assert resources[name]["UpdateReplacePolicy"] == "Retain", name

    bucket = resources["ArchiveBucket"]["Properties"]
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    rules = {rule["Id"]: rule for rule in bucket["LifecycleConfiguration"]["Rules"]}
    noncurrent = rules["noncurrent-versions"]
    assert noncurrent["Status"] == "Enabled" and "Prefix" not in noncurrent  # every archive
    assert noncurrent["NoncurrentVersionExpiration"] == {
        "NoncurrentDays": {"Ref": "ArchiveVersionDays"}
    }
    assert merged["Parameters"]["ArchiveVersionDays"]["Default"] == 30
    assert merged["Parameters"]["OutboundAllow"]["Default"] == ""  # public addresses only

    # A stack restoring retained tables reuses the retained key: functions, alias and output
    # all name the key in use.
    key = resources["SecretsKey"]
    assert key["Condition"] == "CreateSecretsKey"
    assert merged["Conditions"]["CreateSecretsKey"] == {
        "Fn::Equals": [{"Ref": "ExistingSecretsKeyArn"}, ""]
    }
    in_use = template.SECRETS_KEY_ARN
    assert in_use["Fn::If"][1:] == [
        {"Fn::GetAtt": ["SecretsKey", "Arn"]},
        {"Ref": "ExistingSecretsKeyArn"},
    ]
    assert resources["SecretsKeyAlias"]["Properties"]["TargetKeyId"] == in_use
    assert merged["Outputs"]["SecretsKeyArn"]["Value"] == in_use
    for function in ALL_FUNCTIONS:
        variables = resources[function.logical_id]["Properties"]["Environment"]["Variables"]
        assert variables["REGISTRY_KMS_KEY"] == in_use
        # One setting for every outbound fetch (core.outbound), from a stack parameter.
        assert variables["REGISTRY_OUTBOUND_ALLOW"] == {"Ref": "OutboundAllow"}
        statements = resources[f"{function.logical_id}Role"]["Properties"]["Policies"][0][
            "PolicyDocument"
        ]["Statement"]
        kms = [s for s in statements if any(a.startswith("kms:") for a in s["Action"])]
        sealing = [s for s in kms if "kms:Decrypt" in s["Action"]]
        assert [s["Resource"] for s in sealing] == [in_use], function.logical_id
        # Only the functions that sign provenance may sign; only the one that serves the
        # signing keys reads their public halves (the current and the previous keys).
        signing = [s["Resource"] for s in kms if s["Action"] == ["kms:Sign"]]
        assert signing == ([template.SIGNING_KEY_ARN] if function.signs else [])
        reading = [s["Resource"] for s in kms if s["Action"] == ["kms:GetPublicKey"]]
        assert reading == ([template.LISTED_SIGNING_KEYS] if function.reads_public_keys else [])
        assert len(kms) == len(sealing) + len(signing) + len(reading), function.logical_id
        assert variables["REGISTRY_SIGNING_KEY"] == template.SIGNING_KEY_ARN
    assert [f.logical_id for f in ALL_FUNCTIONS if f.reads_public_keys] == ["ProtocolFunction"]
    assert "Ingest" in [f.logical_id for f in ALL_FUNCTIONS if f.signs]  # providers' provenance
    signing_key = resources["SigningKey"]["Properties"]
    assert (signing_key["KeySpec"], signing_key["KeyUsage"]) == ("ECC_NIST_P256", "SIGN_VERIFY")
    assert resources["SigningKey"]["Condition"] == "CreateSigningKey"
    assert merged["Outputs"]["SigningKeyArn"]["Value"] == template.SIGNING_KEY_ARN


def test_every_route_belongs_to_exactly_one_group_function():
    from app import app

    full = Counter((path, method) for path, methods in app.routes.items() for method in methods)
    grouped = Counter(route for routes in template.group_routes().values() for route in routes)
    assert grouped == full  # nothing missing, nothing extra, nothing in two groups
    paths = template.repointed_paths()
    for path, methods in app.routes.items():
        for method in methods:
            uri = paths[path][method.lower()]["x-amazon-apigateway-integration"]["uri"]
            assert any(f"${{{g.logical_id}.Arn}}" in uri["Fn::Sub"] for g in ROUTE_GROUPS)


def test_no_route_group_serves_the_local_mail_catcher_page():
    """``/app/admin/mail`` (the mail ``make run`` caught) is registered on the local runner's
    app only: no deployed function has it, nor the whole app the template is made from."""
    from app import app
    from infrastructure.mail_catcher import PAGE

    served = {path for routes in template.group_routes().values() for path, _ in routes}
    assert "/app/admin/users" in served and PAGE not in served
    assert PAGE not in app.routes


def _statements(logical_id: str) -> list[dict]:
    role = template.merge_template()["Resources"][f"{logical_id}Role"]
    return role["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]


def _allows(logical_id: str, action: str, key: str) -> bool:
    """Whether the function's role allows ``action`` on the bucket's object ``key`` (the
    resource's wildcard matched as IAM does)."""
    from fnmatch import fnmatchcase

    bucket = template.sub(f"arn:${{AWS::Partition}}:s3:::{template.BUCKET}/")["Fn::Sub"]
    return any(
        action in s["Action"]
        and isinstance(s["Resource"], dict)
        and s["Resource"].get("Fn::Sub", "").startswith(bucket)
        and fnmatchcase(key, s["Resource"]["Fn::Sub"][len(bucket) :])
        for s in _statements(logical_id)
    )


def _tables(logical_id: str) -> set[str]:
    arns = [
        arn["Fn::Sub"]
        for s in _statements(logical_id)
        if any(a.startswith("dynamodb:") for a in s["Action"])
        for arn in s["Resource"]
        if "Fn::Sub" in arn
    ]
    return {arn.rsplit("${AWS::StackName}-", 1)[1] for arn in arns}


def test_the_provider_mirror_is_its_own_function():
    """The mirror calls the upstream and streams large archives: its routes, and only they,
    go to MirrorFunction, with its own tables, prefixes, timeout and /tmp; the providers
    API keeps none of it."""
    from chalicelib.providers.keys import binary_key
    from chalicelib.providers.mirror import service as mirror
    from chalicelib.providers.mirror.routes import BASE
    from chalicelib.providers.mirror.store import archive_key

    routes = template.group_routes()
    assert routes["MirrorFunction"] and all(p.startswith(BASE) for p, _ in routes["MirrorFunction"])
    others = [r for gid, rs in routes.items() if gid != "MirrorFunction" for r in rs]
    assert not [r for r in others if r[0].startswith(BASE)]

    assert "provider-mirror" in _tables("MirrorFunction")
    assert "provider-mirror" not in _tables("ProvidersFunction")
    assert _tables("MirrorFunction") == {
        "rate-limits", "settings", "tokens", "users", "teams", "organizations",
        "registry-providers", "provider-mirror",
    }  # fmt: skip
    cached = archive_key("registry.terraform.io", "hashicorp", "null", "3.2.0", "p.zip")
    private = binary_key("prov-1", "1.0.0", "linux", "amd64", "p.zip")
    assert _allows("MirrorFunction", "s3:PutObject", cached)
    assert _allows("MirrorFunction", "s3:GetObject", cached)  # presigned downloads
    assert _allows("MirrorFunction", "s3:GetObject", private)  # private archives' h1:
    assert not _allows("MirrorFunction", "s3:PutObject", private)
    assert not _allows("MirrorFunction", "s3:GetObject", "v1/archives/m/v.tar.gz")
    assert not _allows("ProvidersFunction", "s3:PutObject", cached)

    function = template.merge_template()["Resources"]["MirrorFunction"]["Properties"]
    assert function["Handler"] == "chalicelib.entry.api.providers.mirror.app"
    assert function["Timeout"] > 29  # a fetch outlasting API Gateway still fills the cache
    # /tmp holds the archives fetched at once, each at most the cap (by default).
    cap = mirror.get_settings().mirror_max_archive_bytes
    assert function["EphemeralStorage"]["Size"] * 2**20 >= mirror.FETCH_THREADS * cap
    # Its concurrency can be capped (a stack parameter; 0, the default, is no cap).
    merged = template.merge_template()
    assert merged["Parameters"]["MirrorConcurrency"]["Default"] == 0
    assert function["ReservedConcurrentExecutions"] == {
        "Fn::If": [
            "HasMirrorConcurrency",
            {"Ref": "MirrorConcurrency"},
            {"Ref": "AWS::NoValue"},
        ]
    }
    assert merged["Conditions"]["HasMirrorConcurrency"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "MirrorConcurrency"}, "0"]}]
    }


def test_each_function_may_touch_the_objects_its_code_keeps():
    """Modules' objects live under v1/, providers' under providers/: the roles that presign,
    read or delete providers' files are granted that prefix (not only v1/)."""
    from chalicelib.modules.keys import UPLOAD_PREFIX
    from chalicelib.providers.keys import binary_key, provenance_key, shasums_key

    module = UPLOAD_PREFIX + "m/v/x.tar.gz"
    archive = binary_key("prov-1", "1.0.0", "linux", "amd64", "p.zip")
    for logical_id, action, key in [
        ("ProvidersFunction", "s3:PutObject", archive),  # presigned uploads
        ("ProvidersFunction", "s3:GetObject", shasums_key("prov-1", "1.0.0")),  # retry
        ("ProvidersFunction", "s3:DeleteObject", archive),
        ("ProtocolFunction", "s3:GetObject", archive),  # providers.v1 download links
        ("ProtocolFunction", "s3:GetObject", module),
        ("Ingest", "s3:GetObject", archive),  # the checks after upload
        ("Ingest", "s3:PutObject", module),
        ("APIHandler", "s3:DeleteObject", archive),  # deleting an organization
        ("WebFunction", "s3:GetObject", archive),  # a platform's retry from its page
        ("RegistryFunction", "s3:PutObject", module),
        # A provider version's provenance: written when it verifies, read, deleted with it.
        ("Ingest", "s3:PutObject", provenance_key("prov-1", "1.0.0")),
        ("ProvidersFunction", "s3:GetObject", provenance_key("prov-1", "1.0.0")),
        ("ProvidersFunction", "s3:DeleteObject", provenance_key("prov-1", "1.0.0")),
        ("APIHandler", "s3:DeleteObject", provenance_key("prov-1", "1.0.0")),
    ]:
        assert _allows(logical_id, action, key), (logical_id, action, key)
    # Only the Transfers function writes providers' files: a bundle's import (its jobs run
    # there: chalicelib.bundles.jobs); the Ingest function only reads them, and nothing else
    # of the API may write them.
    assert _allows("Transfers", "s3:PutObject", archive)
    assert not _allows("Ingest", "s3:PutObject", archive)
    assert not _allows("ProtocolFunction", "s3:PutObject", archive)
    assert not _allows("ProvidersFunction", "s3:GetObject", module)
    statements = _statements("ProvidersFunction")
    assert any("sqs:SendMessage" in s["Action"] for s in statements)  # a retry queues events


def test_every_event_handler_is_repointed_at_its_own_entry_module():
    """Chalice makes one function per event handler in app.py (SQS, schedules); each must be
    re-pointed at a lean entry module instead of app.py, which imports every route group."""
    import importlib

    from app import app

    generated = {template.camel(source.name.replace("_", "-")) for source in app.event_sources}
    assert generated == {f.logical_id for f in EVENT_FUNCTIONS}
    merged = template.merge_template()["Resources"]
    for function in EVENT_FUNCTIONS:
        assert merged[function.logical_id]["Properties"]["Handler"] == function.handler
        module, attribute = function.handler.rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), attribute))


# What an entry module must not load when it is imported (issue #16: each function's cold
# import within 1.15x the bare libraries'): each is imported where it is first used.
HEAVY = {
    # Request models: their routes name them by path (core.openapi.Body), so pydantic loads
    # with the first request that sends a body.
    "pydantic.main": "pydantic models (about 40 ms)",
    "chalicelib.core.api.attributes": "the request models' base (pydantic)",
    "cryptography": "AES-GCM, loaded by the first secret sealed or opened (core.secrets)",
    "tarfile": "packing a fetched git tree (vcs.git)",
    "dulwich": "git fetches",
    "smtplib": "sending mail (admin.mail)",
    "markdown_it": "rendering a README (web.markdown)",
    "nh3": "sanitizing a README (web.markdown)",
    "chalicelib.core.api.openapi_build": "building the OpenAPI document (package time only)",
    "chalicelib.modules.ingest.hcl": "the HCL parser (ingest only)",
    "chalicelib.modules.ingest.archive": "reading module archives (ingest only)",
    "cyclonedx": "building an SBOM (the function that attests versions only)",
}
# pyOpenSSL is a test-only package here (pysaml2's, the tests' SAML identity provider): the
# Lambda package has none, and botocore loads it (with cryptography) whenever it can. Hidden
# as it is in Lambda.
HIDE_TEST_ONLY = "sys.modules['OpenSSL'] = None"


# A function allowed one of them anyway (logical id -> modules), with the reason in a comment;
# none is. An exemption no longer needed fails the test too, so that this list only shrinks.
STILL_LOADS: dict[str, set[str]] = {}


def loaded_by(module: str, watched: list[str], hide: str = HIDE_TEST_ONLY) -> list[str]:
    """Which of ``watched`` importing ``module`` loads, in a fresh interpreter (after
    ``hide``, a statement run first)."""
    code = (
        f"import sys, json; {hide}; import {module}; "
        f"print(json.dumps([m for m in {watched!r} if m in sys.modules]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout)


@pytest.mark.parametrize("function", ALL_FUNCTIONS, ids=lambda f: f.logical_id)
def test_entry_modules_leave_heavy_modules_to_first_use(function):
    """A regression here costs every cold start of the function: import the module where it
    is first used (with a comment saying why), or see STILL_LOADS."""
    loaded = set(loaded_by(function.entry_module, sorted(HEAVY)))
    exempt = STILL_LOADS.get(function.logical_id, set())
    assert not loaded - exempt, {m: HEAVY[m] for m in loaded - exempt}
    assert exempt <= loaded, f"{function.logical_id} no longer loads {exempt - loaded}: drop it"


# What the web UI's two functions leave to the pages that use them (each function within
# 1.15x: both sit close to it): the SCIM service (the SCIM settings page), the VCS room and its
# git client (the new-module page's connections), pydantic itself (the VCS publish form).
WEB_FIRST_USE = (
    "chalicelib.scim.service",
    "chalicelib.vcs.service",
    "chalicelib.vcs.git",
    "pydantic",
)


@pytest.mark.parametrize(
    ("entry", "also"),
    [
        # The provider pages' services and gathering load with the first provider page; the
        # module pages' gathering (web.pages), the modules' services and the campaigns (whose
        # cursor bound the campaigns page declares from downloads.bounds) with the first
        # module page.
        (
            "chalicelib.entry.api.web",
            (
                "chalicelib.providers.service",
                "chalicelib.web.providers.pages",
                "chalicelib.web.pages",
                "chalicelib.modules.service",
                "chalicelib.modules.store",
                "chalicelib.modules.downloads.campaign",
            ),
        ),
        # The module pages' gathering (web.pages): its status labels are web.labels'; the
        # composer and the no-code service: the pages that create or delete modules.
        (
            "chalicelib.entry.api.webadmin",
            (
                "chalicelib.web.pages",
                "chalicelib.modules.composed",
                "chalicelib.modules.nocode.service",
            ),
        ),
    ],
)
def test_the_web_functions_leave_page_services_to_first_use(entry, also):
    assert loaded_by(entry, list(WEB_FIRST_USE + also)) == []


@pytest.mark.parametrize("group", ROUTE_GROUPS, ids=lambda g: g.logical_id)
def test_entry_modules_import_only_their_own_group(group):
    """A group's Lambda never loads another group's routes, nor the ingest parser."""
    route_modules = {
        g.logical_id: sorted({module for _, _, module in template.entry_routes(g.entry_module)})
        for g in ROUTE_GROUPS
    }
    foreign = sorted(
        {m for gid, mods in route_modules.items() if gid != group.logical_id for m in mods}
        - set(route_modules[group.logical_id])
    )
    foreign += ["chalicelib.modules.ingest.hcl", "chalicelib.modules.ingest.archive", "app"]
    assert loaded_by(group.entry_module, foreign, hide="pass") == []


def test_the_slimmed_zip_keeps_every_service_the_code_calls(tmp_path):
    """infrastructure/slim.py drops botocore's models of unused services and what no function
    loads; the services the code names in ``client("...")`` must all be kept, and nothing else
    is dropped."""
    import zipfile

    from infrastructure import slim

    assert slim.called_services() <= set(slim.SERVICES)
    assert {"s3", "sqs", "kms"} <= slim.called_services()  # the scan itself finds them

    archive = tmp_path / "deployment.zip"
    members = [
        "app.py",
        "chalicelib/core/data/aws.py",
        "chalicelib/web/templates/base.html",
        "botocore/data/endpoints.json",
        "botocore/data/dynamodb/2012-08-10/service-2.json.gz",
        "botocore/data/s3/2006-03-01/service-2.json.gz",
        "botocore/data/ec2/2016-11-15/service-2.json.gz",
        "botocore/data/sagemaker/2017-07-24/paginators-1.json",
        "botocore/data/s3/2006-03-01/examples-1.json",
        "botocore/cacert.pem",
        "boto3/data/ec2/2016-11-15/resources-1.json",
        "boto3/data/s3/2006-03-01/resources-1.json",
        "dulwich/client.py",
        "dulwich/porcelain/__init__.py",
        "dulwich/cli.py",
        "pydantic/main.py",
        "pydantic/v1/main.py",
        "cffi/api.py",
        "lxml/etree.pyx",
        "lxml/etree.h",
        "pydantic_core/core_schema.pyi",
        "botocore-1.43.11.dist-info/RECORD",
        "botocore-1.43.11.dist-info/licenses/LICENSE.txt",
        "cryptography-50.0.2.dist-info/sboms/cryptography.cdx.json",
        "cyclonedx/schema/_res/__init__.py",
        "cyclonedx/schema/_res/bom-1.6.SNAPSHOT.schema.json",
    ]
    # A bytecode cache of the project folder, which Chalice copies along: replaced.
    stale = "chalicelib/core/data/__pycache__/aws.cpython-39.pyc"
    metadata = "pydantic-2.14.3.dist-info/METADATA"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in [*members, stale]:
            zipped.writestr(name, "x" * 100)
        zipped.writestr(metadata, "Name: pydantic\nVersion: 2.14.3\n\n# Pydantic\n" + "y" * 100)
    slim.slim(archive)
    with zipfile.ZipFile(archive) as zipped:
        left = set(zipped.namelist())
        pycs = {name: zipped.read(name) for name in left if name.endswith(".pyc")}
        assert zipped.read(metadata) == b"Name: pydantic\nVersion: 2.14.3\n"
    kept = {
        "chalicelib/web/templates/base.html",
        "botocore/data/endpoints.json",
        "botocore/data/dynamodb/2012-08-10/service-2.json.gz",
        "botocore/data/s3/2006-03-01/service-2.json.gz",
        "boto3/data/s3/2006-03-01/resources-1.json",
        "dulwich/client.py",
        "pydantic/main.py",
        "botocore-1.43.11.dist-info/licenses/LICENSE.txt",
        "cyclonedx/schema/_res/__init__.py",
        metadata,
    }
    assert left - set(pycs) == kept
    # Our code (only) is shipped as bytecode alone, beside where its source was:
    # unchecked-hash .pyc files (PEP 552 flags = 1), which Python loads without a source.
    assert set(pycs) == {"app.pyc", "chalicelib/core/data/aws.pyc"}
    assert all(int.from_bytes(pyc[4:8], "little") == 1 for pyc in pycs.values())


def test_packaging_stops_past_the_zips_budget(tmp_path):
    """Issue #40: the zip every function runs from is at most 15 MB. ``make package`` (which
    ``make test`` runs before the suite) stops past it; the suite does not build the zip a
    second time."""
    from infrastructure import slim

    archive = tmp_path / "deployment.zip"
    archive.write_bytes(b"x" * 2_000)
    slim.within_budget(archive, budget=2_000)
    with pytest.raises(SystemExit, match="past its budget of"):
        slim.within_budget(archive, budget=1_999)
    assert slim.BUDGET_BYTES == 15_000_000


def test_the_protocol_function_keeps_the_module_cache_and_only_it():
    """The module cache runs in the protocol's function: it puts archives by digest under
    v1/cache/ and writes its own table, never a private module's objects or items."""
    from chalicelib.modules.cache.store import archive_key

    cached = archive_key("0" * 64)
    assert _allows("ProtocolFunction", "s3:PutObject", cached)
    assert _allows("ProtocolFunction", "s3:GetObject", cached)
    assert not _allows("ProtocolFunction", "s3:PutObject", "v1/archives/m/v.tar.gz")
    assert not _allows("ProtocolFunction", "s3:PutObject", "v1/object/m/1.0.0/v.tar.gz")
    tables = _tables("ProtocolFunction")
    assert {"module-cache", "module-cache-settings"} <= tables
    assert "module-cache" not in _tables("RegistryFunction")
