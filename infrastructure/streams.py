"""Read a table's DynamoDB Stream as Lambda's event source mapping does, for the local stack
and the tests: every shard from its oldest record, in order, a batch at a time, the batch
read again when its handler fails.

In AWS the ``DownloadTotals`` function is subscribed to the ``module-downloads`` stream
(``infrastructure.template``); here ``StreamPoller`` hands the same batches to the same code
(``chalicelib.modules.downloads.totals.handle_batch``). The ``AuditExport`` function's
stream, ``audit-events``, is read the same way into ``chalicelib.audit.export``; its reader
keeps where it stopped in a checkpoint file (the local stack's data directory), as Lambda's
event source mapping does, so that a restart (which brings the stream's records back with
the tables) exports nothing twice. The notifications' fan-out reads the same stream a second
time, with a checkpoint of its own (``notifications_reader``), as its function does in AWS.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

Handler = Callable[[list[Mapping[str, Any]]], None]
BATCH_SIZE = 100  # as the template's event source mapping

log = logging.getLogger("registry.streams")


class StreamReader:
    """The records of one table's stream not handled yet, shard by shard."""

    def __init__(
        self,
        table_name: str,
        handle: Handler,
        start: str = "TRIM_HORIZON",
        checkpoint: Path | None = None,
    ) -> None:
        """``start``: where a shard is first read, ``TRIM_HORIZON`` (its oldest record, as
        the template's mapping) or ``LATEST`` (only what comes after ``open``).
        ``checkpoint``: a file keeping each shard's last record handled; a shard it names is
        read after that record instead."""
        self.table_name = table_name
        self.handle = handle
        self.start = start
        self.checkpoint = checkpoint
        self._iterators: dict[str, str | None] = {}  # shard -> next iterator (None: closed)
        self._stream_arn: str | None = None
        self._handled: dict[str, str] = self._read_checkpoint()  # shard -> sequence number

    def open(self) -> None:
        """Find the stream's shards not known yet and where to read each."""
        from chalicelib.core.data.aws import client

        streams = client("dynamodbstreams")
        arn = self._arn()
        if arn is None:
            return
        for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
            shard_id = shard["ShardId"]
            if shard_id in self._iterators:
                continue
            where: dict[str, str] = {"ShardIteratorType": self.start}
            if shard_id in self._handled:
                where = {
                    "ShardIteratorType": "AFTER_SEQUENCE_NUMBER",
                    "SequenceNumber": self._handled[shard_id],
                }
            self._iterators[shard_id] = streams.get_shard_iterator(
                StreamArn=arn, ShardId=shard_id, **where
            )["ShardIterator"]

    def drain(self) -> int:
        """Hand every waiting record to the handler, a batch per call; how many records. A
        failing handler's exception propagates, and its batch is read again next time."""
        from chalicelib.core.data.aws import client

        self.open()
        streams = client("dynamodbstreams")
        handled = 0
        for shard_id, iterator in list(self._iterators.items()):
            while iterator:
                answer = streams.get_records(ShardIterator=iterator, Limit=BATCH_SIZE)
                records = answer.get("Records", [])
                if records:
                    self.handle(records)  # raises: the iterator stays, the batch comes again
                    handled += len(records)
                    self._note(shard_id, records[-1]["dynamodb"]["SequenceNumber"])
                iterator = answer.get("NextShardIterator")
                self._iterators[shard_id] = iterator
                if not records:
                    break
        return handled

    def _read_checkpoint(self) -> dict[str, str]:
        if self.checkpoint is None or not self.checkpoint.exists():
            return {}
        return {str(k): str(v) for k, v in json.loads(self.checkpoint.read_text()).items()}

    def _note(self, shard_id: str, sequence_number: str) -> None:
        """Keep the shard's last handled record in the checkpoint (written whole, then
        renamed over the old one: a crash leaves one or the other)."""
        self._handled[shard_id] = sequence_number
        if self.checkpoint is None:
            return
        written = self.checkpoint.with_name(self.checkpoint.name + ".tmp")
        written.write_text(json.dumps(self._handled))
        os.replace(written, self.checkpoint)

    def _arn(self) -> str | None:
        if self._stream_arn is None:
            from chalicelib.core.data.aws import client

            table = client("dynamodb").describe_table(TableName=self.table_name)["Table"]
            self._stream_arn = table.get("LatestStreamArn")
        return self._stream_arn


class StreamPoller(threading.Thread):
    """Drains a stream every ``interval`` seconds (the local stack's event source mapping)."""

    def __init__(self, reader: StreamReader, interval: float = 0.5) -> None:
        super().__init__(name=f"stream-poller-{reader.table_name}", daemon=True)
        self.reader = reader
        self.interval = interval
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(self.interval):
            try:
                self.reader.drain()
            except Exception:  # noqa: BLE001 - moto going away at shutdown, or a failed batch
                if self.stopping.is_set():
                    return
                log.exception(
                    "a batch of the %s stream failed; it will be read again",
                    self.reader.table_name,
                )


def download_totals_reader(start: str = "TRIM_HORIZON") -> StreamReader:
    """The reader of the ``module-downloads`` stream, feeding the modules' kept totals."""
    from chalicelib.modules.downloads.store import DownloadsModel
    from chalicelib.modules.downloads.totals import handle_batch

    return StreamReader(DownloadsModel.Meta.table_name, handle_batch, start)


def audit_export_reader(
    start: str = "TRIM_HORIZON", checkpoint: Path | None = None
) -> StreamReader:
    """The reader of the ``audit-events`` stream, feeding the export to S3 and the log
    group (``chalicelib.audit.export``)."""
    from chalicelib.audit.export import handle_batch
    from chalicelib.core.audit.store import AuditEventModel

    return StreamReader(AuditEventModel.Meta.table_name, handle_batch, start, checkpoint)


def notifications_reader(
    start: str = "TRIM_HORIZON", checkpoint: Path | None = None
) -> StreamReader:
    """A second reader of the ``audit-events`` stream, with its own place in it (as the
    ``NotificationsFanOut`` function's own event source mapping): each new event told to
    the notifications queue (``chalicelib.entry.notify``)."""
    from chalicelib.core.audit.store import AuditEventModel
    from chalicelib.entry.notify import handle_records

    def handle(records: list[Mapping[str, Any]]) -> None:
        handle_records(records)

    return StreamReader(AuditEventModel.Meta.table_name, handle, start, checkpoint)
