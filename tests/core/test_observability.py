"""What an operator reads: one JSON line per request, ingest and publishing outcomes,
metrics (CloudWatch Embedded Metric Format, in the same lines) and the template's alarms; and
never a token, secret or presigned link in any of it."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from chalicelib.core import observe
from tests.conftest import Api, make_org, make_team
from tests.modules.helpers import MAIN_TF, create_module, create_version, upload_and_ingest
from tests.modules.publishing import connect, drain, publish
from tests.support.vcs_git_server import TOKEN as GIT_TOKEN
from tests.support.vcs_git_server import GitServer, serve

V1_ROUTE = "/api/registry/v1/modules/{namespace}/{name}/{provider}"


def as_json(record: logging.LogRecord) -> dict:
    line = observe.JsonFormatter().format(record)
    assert "\n" not in line  # one CloudWatch event per record
    return json.loads(line)


def lines(caplog: pytest.LogCaptureFixture, logger: str) -> list[dict]:
    return [as_json(r) for r in caplog.records if r.name == logger]


def metrics_of(line: dict) -> dict[str, dict]:
    """EMF: each declared metric's value and its dimension values, checked as CloudWatch
    reads them (every name the directive mentions is a member of the same object)."""
    found = {}
    for directive in line["_aws"]["CloudWatchMetrics"]:
        assert directive["Namespace"] == observe.NAMESPACE
        for metric in directive["Metrics"]:
            (dimensions,) = directive["Dimensions"]
            found[metric["Name"]] = {
                "value": line[metric["Name"]],
                **{name: line[name] for name in dimensions},
            }
    return found


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO)
    return caplog


def test_one_line_per_request_with_route_principal_organization_and_dynamodb_calls(api, logs):
    from bench.reads import counting_reads

    make_org(api)
    logs.clear()
    with counting_reads() as reads:
        assert api.get("/api/v2/organizations/acme").status == 200
    (line,) = lines(logs, observe.REQUEST_LOGGER)
    assert line["route"] == "/api/v2/organizations/{organization_name}"  # not the raw path
    assert (line["method"], line["status"], line["organization"]) == ("GET", 200, "acme")
    assert line["principal_kind"] == "user" and line["principal_id"].startswith("user-")
    assert line["request_id"] and line["duration_ms"] > 0  # Lambda's id in the test client
    # Every DynamoDB call of the request, counted at botocore's before-call event.
    assert line["dynamodb_calls"] == reads.total_calls > 0
    assert metrics_of(line) == {
        "Requests": {"value": 1, "Function": "tfe-module-registry", "StatusClass": "2xx"}
    }

    logs.clear()
    assert api.as_(None).get("/api/v2/organizations/acme").status == 401
    (line,) = lines(logs, observe.REQUEST_LOGGER)
    assert "principal_kind" not in line and "principal_id" not in line
    assert metrics_of(line)["Requests"]["StatusClass"] == "4xx"


def test_each_request_has_its_own_id_and_count(api, logs):
    api.get("/api/v2/ping")  # a cold instance's first request also reads the settings
    api.get("/api/v2/ping")
    api.get("/api/v2/ping")
    _, first, second = lines(logs, observe.REQUEST_LOGGER)
    assert first["request_id"] != second["request_id"]
    assert first["dynamodb_calls"] == second["dynamodb_calls"]  # not a running total


def test_downloads_count_in_the_downloads_metric(api, logs):
    make_org(api)
    create_module(api)
    assert upload_and_ingest(create_version(api, "1.0.0"), {"main.tf": MAIN_TF}) == "ok"
    logs.clear()
    v1 = "/api/registry/v1/modules/acme/vpc/aws"
    assert api.get(f"{v1}/1.0.0/download").status == 204
    assert api.get(f"{v1}/9.9.9/download").status == 404
    ok, missing = lines(logs, observe.REQUEST_LOGGER)
    assert (
        ok["route"] == "/api/registry/v1/modules/{namespace}/{name}/{provider}/{version}/download"
    )
    assert ok["organization"] == "acme"
    assert metrics_of(ok)["Downloads"]["value"] == 1
    assert "Downloads" not in metrics_of(missing)


def test_a_500_logs_its_trace_with_the_request_id(api, logs, monkeypatch):
    from chalicelib.core import auth

    def broken(request):
        raise RuntimeError("the table went away")

    monkeypatch.setattr(auth, "request_principal", broken)
    reply = api.get("/api/v2/organizations")
    assert reply.status == 500
    (failure,) = [as_json(r) for r in logs.records if r.exc_info]
    assert "Traceback" in failure["exception"] and "the table went away" in failure["exception"]
    assert failure["exception_name"] == "RuntimeError"
    (line,) = lines(logs, observe.REQUEST_LOGGER)
    assert failure["request_id"] == line["request_id"]
    assert metrics_of(line)["Requests"]["StatusClass"] == "5xx"


def test_the_access_log_switch_silences_request_lines(api, logs, monkeypatch):
    monkeypatch.setenv("REGISTRY_ACCESS_LOG", "0")
    assert api.get("/api/v2/ping").status == 204
    assert lines(logs, observe.REQUEST_LOGGER) == []


def test_ingest_outcomes_say_which_version_what_and_why(api, logs):
    make_org(api)
    create_module(api)
    logs.clear()
    assert upload_and_ingest(create_version(api, "1.0.0"), {"main.tf": MAIN_TF}) == "ok"
    assert upload_and_ingest(create_version(api, "1.1.0"), {"../x.tf": "x"}) == "failed"
    ok, failed = lines(logs, "registry.ingest")
    for line, version in ((ok, "1.0.0"), (failed, "1.1.0")):
        assert line["organization"] == "acme" and line["namespace"] == "acme"
        assert (line["name"], line["provider"], line["version"]) == ("vpc", "aws", version)
    assert ok["outcome"] == "ok" and "reason" not in ok
    assert failed["outcome"] == "failed" and failed["reason"]
    assert metrics_of(ok) == {"Ingest": {"value": 1, "Outcome": "ok"}}
    assert metrics_of(failed) == {"Ingest": {"value": 1, "Outcome": "failed"}}


def test_a_failing_queue_message_logs_its_trace_and_is_retried(api, logs, monkeypatch):
    from chalicelib.entry.ingest import handle_body as handle_sqs_body
    from chalicelib.modules.publishing import worker

    def broken(message):
        raise ConnectionError("DynamoDB unreachable")

    monkeypatch.setattr(worker, "_run", broken)
    with pytest.raises(ConnectionError):  # SQS delivers it again
        handle_sqs_body(json.dumps({"kind": "sync", "module_id": "mod-x"}))
    (record,) = [r for r in logs.records if r.name == "registry.consumer"]
    assert record.exc_info and "sync message failed" in record.getMessage()
    assert "DynamoDB unreachable" in as_json(record)["exception"]


@pytest.fixture
def git_server() -> Iterator[tuple[GitServer, dict[str, str]]]:
    yield from serve()


def test_a_run_with_tokens_links_and_secrets_logs_none_of_them(api: Api, logs, capsys, git_server):
    """Tokens (API, team, VCS), presigned upload and download links, a webhook secret and a
    failed VCS import: no log line holds any of them, whatever the format."""
    server, _ = git_server
    make_org(api)
    _, team_token = make_team(api, "acme", "ci", manage_modules=True)
    ci = api.as_(team_token)
    create_module(ci)
    created = create_version(ci, "1.0.0")
    upload = created.data["links"]["upload"]
    assert "X-Amz-Signature" in upload
    assert upload_and_ingest(created, {"main.tf": MAIN_TF}) == "ok"
    download = ci.get("/api/registry/v1/modules/acme/vpc/aws/1.0.0/download")
    assert "X-Amz-Signature" in download.headers["X-Terraform-Get"]
    bad_token = connect(api, server, token="revoked-token-7c2e")
    assert publish(api, bad_token, "acme/terraform-aws-net").status == 201
    good_token = connect(api, server)
    assert publish(api, good_token, "acme/terraform-aws-dns").status == 201
    drain()
    secret = api.post(
        "/api/v2/registry-modules/acme/dns/aws/actions/regenerate-webhook-secret"
    ).json
    secrets = [
        "admin-token-for-tests",
        team_token,
        GIT_TOKEN,
        "revoked-token-7c2e",
        "X-Amz-Signature",
        upload.split("?", 1)[1],
    ]
    if isinstance(secret, dict):
        secrets += [v for v in _strings(secret) if "secret" in v.lower() or len(v) >= 32]
    workflow = [r for r in logs.records if r.name.startswith("registry")]
    assert any(r.name == "registry.publishing" for r in workflow)
    assert any(r.name == "registry.ingest" for r in workflow)
    text = logs.text + "\n".join(observe.JsonFormatter().format(r) for r in logs.records)
    text += "\n".join(observe.ReadableFormatter().format(r) for r in logs.records)
    captured = capsys.readouterr()
    text += captured.out + captured.err
    leaked = [s for s in secrets if s and s in text]
    assert not leaked


def _strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_scrub_removes_query_strings_tokens_and_credentials():
    text = observe.scrub(
        "GET https://b.s3.amazonaws.com/k?X-Amz-Signature=abc&X-Amz-Credential=AKIA "
        "Authorization: Bearer abcdefghijkl0123 cookie=session=s3cr3t"
    )
    assert "abc&" not in text and "AKIA" not in text and "abcdefghijkl0123" not in text
    assert "s3cr3t" not in text and "https://b.s3.amazonaws.com/k?" in text


def test_in_lambda_every_line_is_json_on_stdout(monkeypatch):
    """configure(): the `registry` loggers write JSON lines themselves (the runtime's text
    handler never sees them: no line twice)."""
    registry = logging.getLogger("registry")
    saved = (registry.handlers[:], registry.propagate, registry.level)
    monkeypatch.setattr(observe, "_configured", False)
    stream = io.StringIO()
    try:
        observe.configure(stream)
        with observe.scope("req-1"):
            logging.getLogger("registry.web").info("terraform login approved by %s", "user-1")
            try:
                raise ValueError("bad https://x.example/a?token=t0k3n")
            except ValueError:
                logging.getLogger("registry").exception("failed")
    finally:
        registry.handlers, registry.propagate = saved[0], saved[1]
        registry.setLevel(saved[2])
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "terraform login approved by user-1"
    assert first["request_id"] == second["request_id"] == "req-1"
    assert first["level"] == "INFO" and second["level"] == "ERROR"
    assert "ValueError" in second["exception"] and "t0k3n" not in second["exception"]


def test_make_run_prints_one_short_readable_line_per_request(api, logs):
    api.get("/api/v2/ping?x=1")
    (record,) = [r for r in logs.records if r.name == observe.REQUEST_LOGGER]
    text = observe.ReadableFormatter().format(record)
    method, path, status, ms, unit, calls, word = text.split()
    assert (method, path, status, unit, word) == ("GET", "/api/v2/ping", "204", "ms", "calls")
    assert float(ms) >= 0 and int(calls) >= 0


@pytest.mark.parametrize(
    "path",
    [
        "/app/invitations/inv-s3cr3t-link",
        "/app/password-reset/user-1.s3cr3t-link",
        "/app/account/confirm-email/user-1/s3cr3t-link",
        "/api/v2/account/confirm-email/user-1/s3cr3t-link",
    ],
)
def test_a_links_secret_never_reaches_the_readable_line(api, logs, path):
    """Invitation, reset and confirmation links carry their secret in the path: ``make run``
    prints the route's template instead."""
    api.get(path)
    (record,) = [r for r in logs.records if r.name == observe.REQUEST_LOGGER]
    text = observe.ReadableFormatter().format(record)
    assert "s3cr3t" not in text and "s3cr3t" not in json.dumps(record.__dict__, default=str)
    assert "{" in text.split()[1], text


