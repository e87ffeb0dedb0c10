"""The upload pipeline (``artifacts.pipeline``) on its own, on moto's S3: a third, toy
artifact type (a text note) that writes only its own checks and records, and gets the rest
from the pipeline: the object read under its limit, a missing object, the refusal and its
bounded reason, unforeseen exceptions, a stage every artifact gets, the report. And the one
rule for "the object is not there" (``artifacts.objects``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError

from chalicelib.artifacts import objects, pipeline
from chalicelib.artifacts.objects import Fetched
from chalicelib.artifacts.pipeline import Outcome, Refused, Subject, Wanted
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings

LOG = "test.notes"


@dataclass
class Note:
    """The toy type: a note must be UTF-8 text starting with ``note:``. Its records are a
    dict here; a real type writes its items."""

    key: str = "notes/n1.txt"
    limit: int = 64
    recorded: dict[str, Any] = field(default_factory=dict)
    checked: int = 0

    @property
    def subject(self) -> Subject:
        return Subject(logging.getLogger(LOG), "NoteCheck", f"note check of {self.key}")

    def wanted(self) -> Sequence[Wanted]:
        return [Wanted(self.key, self.limit, "the note")]

    def check(self, files: Sequence[Fetched]) -> str:
        self.checked += 1
        (note,) = files
        with pipeline.unforeseen("the note could not be read"):
            text = note.read().decode("utf-8")
        if not text.startswith("note:"):
            raise Refused(f"the note starts with {text[:5]!r}, not 'note:'")
        return text

    def accept(self, result: str) -> str:
        self.recorded.update(status=VersionStatus.VERIFIED, text=result)
        return Outcome.VERIFIED

    def refuse(self, reason: str) -> None:
        self.recorded.update(status=VersionStatus.FAILED, error=reason)


def put(key: str, body: bytes) -> None:
    client("s3").put_object(Bucket=get_settings().bucket, Key=key, Body=body)


@pytest.fixture
def notes(aws: None, caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.INFO, logger=LOG):
        yield caplog


def reports(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOG]


def counted(record: logging.LogRecord) -> list[tuple[str, dict[str, str]]]:
    return [(m.name, dict(m.dimensions)) for m in getattr(record, "metrics", ())]


def test_a_third_type_needs_only_its_checks(notes: pytest.LogCaptureFixture) -> None:
    put("notes/n1.txt", b"note: hello")
    note = Note()
    assert pipeline.run(note) == "verified"
    assert note.recorded == {"status": "verified", "text": "note: hello"}
    (record,) = reports(notes)
    assert record.levelname == "INFO" and record.getMessage() == (
        "note check of notes/n1.txt: verified"
    )
    assert counted(record) == [("NoteCheck", {"Outcome": "verified"})]


def test_a_refusal_is_recorded_with_its_reason_and_counted(
    notes: pytest.LogCaptureFixture,
) -> None:
    put("notes/n1.txt", b"hello")
    note = Note()
    assert pipeline.run(note) == "failed"
    assert note.recorded["error"] == "the note starts with 'hello', not 'note:'"
    assert note.recorded["status"] == "failed"
    (record,) = reports(notes)
    assert record.levelname == "INFO" and record.exc_info is None
    assert record.fields["reason"] == note.recorded["error"]  # type: ignore[attr-defined]
    assert counted(record) == [("NoteCheck", {"Outcome": "failed"})]


def test_an_unforeseen_exception_in_a_check_is_a_refusal_logged_as_a_warning(
    notes: pytest.LogCaptureFixture,
) -> None:
    put("notes/n1.txt", b"note: \xff\xfe")
    note = Note()
    assert pipeline.run(note) == "failed"
    assert note.recorded["error"] == "the note could not be read (unexpected UnicodeDecodeError)"
    (record,) = reports(notes)
    assert record.levelname == "WARNING" and record.exc_info is None
    assert "UnicodeDecodeError: " in record.fields["unexpected"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("size", [65, 5 * 1024 * 1024])
def test_an_object_over_its_limit_is_refused_unchecked(
    notes: pytest.LogCaptureFixture, size: int
) -> None:
    put("notes/n1.txt", b"note:" + b"x" * (size - 5))
    note = Note()
    assert pipeline.run(note) == "failed"
    assert note.recorded["error"] == f"the note is {size} bytes, over the limit of 64 bytes"
    assert note.checked == 0


def test_more_bytes_than_s3_announced_are_refused_too(
    notes: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit holds on the bytes read, not only on S3's ContentLength."""
    put("notes/n1.txt", b"note:" + b"x" * 95)
    real = client("s3")

    class Understating:
        def get_object(self, **kwargs: Any) -> dict[str, Any]:
            return {**real.get_object(**kwargs), "ContentLength": 10}

    monkeypatch.setattr(objects, "client", lambda name: Understating())
    note = Note()
    assert pipeline.run(note) == "failed"
    assert note.recorded["error"] == "the note is over the limit of 64 bytes"


