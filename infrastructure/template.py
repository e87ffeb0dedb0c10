"""Generate the CloudFormation template merged into ``chalice package --merge-template``.

``python -m infrastructure.template out/merge.json`` writes it. It adds everything Chalice
does not know about: parameters, the DynamoDB tables (from the PynamoDB models), the archive
bucket, the ingest, scan, notifications and transfers queues and their dead-letter queues, the
KMS key, gateway responses, one function and one least-privilege role per route group, the scan
function with the scanner's layer, the Transfers function, and it re-points every route's API
Gateway integration at its group's function.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chalicelib import __version__
from chalicelib.core.data import db
from chalicelib.core.settings import get_settings
from chalicelib.modules.keys import UPLOAD_PREFIX
from chalicelib.providers.keys import UPLOAD_PREFIX as PROVIDERS
from infrastructure import resources  # noqa: F401 - registers every model with db.MODELS
from infrastructure.groups import (
    ALL_FUNCTIONS,
    AUDIT_EXPORT,
    EVENT_FUNCTIONS,
    INGEST,
    NOTIFY_DELIVERY,
    NOTIFY_FANOUT,
    QUEUE_FUNCTIONS,
    READ,
    ROUTE_GROUPS,
    SCAN,
    STREAM_FUNCTIONS,
    TRANSFERS,
    Function,
)

if TYPE_CHECKING:
    from pynamodb.models import Model

TABLE_READ = [
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DescribeTable",
]
TABLE_WRITE = TABLE_READ + [
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
]
# The audit trail's events are added, never deleted (groups.APPEND).
TABLE_APPEND = TABLE_READ + ["dynamodb:PutItem", "dynamodb:UpdateItem"]
BUCKET = "${AWS::StackName}-archives-${AWS::AccountId}"
QUEUE_NAME = "${AWS::StackName}-ingest"
# The scanner's layer (Trivy's binary, gzipped, with its version: trivy/trivy.gz and
# trivy/VERSION), built into out/ beside deployment.zip by infrastructure.scanner_layer
# (`make package`); only the scan function has it.
SCANNER_LAYER = "./scanner-layer.zip"
ABANDONED_UPLOAD_DAYS = 7
# How long a bundle export's multipart upload may wait for its job to resume it.
BUNDLE_UPLOAD_DAYS = 7
# The key that seals stored secrets: the stack's own, or the retained key of an earlier stack
# (parameter ExistingSecretsKeyArn) whose secrets a restore brought back.
CREATE_SECRETS_KEY = "CreateSecretsKey"
SECRETS_KEY_ARN = {
    "Fn::If": [
        CREATE_SECRETS_KEY,
        {"Fn::GetAtt": ["SecretsKey", "Arn"]},
        {"Ref": "ExistingSecretsKeyArn"},
    ]
}
# The key that signs provenance (chalicelib.trust.provenance): the stack's own, or one the
# operator made (parameter SigningKeyArn: how keys rotate; the stack's own is retained, so
# envelopes it signed keep verifying while PreviousSigningKeys lists it).
CREATE_SIGNING_KEY = "CreateSigningKey"
SIGNING_KEY_ARN = {
    "Fn::If": [
        CREATE_SIGNING_KEY,
        {"Fn::GetAtt": ["SigningKey", "Arn"]},
        {"Ref": "SigningKeyArn"},
    ]
}
HAS_PREVIOUS_SIGNING_KEYS = "HasPreviousSigningKeys"
# Every signing key whose public half is served: the current one, then the previous ones.
LISTED_SIGNING_KEYS = {
    "Fn::If": [
        HAS_PREVIOUS_SIGNING_KEYS,
        {
            "Fn::Split": [
                ",",
                {"Fn::Join": [",", [SIGNING_KEY_ARN, {"Ref": "PreviousSigningKeys"}]]},
            ]
        },
        [SIGNING_KEY_ARN],
    ]
}
_KEY_ARN = "arn:[a-z-]+:kms:[a-z0-9-]+:[0-9]{12}:key/[0-9a-f-]+"
# The bucket's CORS rule for the web UI's upload page (chalicelib/web/publishing): PUT from
# the UI's origin only, which is InstanceAddress without any path or trailing slash
# (scheme "//" host). No InstanceAddress, no rule: uploads go by curl, as without JavaScript.
HAS_INSTANCE_ADDRESS = "HasInstanceAddress"
_ADDRESS_PARTS = {"Fn::Split": ["//", {"Ref": "InstanceAddress"}]}
UI_ORIGIN = {
    "Fn::Join": [
        "//",
        [
            {"Fn::Select": [0, _ADDRESS_PARTS]},
            {"Fn::Select": [0, {"Fn::Split": ["/", {"Fn::Select": [1, _ADDRESS_PARTS]}]}]},
        ],
    ]
}
UPLOAD_CORS = {
    "CorsRules": [
        {
            "Id": "web-ui-uploads",
            "AllowedMethods": ["PUT"],
            "AllowedOrigins": [UI_ORIGIN],
            "AllowedHeaders": ["Content-Type"],
            "MaxAge": 3600,
        }
    ]
}


def sub(text: str) -> dict[str, str]:
    return {"Fn::Sub": text}


def camel(short: str) -> str:
    return "".join(part.capitalize() for part in short.split("-"))


# ----- routes -------------------------------------------------------------------------------


_ROUTES_OF_ENTRY = """
import importlib, json, sys
app = importlib.import_module(sys.argv[1]).app
print(json.dumps([[path, method, entry.view_function.__module__]
                  for path, methods in app.routes.items()
                  for method, entry in methods.items()]))
