"""moto's transactions as the tests and the local stack run them (``infrastructure.
moto_transactions``): a cancelled transaction puts back what it touched, in place, so that a
stream reader keeps reading what is written after it."""

from __future__ import annotations

from typing import Any

import pytest
from pynamodb.exceptions import TransactWriteError
from pynamodb.transactions import TransactWrite

from chalicelib.core.data import db
from chalicelib.core.data.aws import client
from chalicelib.modules.downloads.store import DownloadsModel


def _records(iterator: str) -> tuple[list[dict[str, Any]], str]:
    answer = client("dynamodbstreams").get_records(ShardIterator=iterator)
    return answer["Records"], answer["NextShardIterator"]


def test_a_cancelled_transaction_leaves_the_stream_readable(aws: None) -> None:
    table = client("dynamodb").describe_table(TableName=DownloadsModel.Meta.table_name)["Table"]
    streams = client("dynamodbstreams")
    arn = table["LatestStreamArn"]
    (shard,) = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="LATEST"
    )["ShardIterator"]
    DownloadsModel("m-1", "1.0.0", total=1).save()
    with pytest.raises(TransactWriteError), TransactWrite(connection=db.connection()) as tx:
        tx.save(DownloadsModel("m-1", "2.0.0", total=1))
        tx.save(
            DownloadsModel("m-1", "1.0.0", total=2),
            condition=DownloadsModel.module_id.does_not_exist(),
        )
    # put back as it was: 1.0.0 unchanged, 2.0.0 never written
    assert DownloadsModel.get("m-1", "1.0.0").total == 1
    assert DownloadsModel.count("m-1") == 1
    DownloadsModel("m-1", "3.0.0", total=1).save()
    records, _ = _records(iterator)
    versions = [r["dynamodb"]["Keys"]["version"]["S"] for r in records]
    # the iterator made before the cancellation still reads: 1.0.0, then 3.0.0
    assert versions == ["1.0.0", "3.0.0"]
