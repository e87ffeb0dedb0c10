"""Schemathesis against the real local stack: every operation of the served OpenAPI document,
fuzzed, answers no unexpected 5xx and conforms to the document.

The stack is a fresh one (fuzzing changes site-admin settings), with short SMTP/SMS
timeouts, and VCS hosts and the SMS provider on a closed port, so calls to outside hosts
fail fast. Data is seeded through the document's own operations, their responses checked
too (an organization, a team, a token, a published module, a VCS connection and module, a
workspace, a tag). Each operation then gets the first boundary cases of schemathesis's
coverage phase (``COVERAGE``: empty strings, smallest numbers, each parameter alone...) and
``EXAMPLES`` generated cases (positive and negative modes), with generated path parameters
(mostly 404s) and with the seeded ones (the handlers' real work). What a destructive
operation removed or renamed is seeded again before the next one.

Checks: schemathesis's ``not_a_server_error`` (on operations whose document declares a 5xx,
an outside host failing, only those statuses pass, and never the wrapper's "unexpected
error"), ``status_code_conformance``, ``content_type_conformance`` and
``response_schema_conformance``. Bounded: deterministic (``derandomize``), no shrinking, and
``BUDGET`` seconds for the generated cases, after which each remaining operation gets one.
The default (1 generated case) gives every operation its boundary cases and one generated
case, the same cases on any machine (the budget only bounds longer runs): about 1,600 requests
in 25 s on a 2-core machine, where 2 cases took 44 s for 220 more requests (hypothesis's
generation, not the stack, is most of a generated case's cost), with the same 309 operations
tested and the same 189 answering a success. ``OPENAPI_FUZZ_EXAMPLES=4
OPENAPI_FUZZ_SECONDS=120`` is the longer run (about 2,200 requests and 500 seeding calls in
100 s on a loaded 2-core machine).
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup, ServerError
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from infrastructure import spawn
from tests.conftest import doc, tar_gz

pytestmark = pytest.mark.e2e

ADMIN_TOKEN = "openapi-fuzz-admin-token"
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
EXAMPLES = int(os.environ.get("OPENAPI_FUZZ_EXAMPLES", "1"))
# The first boundary cases of schemathesis's coverage phase (empty strings, smallest numbers,
# each optional parameter alone...) per operation and mode.
COVERAGE = {GenerationMode.POSITIVE: 2, GenerationMode.NEGATIVE: 1}
BUDGET = float(os.environ.get("OPENAPI_FUZZ_SECONDS", "40"))
CLOSED_PORT = "http://127.0.0.1:9"  # discard: nothing listens there
UNEXPECTED = "an unexpected error occurred"  # the route wrapper's 500


# ----- the stack --------------------------------------------------------------------------------


@dataclass
class Running:
    spawned: spawn.Spawned
    output: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.spawned.url


@pytest.fixture(scope="module")
def fuzzed_stack() -> Iterator[Running]:
    spawned = spawn.start(
        ADMIN_TOKEN,
        REGISTRY_RATE_LIMITING="off",
        REGISTRY_SMTP_TIMEOUT="2",
        REGISTRY_SMS_TIMEOUT="2",
        REGISTRY_SMS_API_URL=CLOSED_PORT,
    )
    # spawn reads the server's output while it runs (a full pipe would stall it).
    running = Running(spawned, spawned.later_output)
    yield running
    spawned.process.send_signal(signal.SIGINT)
    try:
        spawned.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        spawned.process.kill()
        raise
    finally:
        if spawned.reader is not None:
            spawned.reader.join(timeout=5)
    assert spawned.process.returncode == 0, "".join(running.output)[-3000:]


# ----- seeded data ------------------------------------------------------------------------------

V2 = "/api/v2"
ORG = V2 + "/organizations/{organization_name}"
MODULE = ORG + "/registry-modules/{registry_name}/{namespace}/{name}/{provider}"
ACME = {"organization_name": "acme"}
VPC = {**ACME, "registry_name": "private", "namespace": "acme", "name": "vpc", "provider": "aws"}
NET = {**VPC, "name": "net"}


class Seed:
    """Known resources, created (again) when missing, through the document's own operations:
    every request here is a schemathesis case whose response is checked too (so the success
    paths of the creates are covered). ``values(path, names)`` gives an operation's path
    parameters their seeded values."""

    def __init__(self, schema: Any, session: requests.Session) -> None:
        self.schema = schema
        self.session = session
        self.ids: dict[str, str] = {}

    def call(
        self,
        method: str,
        path: str,
        params: dict[str, str] | None = None,
        body: Any = None,
        query: dict[str, str] | None = None,
    ) -> Any:
        operation = self.schema[path][method]
        case = operation.Case(
            path_parameters=params or {},
            query=query or {},
            **({"body": body, "media_type": "application/vnd.api+json"} if body else {}),
        )
        return case.call_and_validate(
            session=self.session, headers=AUTH, checks=checks_for(operation)
        )

    def created(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        reply = self.call("POST", *args, **kwargs)
        assert reply.status_code == 201, (args, reply.status_code, reply.text)
        return reply.json()["data"]

    def found(self, path: str, params: dict[str, str]) -> dict[str, Any] | None:
        reply = self.call("GET", path, params)
        return reply.json()["data"] if reply.status_code == 200 else None

    def refresh(self) -> None:
        self.call(  # fuzzing may have switched the rate limiter on
            "PATCH",
            V2 + "/admin/general-settings",
            body=doc("general-settings", **{"api-rate-limiting-enabled": False}),
        )
        self.ids["user_id"] = self.found(V2 + "/account/details", {})["id"]
        if not self.found(ORG, ACME):
            self.created(
                V2 + "/organizations", body=doc("organizations", name="acme", email="o@a.io")
            )
        teams = self.call("GET", ORG + "/teams", ACME, query={"filter[names]": "ci"}).json()["data"]
        team = teams[0] if teams else None
        if team is None:
            access = {"organization-access": {"manage-modules": True}}
            team = self.created(ORG + "/teams", ACME, doc("teams", name="ci", **access))
        self.ids["team_id"] = team["id"]
        token = {"token_id": self.ids.get("token_id", "none")}
        if not self.found(V2 + "/authentication-tokens/{token_id}", token):
            user = {"user_id": self.ids["user_id"]}
            body = doc("authentication-tokens", description="fuzz")
            token = self.created(V2 + "/users/{user_id}/authentication-tokens", user, body)
            self.ids["token_id"] = token["id"]
        self._ensure_module()
        self._ensure_client()
        vcs = self.found(MODULE, NET)
        if vcs is None:
            repo = {
                "identifier": "acme/terraform-aws-net",
                "oauth-token-id": self.ids["oauth_token_id"],
                "display-identifier": "acme/terraform-aws-net",
            }
            body = doc("registry-modules", **{"vcs-repo": repo})
            vcs = self.created(ORG + "/registry-modules/vcs", ACME, body)
        self.ids["vcs_module"] = vcs["id"]
        self.ids["webhook_id"] = vcs["attributes"]["vcs-repo"]["webhook-url"].rsplit("/", 1)[-1]
        workspace = self.found(
            ORG + "/workspaces/{workspace_name}", {**ACME, "workspace_name": "ws"}
        )
        if workspace is None:
            body = doc("workspaces", name="ws", **{"tag-names": ["fuzzed"]})
            workspace = self.created(ORG + "/workspaces", ACME, body)
        self.ids["workspace_id"] = workspace["id"]
        tags_path = V2 + "/workspaces/{workspace_id}/relationships/tags"
        on_workspace = {"workspace_id": workspace["id"]}
        if not self.found(tags_path, on_workspace):
            body = {"data": [{"type": "tags", "attributes": {"name": "fuzzed"}}]}
            assert self.call("POST", tags_path, on_workspace, body).status_code == 204
        self.ids["tag_id"] = self.found(tags_path, on_workspace)[0]["id"]

    def _ensure_client(self) -> None:
        """A VCS connection (to a closed port) with its OAuth token."""
        client_id = {"client_id": self.ids.get("client_id", "none")}
        client = self.found(V2 + "/oauth-clients/{client_id}", client_id)
        tokens = client["relationships"]["oauth-tokens"]["data"] if client else []
        if not tokens:  # gone, or its token was deleted
            if client:
                self.call("DELETE", V2 + "/oauth-clients/{client_id}", client_id)
            attributes = {
                "service-provider": "gitlab_hosted",
                "http-url": CLOSED_PORT,
                "api-url": CLOSED_PORT + "/api/v4",
                "oauth-token-string": "secret-token",
            }
            body = doc("oauth-clients", name="git", **attributes)
            client = self.created(ORG + "/oauth-clients", ACME, body)
            tokens = client["relationships"]["oauth-tokens"]["data"]
        self.ids["client_id"] = client["id"]
        self.ids["oauth_token_id"] = tokens[0]["id"]

    def _ensure_module(self) -> None:
        """acme/vpc/aws with version 1.0.0 ingested (``ok``), so the protocol serves it."""
        module = self.found(MODULE, VPC)
        if module is None:
            body = doc("registry-modules", name="vpc", provider="aws")
            module = self.created(ORG + "/registry-modules", ACME, body)
        self.ids["module_id"] = module["id"]
        wanted = {"module_version": "1.0.0"}
        if self.call("GET", MODULE + "/version", VPC, query=wanted).status_code == 200:
            return
        body = doc("registry-module-versions", version="1.0.0")
        version = self.created(MODULE + "/versions", VPC, body)
        archive = tar_gz({"main.tf": 'variable "name" {\n  type = string\n}\n'})
        put = requests.put(
            version["links"]["upload"],
            data=archive,
            headers={"Content-Type": "application/octet-stream"},
        )
        assert put.status_code == 200, put.text
        deadline = time.monotonic() + 30
        status = None
        while time.monotonic() < deadline and status != "ok":
            time.sleep(0.2)
            reply = self.call("GET", MODULE + "/version", VPC, query=wanted)
            status = reply.json()["data"]["attributes"]["status"]
        assert status == "ok", f"the seeded version was not ingested: {status}"

    def values(self, path: str, names: list[str]) -> dict[str, str]:
        """Seeded values of these path parameters of ``path`` (those known)."""
        fixed = {
            **VPC,
            "version": "1.0.0",
            "workspace_name": "ws",
            **{
                key: self.ids[key]
                for key in ("team_id", "user_id", "token_id", "client_id", "workspace_id")
            },
            "tag_id": self.ids["tag_id"],
            "webhook_id": self.ids["webhook_id"],
            # /registry-modules/{module_ref}: a module id; .../{module_ref}/{name}/...: an org
            "module_ref": "acme" if "{module_ref}/{name}" in path else self.ids["module_id"],
        }
        if path.startswith(V2 + "/oauth-tokens/"):
            fixed["token_id"] = self.ids["oauth_token_id"]
        if "/commits" in path or path.startswith(V2 + "/registry-modules/{module_ref}/actions"):
            fixed["name"] = "net"  # the VCS module
            if "{module_ref}/{name}" not in path:
                fixed["module_ref"] = self.ids["vcs_module"]
        return {name: fixed[name] for name in names if name in fixed}


# ----- the checks -------------------------------------------------------------------------------


def documented_server_error(ctx: Any, response: Any, case: Any) -> None:
    """For operations that declare 5xx (an outside host failing): a 5xx must be one of
    those, and never the route wrapper's unexpected error."""
    status = response.status_code
    if status < 500:
        return None
    declared = case.operation.definition.raw.get("responses", {})
    if str(status) not in declared or UNEXPECTED in response.text:
        raise ServerError(operation=case.operation.label, status_code=status)
    return None