"""


@functools.cache
def entry_routes(entry_module: str) -> tuple[tuple[str, str, str], ...]:
    """(path, method, module of the handler) of an entry module's app.

    Read in a fresh interpreter: a Chalice blueprint registered in a second app in the same
    process loses its methods and its request (it follows the last app it was added to).
    """
    result = subprocess.run(
        [sys.executable, "-c", _ROUTES_OF_ENTRY, entry_module],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    return tuple(tuple(route) for route in json.loads(result.stdout))


def group_routes() -> dict[str, list[tuple[str, str]]]:
    """(path, method) of every route, per route-group function, from the entry modules."""
    return {
        function.logical_id: [
            (path, method) for path, method, _ in entry_routes(function.entry_module)
        ]
        for function in ROUTE_GROUPS
    }


def integration_uri(logical_id: str) -> dict[str, str]:
    return sub(
        "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/"
        f"functions/${{{logical_id}.Arn}}/invocations"
    )


def repointed_paths() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for logical_id, routes in group_routes().items():
        for path, method in routes:
            paths.setdefault(path, {})[method.lower()] = {
                "x-amazon-apigateway-integration": {"uri": integration_uri(logical_id)}
            }
    return paths


# ----- tables -------------------------------------------------------------------------------


def table_short_names() -> dict[str, type]:
    prefix = get_settings().table_prefix
    return {model.Meta.table_name[len(prefix) :]: model for model in db.MODELS}


def _key_schema(keys: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    return sorted(
        ({"AttributeName": k["AttributeName"], "KeyType": k["KeyType"]} for k in keys),
        key=lambda k: k["KeyType"] != "HASH",
    )


def table_resource(short: str, model: type[Model]) -> dict[str, Any]:
    schema = model._get_schema()
    properties: dict[str, Any] = {
        "TableName": sub(f"${{AWS::StackName}}-{short}"),
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": schema["attribute_definitions"],
        "KeySchema": _key_schema(schema["key_schema"]),
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "SSESpecification": {"SSEEnabled": True},
    }
    indexes = [
        {
            "IndexName": index["index_name"],
            "KeySchema": _key_schema(index["key_schema"]),
            "Projection": index["projection"],
        }
        for index in schema.get("global_secondary_indexes", [])
    ]
    if indexes:
        properties["GlobalSecondaryIndexes"] = indexes
    ttl = model._ttl_attribute()
    if ttl is not None:
        properties["TimeToLiveSpecification"] = {"AttributeName": ttl.attr_name, "Enabled": True}
    view = db.stream_view_type(model)
    if view is not None:
        properties["StreamSpecification"] = {"StreamViewType": view}
    return {
        "Type": "AWS::DynamoDB::Table",
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
        "Properties": properties,
    }


# ----- functions and roles ------------------------------------------------------------------


def environment() -> dict[str, Any]:
    return {
        "Variables": {
            "EDITION": {"Ref": "Edition"},
            "REGISTRY_PUBLIC_URL": {"Ref": "InstanceAddress"},
            "REGISTRY_MAX_ARCHIVE_BYTES": {"Ref": "MaxArchiveBytes"},
            "REGISTRY_PROVIDER_MAX_ARCHIVE_BYTES": {"Ref": "MaxProviderArchiveBytes"},
            "REGISTRY_TABLE_PREFIX": sub("${AWS::StackName}-"),
            "REGISTRY_BUCKET": sub(BUCKET),
            "REGISTRY_INGEST_QUEUE": {"Fn::GetAtt": ["IngestQueue", "QueueName"]},
            "REGISTRY_SCAN_QUEUE": {"Fn::GetAtt": ["ScanQueue", "QueueName"]},
            "REGISTRY_NOTIFY_QUEUE": {"Fn::GetAtt": ["NotifyQueue", "QueueName"]},
            "REGISTRY_TRANSFERS_QUEUE": {"Fn::GetAtt": ["TransfersQueue", "QueueName"]},
            "REGISTRY_KMS_KEY": SECRETS_KEY_ARN,
            "REGISTRY_OUTBOUND_ALLOW": {"Ref": "OutboundAllow"},
            "REGISTRY_SIGNING_KEY": SIGNING_KEY_ARN,
            "REGISTRY_PREVIOUS_SIGNING_KEYS": {"Ref": "PreviousSigningKeys"},
        }
    }


# ----- the protocol's function URL (chalicelib.entry.function_url) --------------------------

HAS_PROTOCOL_URL = "HasProtocolFunctionUrl"
URL_PARAMETERS: dict[str, Any] = {
    "ProtocolUrlEnabled": {
        "Type": "String",
        "Default": "true",
        "AllowedValues": ["true", "false"],
        "Description": "Serve the module registry protocol (versions, download) from the "
        "protocol function's URL too, named by discovery: no API Gateway request for them "
        "(but no WAF, API Gateway throttling or custom domain on that URL); false = through "
        "the REST API only",
    },
}
URL_CONDITIONS: dict[str, Any] = {
    HAS_PROTOCOL_URL: {"Fn::Equals": [{"Ref": "ProtocolUrlEnabled"}, "true"]},
}
# The functions whose environment names the protocol's URL: discovery's (never the
# protocol function's own: its URL depends on it).
NAMES_PROTOCOL_URL = ("MetaFunction",)


def url_function() -> Function:
    (function,) = (f for f in ROUTE_GROUPS if f.url)
    return function


def function_url_resources(function: Function) -> dict[str, Any]:
    """A public function URL (the app authenticates each request itself, as behind the REST
    API) and the two permissions AWS asks of a URL without IAM auth (InvokeFunctionUrl, and
    InvokeFunction through the URL only)."""
    name = function.logical_id
    return {
        f"{name}Url": {
            "Type": "AWS::Lambda::Url",
            "Condition": HAS_PROTOCOL_URL,
            "Properties": {
                "TargetFunctionArn": {"Fn::GetAtt": [name, "Arn"]},
                "AuthType": "NONE",
                "InvokeMode": "BUFFERED",
            },
        },
        f"{name}UrlPermission": {
            "Type": "AWS::Lambda::Permission",
            "Condition": HAS_PROTOCOL_URL,
            "Properties": {
                "FunctionName": {"Ref": name},
                "Action": "lambda:InvokeFunctionUrl",
                "Principal": "*",
                "FunctionUrlAuthType": "NONE",
            },
        },
        f"{name}UrlInvokePermission": {
            "Type": "AWS::Lambda::Permission",
            "Condition": HAS_PROTOCOL_URL,
            "Properties": {
                "FunctionName": {"Ref": name},
                "Action": "lambda:InvokeFunction",
                "Principal": "*",
                "InvokedViaFunctionUrl": True,
            },
        },
    }


def protocol_url_variable() -> dict[str, Any]:
    """REGISTRY_PROTOCOL_URL: the protocol function's URL, or empty without one."""
    url = {"Fn::GetAtt": [f"{url_function().logical_id}Url", "FunctionUrl"]}
    return {"REGISTRY_PROTOCOL_URL": {"Fn::If": [HAS_PROTOCOL_URL, url, ""]}}