def test_a_missing_object_is_gone_and_nothing_is_recorded(
    notes: pytest.LogCaptureFixture,
) -> None:
    note = Note()
    assert pipeline.run(note) == "gone"
    assert note.recorded == {} and note.checked == 0
    (record,) = reports(notes)
    assert counted(record) == []  # a retry or a race: logged, not counted


def test_s3_failing_is_not_the_uploads_fault_it_propagates(
    notes: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REGISTRY_BUCKET", "no-such-bucket")
    get_settings.cache_clear()
    note = Note()
    with pytest.raises(ClientError, match="NoSuchBucket"):  # SQS delivers the event again
        pipeline.run(note)
    assert note.recorded == {} and reports(notes) == []


def test_a_stage_added_once_runs_for_every_artifact(
    notes: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a scan (issue #36) would be: one entry in STAGES, after the type's checks."""
    seen: list[str] = []

    def scan(upload: pipeline.Upload[Any], files: Sequence[Fetched]) -> None:
        seen.extend(found.key for found in files)
        if any(b"EICAR" in found.read() for found in files):
            raise Refused("the upload holds a known test virus")

    monkeypatch.setattr(pipeline, "STAGES", [scan])
    put("notes/clean.txt", b"note: fine")
    put("notes/bad.txt", b"note: EICAR")
    put("notes/rude.txt", b"EICAR")
    clean, bad, rude = Note("notes/clean.txt"), Note("notes/bad.txt"), Note("notes/rude.txt")
    assert [pipeline.run(n) for n in (clean, bad, rude)] == ["verified", "failed", "failed"]
    assert bad.recorded["error"] == "the upload holds a known test virus"
    assert rude.recorded["error"].startswith("the note starts with")  # its own checks first
    assert seen == ["notes/clean.txt", "notes/bad.txt"]


def test_a_refusal_found_while_recording_is_recorded_as_one(
    notes: pytest.LogCaptureFixture,
) -> None:
    class Unservable(Note):
        def accept(self, result: str) -> str:
            raise Refused("the item is full")

    put("notes/n1.txt", b"note: hello")
    note = Unservable()
    assert pipeline.run(note) == "failed"
    assert note.recorded == {"status": "failed", "error": "the item is full"}


def test_a_reason_is_bounded_and_valid_utf8() -> None:
    reason = Refused("x" * 1_000 + "\udcff").reason
    assert len(reason) == pipeline.MAX_REASON and reason.endswith("\u2026")
    assert Refused("bad \udcff byte").reason == "bad \\udcff byte"
    reason.encode("utf-8")  # DynamoDB would refuse a lone surrogate


# ----- the object is not there: one rule -----------------------------------------------------


def test_a_missing_object_is_one_rule_for_every_call(aws: None) -> None:
    assert {"404", "NoSuchKey", "NotFound"} == objects.MISSING
    assert not objects.exists("nothing/here")  # HEAD: a bare 404
    with pytest.raises(objects.Gone), objects.fetch("nothing/here", 10):  # GET: NoSuchKey
        pass
    assert not objects.copy_if_unchanged("nothing/here", "copy/here", '"etag"', "text/plain")
    assert not objects.exists("copy/here")


def test_a_copy_is_of_the_bytes_fetched(aws: None) -> None:
    """(moto ignores CopySourceIfMatch: a changed source is S3's to refuse.)"""
    put("up/a", b"first")
    with objects.fetch("up/a", 100) as first:
        assert first.read() == b"first" and first.size == 5
        assert objects.copy_if_unchanged("up/a", "kept/a", first.etag, "text/plain")
    with objects.fetch("kept/a", 100) as kept:
        assert kept.read() == b"first" and kept.sha256 == first.sha256