# ----- the template's alarms -----------------------------------------------------------------


@pytest.fixture(scope="module")
def template() -> dict:
    from infrastructure.template import merge_template

    return merge_template()


def alarms(template: dict) -> dict[str, dict]:
    return {
        name: resource["Properties"]
        for name, resource in template["Resources"].items()
        if resource.get("Type") == "AWS::CloudWatch::Alarm"
    }


def watched(alarm: dict) -> list[tuple[str, str, dict]]:
    """(namespace, metric, dimensions) of every metric the alarm reads."""
    if "MetricName" in alarm:
        stats = [{"Namespace": alarm["Namespace"], "MetricName": alarm["MetricName"],
                  "Dimensions": alarm["Dimensions"]}]  # fmt: skip
    else:
        stats = [m["MetricStat"]["Metric"] for m in alarm["Metrics"] if "MetricStat" in m]
    return [
        (s["Namespace"], s["MetricName"], {d["Name"]: d["Value"] for d in s["Dimensions"]})
        for s in stats
    ]


def test_every_alarm_notifies_the_optional_topic(template):
    assert template["Parameters"]["AlarmTopicArn"]["Default"] == ""
    condition = template["Conditions"]["HasAlarmTopic"]
    assert condition == {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmTopicArn"}, ""]}]}
    expected = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
    found = alarms(template)
    assert found
    for name, alarm in found.items():
        assert alarm["AlarmActions"] == expected, name
        assert alarm["OKActions"] == expected, name


def test_the_dead_letter_queues_and_the_api_5xx_rate_alarm(template):
    found = alarms(template)
    for queue in ("Ingest", "Scan", "Notify"):
        dlq = found[f"{queue}DeadLetterAlarm"]
        assert watched(dlq) == [
            (
                "AWS/SQS",
                "ApproximateNumberOfMessagesVisible",
                {"QueueName": {"Fn::GetAtt": [f"{queue}DeadLetterQueue", "QueueName"]}},
            )
        ]
        assert (dlq["ComparisonOperator"], dlq["Threshold"]) == ("GreaterThanThreshold", 0)
    api_5xx = found["Api5xxAlarm"]
    api = {"ApiName": {"Fn::Sub": "${AWS::StackName}"}, "Stage": "api"}
    assert watched(api_5xx) == [
        ("AWS/ApiGateway", "5XXError", api),
        ("AWS/ApiGateway", "Count", api),
    ]
    (rate,) = [m for m in api_5xx["Metrics"] if m.get("ReturnData")]
    assert "100 * errors / requests" in rate["Expression"]
    # The metrics' ApiName is the API's name.
    assert template["Resources"]["RestAPI"]["Properties"]["Name"] == api["ApiName"]


def test_each_table_has_a_throttle_alarm_and_each_function_an_errors_alarm(template):
    from infrastructure.groups import ALL_FUNCTIONS

    found = alarms(template)
    tables = [
        n for n, r in template["Resources"].items() if r.get("Type") == "AWS::DynamoDB::Table"
    ]
    assert tables
    for table in tables:
        alarm = found[f"{table}ThrottleAlarm"]
        dimensions = {"TableName": {"Ref": table}}
        assert watched(alarm) == [
            ("AWS/DynamoDB", "ReadThrottleEvents", dimensions),
            ("AWS/DynamoDB", "WriteThrottleEvents", dimensions),
        ]
        (total,) = [m for m in alarm["Metrics"] if m.get("ReturnData")]
        assert total["Expression"] == "reads + writes" and alarm["Threshold"] == 0
    for function in ALL_FUNCTIONS:
        alarm = found[f"{function.logical_id}ErrorsAlarm"]
        assert watched(alarm) == [
            ("AWS/Lambda", "Errors", {"FunctionName": {"Ref": function.logical_id}})
        ]
    # the dead-letter queues of ingest, scans, notifications, transfers and the audit export,
    # and the 5xx alarm
    assert len(found) == 6 + len(tables) + len(ALL_FUNCTIONS)