def role(function: Function) -> dict[str, Any]:
    statements: list[dict[str, Any]] = [
        {
            "Effect": "Allow",
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": sub("arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:*"),
        }
    ]
    grants = {READ: TABLE_READ, "write": TABLE_WRITE, "append": TABLE_APPEND}
    tables = dict(function.tables)
    if tables.get("audit-events") == "append":  # an event's TTL: the site's retention
        tables.setdefault("settings", READ)
    for access, granted in grants.items():
        names = sorted(short for short, level in tables.items() if level == access)
        if not names:
            continue
        arns = []
        for short in names:
            table = sub(
                "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:"
                f"table/${{AWS::StackName}}-{short}"
            )
            arns += [table, {"Fn::Join": ["", [table, "/index/*"]]}]
        statements.append(
            {
                "Effect": "Allow",
                "Action": granted,
                "Resource": arns,
            }
        )
    for prefix, actions in sorted(function.s3.items()):
        statements.append(
            {
                "Effect": "Allow",
                "Action": list(actions),
                "Resource": sub(f"arn:${{AWS::Partition}}:s3:::{BUCKET}/{prefix}*"),
            }
        )
    consumed = {
        INGEST.logical_id: "IngestQueue",
        SCAN.logical_id: "ScanQueue",
        NOTIFY_DELIVERY.logical_id: "NotifyQueue",
        TRANSFERS.logical_id: "TransfersQueue",
    }
    if function.logical_id in consumed:
        statements.append(
            {
                "Effect": "Allow",
                "Action": [
                    "sqs:ReceiveMessage",
                    "sqs:DeleteMessage",
                    "sqs:GetQueueAttributes",
                    "sqs:ChangeMessageVisibility",
                ],
                "Resource": {"Fn::GetAtt": [consumed[function.logical_id], "Arn"]},
            }
        )
    if function.stream:
        statements.append(
            {
                "Effect": "Allow",
                "Action": [
                    "dynamodb:DescribeStream",
                    "dynamodb:GetRecords",
                    "dynamodb:GetShardIterator",
                    "dynamodb:ListStreams",
                ],
                "Resource": {"Fn::GetAtt": [f"{camel(function.stream)}Table", "StreamArn"]},
            }
        )
    for sends, queue in (
        (function.sends_jobs, "IngestQueue"),
        (function.sends_scans, "ScanQueue"),
        (function.sends_notices, "NotifyQueue"),
        (function.sends_transfers, "TransfersQueue"),
    ):
        if sends:
            statements.append(
                {
                    "Effect": "Allow",
                    "Action": ["sqs:SendMessage", "sqs:GetQueueUrl"],
                    "Resource": {"Fn::GetAtt": [queue, "Arn"]},
                }
            )
    statements.append(
        {
            "Effect": "Allow",
            "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
            "Resource": SECRETS_KEY_ARN,
        }
    )
    if function.signs:
        statements.append({"Effect": "Allow", "Action": ["kms:Sign"], "Resource": SIGNING_KEY_ARN})
    if function.reads_public_keys:
        statements.append(
            {"Effect": "Allow", "Action": ["kms:GetPublicKey"], "Resource": LISTED_SIGNING_KEYS}
        )
    return {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "lambda.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            },
            "Policies": [
                {
                    "PolicyName": "least-privilege",
                    "PolicyDocument": {"Version": "2012-10-17", "Statement": statements},
                }
            ],
        },
    }


def function_properties(function: Function) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "Handler": function.handler,
        "Role": {"Fn::GetAtt": [f"{function.logical_id}Role", "Arn"]},
        "MemorySize": function.memory,
        "Timeout": function.timeout,
        "EphemeralStorage": {"Size": function.ephemeral_storage},
        "Environment": environment(),
    }
    if function.logical_id in NAMES_PROTOCOL_URL:
        properties["Environment"]["Variables"].update(protocol_url_variable())
    if function.concurrency_parameter:
        properties["ReservedConcurrentExecutions"] = {
            "Fn::If": [
                f"Has{function.concurrency_parameter}",
                {"Ref": function.concurrency_parameter},
                {"Ref": "AWS::NoValue"},
            ]
        }
    return properties


def concurrency_parameters() -> tuple[dict[str, Any], dict[str, Any]]:
    """(parameters, conditions) of the functions whose concurrency a parameter caps."""
    parameters: dict[str, Any] = {}
    conditions: dict[str, Any] = {}
    for function in ALL_FUNCTIONS:
        name = function.concurrency_parameter
        if name:
            parameters[name] = {
                "Type": "Number",
                "Default": 0,
                "MinValue": 0,
                "Description": f"Most concurrent instances of {function.logical_id} "
                "(its reserved concurrency); 0 = no cap",
            }
            conditions[f"Has{name}"] = {"Fn::Not": [{"Fn::Equals": [{"Ref": name}, "0"]}]}
    return parameters, conditions


def new_function(function: Function) -> dict[str, Any]:
    return {
        "Type": "AWS::Serverless::Function",
        "Properties": {
            "Runtime": "python3.11",
            "CodeUri": "./deployment.zip",
            "Architectures": ["x86_64"],
            "Tracing": "PassThrough",
            **function_properties(function),
        },
    }


# How the stream functions read their stream: batches of up to 100 records gathered for at
# most a second (the totals' delay), a failing batch split in two until the failing record is
# alone, and a record given up after 10 attempts (its version's total is right again at its
# next download: what is copied is the absolute count).
STREAM_EVENT = {
    "StartingPosition": "TRIM_HORIZON",
    "BatchSize": 100,
    "MaximumBatchingWindowInSeconds": 1,
    "BisectBatchOnFunctionError": True,
    "MaximumRetryAttempts": 10,
}


def stream_function(function: Function) -> dict[str, Any]:
    """A function invoked by its table's DynamoDB Stream."""
    assert function.stream is not None
    resource = new_function(function)
    resource["Properties"]["Events"] = {
        "Stream": {
            "Type": "DynamoDB",
            "Properties": {
                "Stream": {"Fn::GetAtt": [f"{camel(function.stream)}Table", "StreamArn"]},
                **STREAM_EVENT,
            },
        }
    }
    if function is AUDIT_EXPORT:
        audit_export_function(resource["Properties"])
    if function is NOTIFY_FANOUT:
        # Its mapping starts at the stream's newest record when it is first made (a deploy
        # adding it must not tell a day of past changes again, nor mail their consumers);
        # from then on it keeps its own place, as every mapping does.
        resource["Properties"]["Events"]["Stream"]["Properties"]["StartingPosition"] = "LATEST"
    return resource


# ----- the audit trail's export (chalicelib.audit.export) ----------------------------------