# What a failed case raises (schemathesis's FailureGroup is a BaseExceptionGroup); every
# operation's first failure is collected, and the test fails with all of them.
FAILED = (Exception, FailureGroup)
CONFORMANCE = [status_code_conformance, content_type_conformance, response_schema_conformance]


def checks_for(operation: Any) -> list[Any]:
    statuses = operation.definition.raw.get("responses", {})
    declares_5xx = any(str(status).startswith("5") for status in statuses)
    return [documented_server_error if declares_5xx else not_a_server_error, *CONFORMANCE]


# ----- the test ---------------------------------------------------------------------------------


def disturbs(operation: Any) -> bool:
    """Whether a success of ``operation`` may have removed or renamed seeded data (or switched
    the rate limiter on): then it is seeded again."""
    path = operation.path
    if path.startswith(V2 + "/admin/"):
        return path.endswith("/general-settings")
    return operation.method.upper() in ("PATCH", "DELETE") or "delete" in path


def _strategy(operation: Any, seeded: dict[str, str]) -> Any:
    options = []
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        options.append(operation.as_strategy(mode))
        if seeded:
            options.append(operation.as_strategy(mode, path_parameters=seeded))
    return st.one_of(options)


def coverage_cases(schema: Any, operation: Any, seeded: dict[str, str]) -> list[Any]:
    """The first ``COVERAGE`` boundary cases of the operation (its own method only), each
    also with the seeded path parameters."""
    config = schema.config.generation_for(operation=operation, phase="coverage")
    cases = []
    for mode, count in COVERAGE.items():
        generated = schema.iter_coverage_cases(
            operation, generation_modes=[mode], generation_config=config
        )
        same_method = (c for c in generated if c.method.upper() == operation.method.upper())
        for case in itertools.islice(same_method, count):
            cases.append(case)
            if seeded:
                cases.append(
                    operation.Case(
                        path_parameters={**case.path_parameters, **seeded},
                        query=case.query,
                        headers=case.headers,
                        body=case.body,
                        media_type=case.media_type,
                    )
                )
    return cases


