"""One reading of a failed DynamoDB call's code (``core.data.db.error_code``), whether the call
went through a PynamoDB model (its errors carry ``cause_response_code``) or the low-level
connection (botocore's ``ClientError``), so a failed condition is told apart the same way."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from pynamodb.exceptions import UpdateError

from chalicelib.core.data import db
from chalicelib.core.data.counters import RateLimitModel


@pytest.mark.usefixtures("aws")
def test_a_failed_condition_reads_the_same_from_a_model_and_from_the_connection() -> None:
    with pytest.raises(UpdateError) as through_model:
        RateLimitModel("k").update(
            actions=[RateLimitModel.hits.add(1)], condition=RateLimitModel.hits.exists()
        )
    with pytest.raises(ClientError) as through_connection:
        db.connection().dispatch(
            "UpdateItem",
            {
                "TableName": RateLimitModel.Meta.table_name,
                "Key": {"key": {"S": "k"}},
                "UpdateExpression": "ADD hits :one",
                "ConditionExpression": "attribute_exists(hits)",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            },
        )
    assert db.conditional_failure(through_model.value)
    assert db.conditional_failure(through_connection.value)
    with pytest.raises(ClientError) as invalid:
        db.connection().dispatch(
            "UpdateItem",
            {
                "TableName": RateLimitModel.Meta.table_name,
                "Key": {"key": {"S": "k"}},
                "UpdateExpression": "ADD hits :missing",
            },
        )
    assert db.error_code(invalid.value) == "ValidationException"
    assert not db.conditional_failure(invalid.value)
    assert db.error_code(ValueError("not a call")) is None