AUDIT_BUCKET = "${AWS::StackName}-audit-${AWS::AccountId}"
AUDIT_LOG_GROUP = "/${AWS::StackName}/audit-events"
HAS_AUDIT_BUCKET = "HasAuditBucket"
# CloudWatch Logs' retention periods, in days (RetentionInDays takes only these).
LOG_RETENTION_DAYS = (
    *(1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192),
    *(2557, 2922, 3288, 3653),
)
AUDIT_PARAMETERS: dict[str, Any] = {
    "AuditExportBucket": {
        "Type": "String",
        "Default": "true",
        "AllowedValues": ["true", "false"],
        "Description": "true: every audit event is also written to an S3 bucket with Object "
        "Lock (output AuditBucketName), one JSON line each; false: no bucket (the log group "
        "and the table keep them)",
    },
    "AuditObjectLockMode": {
        "Type": "String",
        "Default": "GOVERNANCE",
        "AllowedValues": ["GOVERNANCE", "COMPLIANCE"],
        "Description": "Object Lock mode of the audit bucket: COMPLIANCE, no one (not even the "
        "account's root) can delete or shorten an object's lock; GOVERNANCE, only a principal "
        "with s3:BypassGovernanceRetention can",
    },
    "AuditObjectLockDays": {
        "Type": "Number",
        "Default": 400,
        "MinValue": 1,
        "MaxValue": 36500,
        "Description": "Days each exported object is locked (kept unchangeable)",
    },
    "AuditLogRetentionDays": {
        "Type": "Number",
        "Default": 400,
        "AllowedValues": list(LOG_RETENTION_DAYS),
        "Description": "Days the audit log group keeps its events",
    },
}
AUDIT_CONDITIONS: dict[str, Any] = {
    HAS_AUDIT_BUCKET: {"Fn::Equals": [{"Ref": "AuditExportBucket"}, "true"]},
}
# Lambda retries a failing batch until its records leave the stream (24 hours), never
# dropping them after a count; what still fails is named in the dead-letter queue (the
# events stay in the table: a re-export reads them there).
AUDIT_STREAM_EVENT = {
    "MaximumRetryAttempts": -1,
    "MaximumRecordAgeInSeconds": -1,
    "DestinationConfig": {
        "OnFailure": {"Destination": {"Fn::GetAtt": ["AuditExportDeadLetterQueue", "Arn"]}}
    },
}


def audit_export_function(properties: dict[str, Any]) -> None:
    """The export function's sinks (its environment) and its stream's retries."""
    properties["Environment"]["Variables"].update(
        {
            "REGISTRY_AUDIT_BUCKET": {
                "Fn::If": [HAS_AUDIT_BUCKET, sub(AUDIT_BUCKET), ""],
            },
            "REGISTRY_AUDIT_LOG_GROUP": {"Ref": "AuditLogGroup"},
        }
    )
    properties["Events"]["Stream"]["Properties"].update(AUDIT_STREAM_EVENT)


def audit_export_statements() -> list[dict[str, Any]]:
    """What the export function may do besides reading its stream: add objects under the
    audit bucket's prefix (never delete one: Object Lock would refuse it anyway), write its
    log group, and name a failed batch in its dead-letter queue."""
    return [
        {
            "Effect": "Allow",
            "Action": ["s3:PutObject"],
            "Resource": sub(f"arn:${{AWS::Partition}}:s3:::{AUDIT_BUCKET}/audit-events/*"),
        },
        {
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            "Resource": {"Fn::GetAtt": ["AuditLogGroup", "Arn"]},
        },
        {
            "Effect": "Allow",
            "Action": ["sqs:SendMessage"],
            "Resource": {"Fn::GetAtt": ["AuditExportDeadLetterQueue", "Arn"]},
        },
    ]


def audit_export_resources() -> dict[str, Any]:
    """The audit bucket (Object Lock; optional), the audit log group, the export's dead-letter
    queue and its alarm."""
    secure_only = {
        "Sid": "DenyInsecureTransport",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": [
            sub(f"arn:${{AWS::Partition}}:s3:::{AUDIT_BUCKET}"),
            sub(f"arn:${{AWS::Partition}}:s3:::{AUDIT_BUCKET}/*"),
        ],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }
    return {
        "AuditBucket": {
            "Type": "AWS::S3::Bucket",
            "Condition": HAS_AUDIT_BUCKET,
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "BucketName": sub(AUDIT_BUCKET),
                "ObjectLockEnabled": True,
                "ObjectLockConfiguration": {
                    "ObjectLockEnabled": "Enabled",
                    "Rule": {
                        "DefaultRetention": {
                            "Mode": {"Ref": "AuditObjectLockMode"},
                            "Days": {"Ref": "AuditObjectLockDays"},
                        }
                    },
                },
                "VersioningConfiguration": {"Status": "Enabled"},
                "BucketEncryption": {
                    "ServerSideEncryptionConfiguration": [
                        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                    ]
                },
                "PublicAccessBlockConfiguration": {
                    "BlockPublicAcls": True,
                    "BlockPublicPolicy": True,
                    "IgnorePublicAcls": True,
                    "RestrictPublicBuckets": True,
                },
                "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
            },
        },
        "AuditBucketPolicy": {
            "Type": "AWS::S3::BucketPolicy",
            "Condition": HAS_AUDIT_BUCKET,
            "Properties": {
                "Bucket": {"Ref": "AuditBucket"},
                "PolicyDocument": {"Version": "2012-10-17", "Statement": [secure_only]},
            },
        },
        "AuditLogGroup": {
            "Type": "AWS::Logs::LogGroup",
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "LogGroupName": sub(AUDIT_LOG_GROUP),
                "RetentionInDays": {"Ref": "AuditLogRetentionDays"},
            },
        },
        "AuditExportDeadLetterQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": sub("${AWS::StackName}-audit-export-dlq"),
                "MessageRetentionPeriod": 1209600,
                "SqsManagedSseEnabled": True,
            },
        },
    }


def scan_function() -> dict[str, Any]:
    """The scan function: its queue's jobs one at a time, at most ``ScanConcurrency`` at once
    (the rest wait in the queue), with the scanner's layer."""
    resource = new_function(SCAN)
    resource["Properties"]["Layers"] = [{"Ref": "ScannerLayer"}]
    resource["Properties"]["Events"] = {
        "ScanJobs": {
            "Type": "SQS",
            "Properties": {
                "Queue": {"Fn::GetAtt": ["ScanQueue", "Arn"]},
                "BatchSize": 1,
                "ScalingConfig": {"MaximumConcurrency": {"Ref": "ScanConcurrency"}},
            },
        }
    }
    return resource