def fuzz_operation(
    schema: Any,
    operation: Any,
    seeded: dict[str, str],
    examples: int,
    session: requests.Session,
    answered: Counter[tuple[str, int]],
) -> str | None:
    """The boundary cases, then up to ``examples`` generated cases of one operation; the
    first failure found, if any."""
    checks = checks_for(operation)
    for case in coverage_cases(schema, operation, seeded):
        try:
            response = case.call_and_validate(session=session, headers=AUTH, checks=checks)
        except FAILED as exc:
            return f"{operation.label} (boundary case):\n{exc}"
        answered[(operation.label, response.status_code)] += 1

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(case=_strategy(operation, seeded))
    def fuzz(case: Any) -> None:
        response = case.call_and_validate(session=session, headers=AUTH, checks=checks)
        answered[(operation.label, response.status_code)] += 1

    try:
        fuzz()
    except FAILED as exc:
        return f"{operation.label}:\n{exc}"
    return None


def test_every_operation_conforms_to_the_served_document(fuzzed_stack: Running):
    started = time.monotonic()
    schema = schemathesis.openapi.from_url(f"{fuzzed_stack.url}/api/v2/openapi.json")
    schema.config.update(base_url=fuzzed_stack.url)
    schema.config.generation.update(with_security_parameters=False, database="none")
    session = requests.Session()
    seed = Seed(schema, session)
    seed.refresh()
    failures: list[str] = []
    answered: Counter[tuple[str, int]] = Counter()
    tested: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        names = [p.name for p in operation.path_parameters]
        seeded = seed.values(operation.path, names)
        # Past the budget, each remaining operation still gets its boundary cases and one more.
        examples = EXAMPLES if time.monotonic() < started + BUDGET else 1
        failure = fuzz_operation(schema, operation, seeded, examples, session, answered)
        if failure:
            failures.append(failure)
        tested.append(operation.label)
        changed = any(label == operation.label and status < 300 for label, status in answered)
        if changed and disturbs(operation):
            seed.refresh()
    elapsed = time.monotonic() - started
    server_log = "".join(fuzzed_stack.output)
    succeeded = {label for label, status in answered if status < 400}
    print(
        f"\n{len(tested)} operations, {sum(answered.values())} requests in {elapsed:.0f}s; "
        f"{len(succeeded)} operations answered a success"
    )
    document = requests.get(f"{fuzzed_stack.url}/api/v2/openapi.json").json()
    every = {f"{m.upper()} {path}" for path, methods in document["paths"].items() for m in methods}
    # schemathesis leaves out the operation that serves the document it loaded (checked by
    # tests/meta/test_openapi.py)
    assert every - set(tested) == {"GET /api/v2/openapi.json"}
    assert not failures, "\n\n".join(failures)[:20000] + "\n\nserver log:\n" + server_log[-5000:]
    assert "Traceback" not in server_log, server_log[-5000:]