def scan_resources() -> dict[str, Any]:
    """The scan queue, its dead-letter queue, and the scanner's layer."""
    return {
        **queue_with_dead_letters("Scan", "${AWS::StackName}-scan", SCAN),
        "ScannerLayer": {
            "Type": "AWS::Serverless::LayerVersion",
            "Properties": {
                "LayerName": sub("${AWS::StackName}-scanner"),
                "Description": "Trivy, the module scanner (only the scan function has it)",
                "ContentUri": SCANNER_LAYER,
                "CompatibleRuntimes": ["python3.11"],
                "CompatibleArchitectures": ["x86_64"],
                "RetentionPolicy": "Delete",
            },
        },
    }


# ----- notifications (chalicelib.notifications) ---------------------------------------------

# Messages the delivery function takes at once; each failed one is reported on its own
# (ReportBatchItemFailures) and comes again alone. A message is delivered again after
# 6 x the function's timeout (AWS's advice for a queue feeding a function), and moved to
# the dead-letter queue after resources.MAX_RECEIVES failed receives (a delivery that got an
# answer is never a failed receive: the worker re-queues it with its backoff itself).
NOTIFY_BATCH = 5


def notify_function() -> dict[str, Any]:
    """The notifications delivery function, subscribed to its queue."""
    resource = new_function(NOTIFY_DELIVERY)
    resource["Properties"]["Events"] = {
        "Notices": {
            "Type": "SQS",
            "Properties": {
                "Queue": {"Fn::GetAtt": ["NotifyQueue", "Arn"]},
                "BatchSize": NOTIFY_BATCH,
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
            },
        }
    }
    return resource


def notify_resources() -> dict[str, Any]:
    """The notifications queue and its dead-letter queue."""
    return queue_with_dead_letters("Notify", "${AWS::StackName}-notify", NOTIFY_DELIVERY)


# ----- transfers (chalicelib.entry.transfers) -----------------------------------------------


def transfers_function() -> dict[str, Any]:
    """The Transfers function, subscribed to its queue, one job at a time."""
    resource = new_function(TRANSFERS)
    resource["Properties"]["Events"] = {
        "Transfers": {
            "Type": "SQS",
            "Properties": {"Queue": {"Fn::GetAtt": ["TransfersQueue", "Arn"]}, "BatchSize": 1},
        }
    }
    return resource


def transfers_resources() -> dict[str, Any]:
    """The transfers queue and its dead-letter queue. A job is delivered again after six times
    the function's timeout (AWS's advice for a queue feeding a function; a job that stopped
    near its budget queues itself again at once), and dead-lettered after
    resources.MAX_RECEIVES failed receives."""
    return queue_with_dead_letters("Transfers", "${AWS::StackName}-transfers", TRANSFERS)


def queue_with_dead_letters(prefix: str, name: str, consumer: Function) -> dict[str, Any]:
    """``<prefix>Queue`` (named ``name``) and ``<prefix>DeadLetterQueue``, where a message goes
    after resources.MAX_RECEIVES failed receives: the queue's visibility is six times its
    consumer's timeout, as AWS advises for an event source mapping."""
    dead_letters = f"{prefix}DeadLetterQueue"
    return {
        dead_letters: {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": sub(f"${{AWS::StackName}}-{prefix.lower()}-dlq"),
                "MessageRetentionPeriod": 1209600,
                "SqsManagedSseEnabled": True,
            },
        },
        f"{prefix}Queue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": sub(name),
                "VisibilityTimeout": 6 * consumer.timeout,
                "SqsManagedSseEnabled": True,
                "RedrivePolicy": {
                    "deadLetterTargetArn": {"Fn::GetAtt": [dead_letters, "Arn"]},
                    "maxReceiveCount": resources.MAX_RECEIVES,
                },
            },
        },
    }


def invoke_permission(logical_id: str) -> dict[str, Any]:
    return {
        "Type": "AWS::Lambda::Permission",
        "Properties": {
            "FunctionName": {"Ref": logical_id},
            "Action": "lambda:InvokeFunction",
            "Principal": "apigateway.amazonaws.com",
            "SourceArn": sub(
                "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${RestAPI}/*"
            ),
        },
    }


# ----- alarms (README: "Operating it: logs, metrics and alarms") ----------------------------

# API Gateway's metrics name the API: the stack's name (merge_template sets it).
API_STAGE = "api"
# Alarm on the 5xx rate above this percentage, once a period has this many requests (a single
# failed request of two is not an outage).
API_5XX_PERCENT = 5
API_5XX_MIN_REQUESTS = 10
ALARM_PERIOD = 300

ALARM_PARAMETERS: dict[str, Any] = {
    "AlarmTopicArn": {
        "Type": "String",
        "Default": "",
        "Description": "SNS topic ARN the alarms notify (in ALARM and back to OK); "
        "empty = alarms without actions",
    },
}
ALARM_CONDITIONS: dict[str, Any] = {
    "HasAlarmTopic": {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmTopicArn"}, ""]}]},
}


def _alarm(name: str, description: str, **properties: Any) -> dict[str, Any]:
    actions = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
    return {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "AlarmName": sub(f"${{AWS::StackName}}-{name}"),
            "AlarmDescription": description,
            "AlarmActions": actions,
            "OKActions": actions,
            "ComparisonOperator": "GreaterThanThreshold",
            "EvaluationPeriods": 1,
            "TreatMissingData": "notBreaching",
            **properties,
        },
    }


def _stat(
    metric_id: str, namespace: str, metric: str, dimensions: dict[str, Any]
) -> dict[str, Any]:
    return {
        "Id": metric_id,
        "ReturnData": False,
        "MetricStat": {
            "Metric": {
                "Namespace": namespace,
                "MetricName": metric,
                "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
            },
            "Period": ALARM_PERIOD,
            "Stat": "Sum",
        },
    }


def alarm_resources() -> dict[str, Any]:
    """The dead-letter queue not empty, the API's 5xx rate, each table's throttled reads and
    writes, each function's errors: all to ``AlarmTopicArn`` when it is set."""
    alarms = {
        "IngestDeadLetterAlarm": _dead_letter_alarm(
            "ingest", "Ingest messages failed every delivery and wait in the dead-letter queue"
        ),
        "AuditExportDeadLetterAlarm": _alarm(
            "audit-export-dead-letters",
            "Audit events could not be exported to S3 or CloudWatch Logs for 24 hours (the "
            "dead-letter queue names them; the table still holds the events)",
            Namespace="AWS/SQS",
            MetricName="ApproximateNumberOfMessagesVisible",
            Dimensions=[
                {
                    "Name": "QueueName",
                    "Value": {"Fn::GetAtt": ["AuditExportDeadLetterQueue", "QueueName"]},
                }
            ],
            Statistic="Maximum",
            Period=ALARM_PERIOD,
            Threshold=0,
        ),
        "NotifyDeadLetterAlarm": _dead_letter_alarm(
            "notify",
            "Notification messages failed every delivery (the worker itself failed, not a "
            "destination: those are retried with backoff and given up) and wait in the "
            "dead-letter queue",
        ),
        "ScanDeadLetterAlarm": _dead_letter_alarm(
            "scan",
            "Scan jobs failed every delivery (recording the scan failed) and wait in the "
            "dead-letter queue; their versions' scans stay pending",
        ),
        "TransfersDeadLetterAlarm": _dead_letter_alarm(
            "transfers",
            "Transfers jobs (bundle exports and imports, module cache fetches) failed every "
            "delivery and wait in the dead-letter queue; their bundle jobs stay running",
        ),
        "Api5xxAlarm": _alarm(
            "api-5xx-rate",
            f"More than {API_5XX_PERCENT}% of API requests answered 5xx "
            f"(periods of at least {API_5XX_MIN_REQUESTS} requests)",
            Metrics=[
                _stat("errors", "AWS/ApiGateway", "5XXError", _api_dimensions()),
                _stat("requests", "AWS/ApiGateway", "Count", _api_dimensions()),
                {
                    "Id": "rate",
                    "Label": "5xx percent",
                    "Expression": f"IF(requests >= {API_5XX_MIN_REQUESTS}, "
                    "100 * errors / requests, 0)",
                    "ReturnData": True,
                },
            ],
            Threshold=API_5XX_PERCENT,
        ),
    }
    for short in sorted(table_short_names()):
        table = {"TableName": {"Ref": f"{camel(short)}Table"}}
        alarms[f"{camel(short)}TableThrottleAlarm"] = _alarm(
            f"{short}-throttled",
            f"DynamoDB throttled reads or writes of the {short} table",
            Metrics=[
                _stat("reads", "AWS/DynamoDB", "ReadThrottleEvents", table),
                _stat("writes", "AWS/DynamoDB", "WriteThrottleEvents", table),
                {
                    "Id": "throttled",
                    "Label": "throttled reads + writes",
                    "Expression": "reads + writes",
                    "ReturnData": True,
                },
            ],
            Threshold=0,
        )
    for function in ALL_FUNCTIONS:
        alarms[f"{function.logical_id}ErrorsAlarm"] = _alarm(
            f"{function.logical_id}-errors",
            f"The {function.logical_id} function failed (crash, timeout or out of memory; "
            "handled errors are 5xx answers, not function errors)",
            Namespace="AWS/Lambda",
            MetricName="Errors",
            Dimensions=[{"Name": "FunctionName", "Value": {"Ref": function.logical_id}}],
            Statistic="Sum",
            Period=ALARM_PERIOD,
            Threshold=0,
        )
    return alarms


def _dead_letter_alarm(queue: str, description: str) -> dict[str, Any]:
    """Any message in the ``queue``'s dead-letter queue."""
    dlq = f"{queue.capitalize()}DeadLetterQueue"
    return _alarm(
        f"{queue}-dead-letters",
        description,
        Namespace="AWS/SQS",
        MetricName="ApproximateNumberOfMessagesVisible",
        Dimensions=[{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq, "QueueName"]}}],
        Statistic="Maximum",
        Period=ALARM_PERIOD,
        Threshold=0,
    )


def _api_dimensions() -> dict[str, Any]:
    return {"ApiName": sub("${AWS::StackName}"), "Stage": API_STAGE}


# ----- the rest of the stack ----------------------------------------------------------------


def storage_resources() -> dict[str, Any]:
    return {
        "ArchiveBucket": {
            "Type": "AWS::S3::Bucket",
            "DependsOn": "IngestQueuePolicy",
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "BucketName": sub(BUCKET),
                # An overwritten or deleted archive stays restorable for ArchiveVersionDays.
                "VersioningConfiguration": {"Status": "Enabled"},
                "BucketEncryption": {
                    "ServerSideEncryptionConfiguration": [
                        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                    ]
                },
                "PublicAccessBlockConfiguration": {
                    "BlockPublicAcls": True,
                    "BlockPublicPolicy": True,
                    "IgnorePublicAcls": True,
                    "RestrictPublicBuckets": True,
                },
                "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
                # The web UI's upload page PUTs archives straight to their presigned links: from
                # the UI's own origin only (InstanceAddress); without it, curl (no CORS).
                "CorsConfiguration": {
                    "Fn::If": [HAS_INSTANCE_ADDRESS, UPLOAD_CORS, {"Ref": "AWS::NoValue"}]
                },
                "LifecycleConfiguration": {
                    "Rules": [
                        {
                            "Id": "abandoned-uploads",
                            "Status": "Enabled",
                            "Prefix": UPLOAD_PREFIX,
                            "ExpirationInDays": ABANDONED_UPLOAD_DAYS,
                            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                        },
                        # A bundle export's upload, kept while its job may resume it
                        # (chalicelib.bundles.jobs); one whose job died is dropped.
                        {
                            "Id": "abandoned-bundle-exports",
                            "Status": "Enabled",
                            "Prefix": "bundles/files/",
                            "AbortIncompleteMultipartUpload": {
                                "DaysAfterInitiation": BUNDLE_UPLOAD_DAYS
                            },
                        },
                        {
                            "Id": "noncurrent-versions",
                            "Status": "Enabled",
                            "NoncurrentVersionExpiration": {
                                "NoncurrentDays": {"Ref": "ArchiveVersionDays"}
                            },
                            "ExpiredObjectDeleteMarker": True,
                        },
                    ]
                },
                "NotificationConfiguration": {
                    "QueueConfigurations": [
                        {
                            "Event": "s3:ObjectCreated:*",
                            "Queue": {"Fn::GetAtt": ["IngestQueue", "Arn"]},
                            "Filter": {
                                "S3Key": {
                                    "Rules": [
                                        {"Name": "prefix", "Value": UPLOAD_PREFIX},
                                        {"Name": "suffix", "Value": ".tar.gz"},
                                    ]
                                }
                            },
                        },
                        {
                            "Event": "s3:ObjectCreated:*",
                            "Queue": {"Fn::GetAtt": ["IngestQueue", "Arn"]},
                            "Filter": {
                                "S3Key": {"Rules": [{"Name": "prefix", "Value": PROVIDERS}]}
                            },
                        },
                    ]
                },
            },
        },
        "ArchiveBucketPolicy": {
            "Type": "AWS::S3::BucketPolicy",
            "Properties": {
                "Bucket": {"Ref": "ArchiveBucket"},
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "DenyInsecureTransport",
                            "Effect": "Deny",
                            "Principal": "*",
                            "Action": "s3:*",
                            "Resource": [
                                sub(f"arn:${{AWS::Partition}}:s3:::{BUCKET}"),
                                sub(f"arn:${{AWS::Partition}}:s3:::{BUCKET}/*"),
                            ],
                            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                        }
                    ],
                },
            },
        },
        **queue_with_dead_letters("Ingest", QUEUE_NAME, INGEST),
        "IngestQueuePolicy": {
            "Type": "AWS::SQS::QueuePolicy",
            "Properties": {
                "Queues": [{"Ref": "IngestQueue"}],
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "s3.amazonaws.com"},
                            "Action": "sqs:SendMessage",
                            "Resource": {"Fn::GetAtt": ["IngestQueue", "Arn"]},
                            "Condition": {
                                "ArnLike": {
                                    "aws:SourceArn": sub(f"arn:${{AWS::Partition}}:s3:::{BUCKET}")
                                },
                                "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
                            },
                        }
                    ],
                },
            },
        },
        # Retained: every stored secret (VCS tokens, SAML and SMTP settings...) is sealed with
        # it, so the retained tables are unreadable without it.
        "SecretsKey": {
            "Type": "AWS::KMS::Key",
            "Condition": CREATE_SECRETS_KEY,
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "Description": "Envelope encryption of the registry's stored secrets",
                "EnableKeyRotation": True,
                "KeyPolicy": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "AccountAdministers",
                            "Effect": "Allow",
                            "Principal": {
                                "AWS": sub("arn:${AWS::Partition}:iam::${AWS::AccountId}:root")
                            },
                            "Action": "kms:*",
                            "Resource": "*",
                        }
                    ],
                },
            },
        },
        # Retained: envelopes it signed verify only while its public half can be read.
        "SigningKey": {
            "Type": "AWS::KMS::Key",
            "Condition": CREATE_SIGNING_KEY,
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "Description": "Signs the registry's provenance (DSSE, ECDSA P-256)",
                "KeySpec": "ECC_NIST_P256",
                "KeyUsage": "SIGN_VERIFY",
                "KeyPolicy": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "AccountAdministers",
                            "Effect": "Allow",
                            "Principal": {
                                "AWS": sub("arn:${AWS::Partition}:iam::${AWS::AccountId}:root")
                            },
                            "Action": "kms:*",
                            "Resource": "*",
                        }
                    ],
                },
            },
        },
        "SecretsKeyAlias": {
            "Type": "AWS::KMS::Alias",
            "Properties": {
                "AliasName": sub("alias/${AWS::StackName}-secrets"),
                "TargetKeyId": SECRETS_KEY_ARN,
            },
        },
    }


def gateway_responses() -> dict[str, Any]:
    """API Gateway's own answers (no Lambda involved), as JSON:API error documents."""

    def response(kind: str, status: str | None, title: str) -> dict[str, Any]:
        error: dict[str, str] = {
            "title": title,
            "detail": "$context.error.message",
            "code": "$context.error.responseType",
        }
        if status:
            error["status"] = status
        properties: dict[str, Any] = {
            "RestApiId": {"Ref": "RestAPI"},
            "ResponseType": kind,
            "ResponseParameters": {
                "gatewayresponse.header.Content-Type": "'application/vnd.api+json'"
            },
            "ResponseTemplates": {"application/json": json.dumps({"errors": [error]})},
        }
        if status:
            properties["StatusCode"] = status
        return {"Type": "AWS::ApiGateway::GatewayResponse", "Properties": properties}

    return {
        # An unknown path: API Gateway would say 403 "Missing Authentication Token".
        "UnknownRouteResponse": response("MISSING_AUTHENTICATION_TOKEN", "404", "not found"),
        "ThrottledResponse": response("THROTTLED", "429", "too many requests"),
        "TooLargeResponse": response("REQUEST_TOO_LARGE", "413", "request too large"),
        "Default4xxResponse": response("DEFAULT_4XX", None, "bad request"),
        "Default5xxResponse": response("DEFAULT_5XX", None, "internal server error"),
    }


PARAMETERS = {
    "Edition": {
        "Type": "String",
        "Default": "self-hosted",
        "AllowedValues": ["self-hosted", "hosted"],
        "Description": "self-hosted serves /admin; hosted serves public curation",
    },
    "InstanceAddress": {
        "Type": "String",
        "Default": "",
        # Mailed links (invitations, password resets, email confirmations) name only this
        # address, never a request's Host header (chalicelib.core.api.links): left empty, none
        # is made, and those requests are refused with a 503 that says so.
        "Description": "Public base URL, e.g. https://registry.example.com: every mailed "
        "link (invitations, password resets, email confirmations) and absolute links; empty = "
        "no mailed links (invitations, resets and email changes refused), other links use the "
        "request host",
    },
    "MaxArchiveBytes": {
        "Type": "Number",
        "Default": 52428800,
        "MinValue": 1024,
        "Description": "Largest module archive accepted, in bytes",
    },
    "MaxProviderArchiveBytes": {
        "Type": "Number",
        "Default": 419430400,
        "MinValue": 1024,
        # Checked in the Ingest function's /tmp (512 MB, groups.INGEST): keep it below that.
        "Description": "Largest provider platform archive accepted, in bytes",
    },
    "ArchiveVersionDays": {
        "Type": "Number",
        "Default": 30,
        "MinValue": 1,
        "Description": "Days an overwritten or deleted archive stays restorable",
    },
    "OutboundAllow": {
        "Type": "String",
        "Default": "",
        "Description": "What outbound fetches (mirror upstream links, VCS hosts) may reach "
        "besides public addresses: comma-separated hosts, host:port pairs or CIDRs "
        "(e.g. git.corp.example,10.20.0.0/16); empty = public addresses only",
    },
    "ScanConcurrency": {
        "Type": "Number",
        "Default": 5,
        "MinValue": 2,
        "MaxValue": 1000,
        "Description": "Most module scans at once (each a 1.5 GB function); the others wait "
        "in the scan queue",
    },
    "ExistingSecretsKeyArn": {
        "Type": "String",
        "Default": "",
        "AllowedPattern": "^$|^arn:[a-z-]+:kms:[a-z0-9-]+:[0-9]{12}:key/[0-9a-f-]+$",
        "Description": "Empty: the stack creates its secrets key. The ARN of a retained key "
        "(an earlier stack's, output SecretsKeyArn): restored secrets stay readable",
    },
    "SigningKeyArn": {
        "Type": "String",
        "Default": "",
        "AllowedPattern": f"^$|^{_KEY_ARN}$",
        "Description": "Empty: the stack creates its provenance signing key. The ARN of an "
        "ECC_NIST_P256 SIGN_VERIFY key to sign with instead (rotation: a new key here, the old "
        "one in PreviousSigningKeys)",
    },
    "PreviousSigningKeys": {
        "Type": "String",
        "Default": "",
        "AllowedPattern": f"^$|^{_KEY_ARN}(,{_KEY_ARN})*$",
        "Description": "Comma-separated ARNs of keys that signed provenance before a rotation: "
        "their public keys stay served so older envelopes still verify",
    },
}

CONDITIONS = {
    CREATE_SECRETS_KEY: {"Fn::Equals": [{"Ref": "ExistingSecretsKeyArn"}, ""]},
    CREATE_SIGNING_KEY: {"Fn::Equals": [{"Ref": "SigningKeyArn"}, ""]},
    HAS_PREVIOUS_SIGNING_KEYS: {"Fn::Not": [{"Fn::Equals": [{"Ref": "PreviousSigningKeys"}, ""]}]},
    HAS_INSTANCE_ADDRESS: {"Fn::Not": [{"Fn::Equals": [{"Ref": "InstanceAddress"}, ""]}]},
}
OUTPUTS = {
    "SecretsKeyArn": {
        "Description": "The key that seals stored secrets: keep it, a restore needs it",
        "Value": SECRETS_KEY_ARN,
    },
    "SigningKeyArn": {
        "Description": "The key that signs provenance: list it in PreviousSigningKeys when "
        "rotating to a new one",
        "Value": SIGNING_KEY_ARN,
    },
}


def merge_template() -> dict[str, Any]:
    resources_out: dict[str, Any] = {}
    for short, model in sorted(table_short_names().items()):
        resources_out[f"{camel(short)}Table"] = table_resource(short, model)
    resources_out.update(storage_resources())
    resources_out.update(scan_resources())
    resources_out.update(notify_resources())
    resources_out.update(transfers_resources())
    resources_out.update(gateway_responses())
    for function in STREAM_FUNCTIONS:
        resources_out[f"{function.logical_id}Role"] = role(function)
        resources_out[function.logical_id] = stream_function(function)
    resources_out.update(audit_export_resources())
    audit_role = resources_out[f"{AUDIT_EXPORT.logical_id}Role"]["Properties"]
    audit_role["Policies"][0]["PolicyDocument"]["Statement"] += audit_export_statements()
    for function in QUEUE_FUNCTIONS:
        resources_out[f"{function.logical_id}Role"] = role(function)
        makers = {SCAN.logical_id: scan_function, NOTIFY_DELIVERY.logical_id: notify_function}
        resources_out[function.logical_id] = makers.get(function.logical_id, transfers_function)()
    for function in ROUTE_GROUPS + EVENT_FUNCTIONS:
        resources_out[f"{function.logical_id}Role"] = role(function)
        if function.logical_id in ("APIHandler", *(f.logical_id for f in EVENT_FUNCTIONS)):
            resources_out[function.logical_id] = {"Properties": function_properties(function)}
        else:
            resources_out[function.logical_id] = new_function(function)
            resources_out[f"{function.logical_id}InvokePermission"] = invoke_permission(
                function.logical_id
            )
        if function.url:
            resources_out.update(function_url_resources(function))
    # Chalice writes the SQS event source as Fn::Sub over the queue name it saw at packaging
    # time; the prod stage in .chalice/config.json sets that name to QUEUE_NAME, so it
    # resolves to IngestQueue (created first: the function's environment refers to it).
    # Chalice's shared role is left with nothing but logs: no function uses it.
    resources_out["DefaultRole"] = {
        "Properties": {
            "Policies": [
                {
                    "PolicyName": "DefaultRolePolicy",
                    "PolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Action": ["logs:CreateLogStream"],
                                "Resource": sub(
                                    "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:*"
                                ),
                            }
                        ],
                    },
                }
            ]
        }
    }
    resources_out["RestAPI"] = {"Properties": {"DefinitionBody": {"paths": repointed_paths()}}}
    # Alarms (their own block above); API Gateway's metrics name the API: the stack's name.
    resources_out["RestAPI"]["Properties"]["Name"] = sub("${AWS::StackName}")
    resources_out.update(alarm_resources())
    return {
        "Description": f"tfe-module-registry {__version__}",
        "Parameters": {
            **PARAMETERS,
            **AUDIT_PARAMETERS,
            **ALARM_PARAMETERS,
            **URL_PARAMETERS,
            **concurrency_parameters()[0],
        },
        "Conditions": {
            **CONDITIONS,
            **AUDIT_CONDITIONS,
            **ALARM_CONDITIONS,
            **URL_CONDITIONS,
            **concurrency_parameters()[1],
        },
        "Resources": resources_out,
        "Outputs": {
            **OUTPUTS,
            "AuditBucketName": {
                "Description": "Where each audit event is exported, one JSON line, under "
                "audit-events/YYYY/MM/DD/HH/ (empty: AuditExportBucket is false)",
                "Value": {"Fn::If": [HAS_AUDIT_BUCKET, {"Ref": "AuditBucket"}, ""]},
            },
            "AuditLogGroupName": {
                "Description": "The log group with each audit event as one JSON line",
                "Value": {"Ref": "AuditLogGroup"},
            },
            "RegistryVersion": {"Description": "The release deployed", "Value": __version__},
            "ProtocolFunctionUrl": {
                "Description": "The protocol function's URL, which discovery names for "
                "modules.v1 (empty: ProtocolUrlEnabled is false)",
                "Value": protocol_url_variable()["REGISTRY_PROTOCOL_URL"],
            },
        },
    }


def compact(path: Path) -> int:
    """Rewrite Chalice's packaged template without indentation; its size in bytes.

    Chalice writes ``out/sam.json`` indented, which doubles it: with every route in the REST
    API's definition, the indented file passed the 1,000,000 bytes cfn-lint allows a
    template (0.10.0: 1.0 MB indented, 0.47 MB compact; ``aws cloudformation package``
    writes it again as YAML, about 0.66 MB, the file CloudFormation reads)."""
    text = json.dumps(json.loads(path.read_text()), separators=(",", ":")) + "\n"
    path.write_text(text)
    return len(text.encode())


def main(argv: list[str]) -> int:
    if len(argv) > 2 and argv[1] == "--compact":
        print(f"compacted {argv[2]}: {compact(Path(argv[2])) / 1e6:.2f} MB")
        return 0
    target = Path(argv[1] if len(argv) > 1 else "out/merge.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(merge_template(), indent=2) + "\n")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
