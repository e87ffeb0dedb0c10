"""Exports and imports as jobs: the route records the job and queues it on the transfers
queue (``artifacts.queue.transfer``, kinds ``bundle-export`` and ``bundle-import``); the
Transfers function runs it (``run``), writing the bundle to, or reading it from,
``bundles/files/<job id>.tar``.

A job's state is one small JSON object, ``bundles/jobs/<job id>.json`` (a job is written by
one runner at a time: its route, then its queue message): ``status`` (``awaiting-upload``,
``queued``, ``running``, ``finished``, ``failed``), what it was asked, its per-entry report,
its error, and an export's ``progress``: its multipart upload's id, the parts sent (number,
ETag, bytes), the entries written (each with where it ends in the bundle) and the plan they
came from. SQS delivers a message at least once: a finished or failed job is not run again.

An export resumes: a job found ``running`` (its runner crashed or timed out, or the message
came twice) lists the entries that end within the parts already sent, writes the bundle
again from the end of the last of them, dropping the bytes those parts hold, and sends the
next part on; only when its plan changed since (a version published or removed) does it
start over. A run that ``stop`` tells to stop (the Transfers function: its time nearly
spent) stops after a part and queues the job again. An import found ``running`` runs again
from the start: it skips what it created, and resumes a module version it created whose
archive it had not yet written.

Audit events (site-wide): the site admin makes an import (``created``) and starts an
export or import (``started``), the registry finishes (``finished`` / ``failed``, as System,
naming the job). What an import creates is recorded as System too, naming the job (and, in
each event's meta, the site admin who started it): the registry makes it, from a bundle.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from chalicelib.accounts import authorization
from chalicelib.artifacts import objects, queue
from chalicelib.bundles import export, manifest
from chalicelib.bundles.manifest import BadBundle
from chalicelib.core.api.errors import ApiError, NotFound, Unprocessable
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import iso, new_id, now

log = logging.getLogger("registry.bundles")

PREFIX = "bundles/"
JOB_ID = re.compile(r"^b(?:exp|imp)-[0-9A-Za-z]{16}$")
EXPORT, IMPORT = queue.BUNDLE_EXPORT, queue.BUNDLE_IMPORT
AWAITING_UPLOAD, QUEUED, RUNNING, FINISHED, FAILED = (
    "awaiting-upload",
    "queued",
    "running",
    "finished",
    "failed",
)


@dataclass
class Job:
    id: str
    kind: str
    status: str
    user_id: str
    token_id: str
    created_at: str
    updated_at: str
    source: str = ""
    selection: dict[str, Any] = field(default_factory=dict)
    report: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    size: int | None = None
    # A running export's multipart upload, its parts and the entries written (``_export``).
    progress: dict[str, Any] = field(default_factory=dict)

    @property
    def bundle_key(self) -> str:
        return f"{PREFIX}files/{self.id}.tar"

    @property
    def principal(self) -> Principal:
        return Principal("user", self.user_id, self.token_id)


def _key(job_id: str) -> str:
    return f"{PREFIX}jobs/{job_id}.json"


def save(job: Job) -> Job:
    job.updated_at = iso(now())
    objects.put(_key(job.id), json.dumps(asdict(job)).encode(), "application/json")
    return job


def load(job_id: str, kind: str) -> Job:
    """The job; 404 when there is none of that kind with that id."""
    missing = NotFound(f"{kind} {job_id[:64]!r} not found")
    if not JOB_ID.match(job_id):
        raise missing
    try:
        with objects.fetch(_key(job_id), 1024 * 1024) as fetched:
            job = Job(**json.loads(fetched.read()))
    except objects.Gone:
        raise missing from None
    if job.kind != kind:
        raise missing
    return job


def _event(principal: Principal | None, job: Job, action: str, **meta: Any) -> events.Event:
    return events.event(
        principal,
        organization=None,
        resource_type=job.kind,
        resource_id=job.id,
        action=action,
        meta=meta,
    )


def _new(principal: Principal, kind: str, prefix: str, status: str, **extra: Any) -> Job:
    moment = iso(now())
    return Job(
        id=new_id(prefix),
        kind=kind,
        status=status,
        user_id=principal.id,
        token_id=principal.token_id,
        created_at=moment,
        updated_at=moment,
        **extra,
    )


# ----- starting ---------------------------------------------------------------------------------


def selection_document(selection: export.Selection) -> dict[str, Any]:
    return {
        "modules": [{"address": m.address, "version": m.constraint} for m in selection.modules],
        "providers": [
            {"address": p.address, "version": p.constraint, "platforms": list(p.platforms)}
            for p in selection.providers
        ],
    }


def _selection(document: dict[str, Any]) -> export.Selection:
    return export.Selection(
        modules=tuple(export.ModuleChoice(m["address"], m["version"]) for m in document["modules"]),
        providers=tuple(
            export.ProviderChoice(p["address"], p["version"], tuple(p["platforms"]))
            for p in document["providers"]
        ),
    )


def start_export(principal: Principal, selection: export.Selection, source: str) -> Job:
    job = _new(
        principal,
        EXPORT,
        "bexp",
        QUEUED,
        source=source,
        selection=selection_document(selection),
    )
    save(job)
    queue.transfer(EXPORT, job=job.id)
    trail.record(_event(principal, job, "started", **_counts(selection)))
    return job


def _counts(selection: export.Selection) -> dict[str, Any]:
    return {
        "modules": [m.address for m in selection.modules],
        "providers": [p.address for p in selection.providers],
    }


def new_import(principal: Principal) -> Job:
    """An import waiting for its bundle (uploaded to ``upload_link``)."""
    job = save(_new(principal, IMPORT, "bimp", AWAITING_UPLOAD))
    trail.record(_event(principal, job, "created"))
    return job


def start_import(principal: Principal, job_id: str) -> Job:
    job = load(job_id, IMPORT)
    if job.status != AWAITING_UPLOAD:
        raise Unprocessable(f"{job.id} is {job.status}: an import starts once")
    if not objects.exists(job.bundle_key):
        raise Unprocessable(f"{job.id} has no bundle yet: upload it to its upload link first")
    job.status = QUEUED
    job.user_id, job.token_id = principal.id, principal.token_id
    save(job)
    queue.transfer(IMPORT, job=job.id)
    trail.record(_event(principal, job, "started"))
    return job


def upload_link(job: Job) -> str | None:
    return objects.presigned_upload_url(job.bundle_key) if job.status == AWAITING_UPLOAD else None


def download_link(job: Job) -> str | None:
    if job.kind == EXPORT and job.status == FINISHED:
        return objects.presigned_download_url(job.bundle_key)
    return None


# ----- running ----------------------------------------------------------------------------------


class Stopped(Exception):
    """An export stopped after a part (its time budget): queued again, it goes on from there."""


def never(parts: int) -> bool:
    """No time bound: the job runs to its end (the local stack, the command)."""
    return False


def run(message: dict[str, Any], stop: Callable[[int], bool] = never) -> str:
    """Run the queued job a message names; its status when this run ends. ``stop``: told how
    many parts this run has sent, whether an export stops there (and is queued again)."""
    kind = str(message.get("kind"))
    try:
        job = load(str(message.get("job") or ""), kind)
    except NotFound:
        log.warning("%s job %s not found: dropped", kind, message.get("job"))
        return "gone"
    if job.status in (FINISHED, FAILED, AWAITING_UPLOAD):
        return job.status
    job.status = RUNNING
    save(job)
    # tarfile and PGPy load with the first job, not with the admin routes' cold start.
    from chalicelib.bundles import verify

    try:
        if not authorization.is_site_admin(job.principal):
            raise Unprocessable("the job's site admin is no longer a site admin")
        if kind == EXPORT:
            _export(job, stop)
        else:
            _import(job)
    except Stopped:
        save(job)
        queue.transfer(kind, job=job.id)
        log.info("%s %s stopped after part %s: queued again", kind, job.id, _parts(job))
        return job.status
    except (export.BadSelection, export.Changed, BadBundle, verify.Refused, Unprocessable) as exc:
        job.status, job.error = FAILED, str(exc)[:4000]
        if isinstance(exc, verify.Refused):
            job.report = [{"result": "refused", "reason": p} for p in exc.problems]
    except ApiError as exc:  # a service's refusal (a 404, a 403): the job's answer, no retry
        job.status, job.error = FAILED, (str(exc) or exc.title)[:4000]
    else:
        job.status = FINISHED
    if job.status == FAILED and job.progress.get("upload"):
        _abort(job)
    job.progress = {}
    save(job)
    meta = {"status": job.status, "error": job.error, **_tally(job.report)}
    trail.record(_event(None, job, job.status, **meta))
    log.info("%s %s %s", kind, job.id, job.status)
    return job.status


def _tally(report: list[dict[str, Any]]) -> dict[str, int]:
    results = [str(r.get("result")) for r in report]
    return {name: results.count(name) for name in ("created", "skipped", "refused", "exported")}


def _parts(job: Job) -> int:
    return len(job.progress.get("parts") or [])


def _abort(job: Job) -> None:
    """Drop the export's upload and its parts (gone already: nothing to drop)."""
    from botocore.exceptions import ClientError

    from chalicelib.bundles.tarstream import S3Sink

    try:
        S3Sink(job.bundle_key, job.progress["upload"], job.progress.get("parts") or ()).abort()
    except ClientError as exc:
        log.warning("export %s: its upload could not be aborted: %s", job.id, exc)


def _export(job: Job, stop: Callable[[int], bool]) -> None:
    """Write the job's bundle, from where an earlier run stopped when it did (``progress``);
    ``Stopped`` when ``stop`` says so after a part."""
    from chalicelib.bundles.tarstream import S3Sink, TarWriter

    the_plan = export.plan(job.principal, _selection(job.selection))
    progress = job.progress
    if progress.get("upload") and progress.get("plan") != the_plan.labels:
        log.info("export %s: its plan changed since it started; starting over", job.id)
        _abort(job)
        progress = {}
    if not progress.get("upload"):
        progress = {"upload": None, "parts": [], "entries": [], "plan": the_plan.labels}
        progress["created-at"] = iso(now())
    sent = sum(int(p["size"]) for p in progress["parts"])
    kept = [e for e in progress["entries"] if int(e["end"]) <= sent]
    written = [manifest.entry_from_document(e["entry"]) for e in kept]
    position = int(kept[-1]["end"]) if kept else 0
    job.progress = progress
    job.report = [{**_entry_document(entry), "result": "exported"} for entry in written]
    sent_here = 0

    def part_sent(sink: S3Sink) -> None:
        nonlocal sent_here
        sent_here += 1
        progress["upload"], progress["parts"] = sink.upload_id, list(sink.parts)
        save(job)
        if stop(sent_here):
            raise Stopped

    sink = S3Sink(
        job.bundle_key, progress["upload"], progress["parts"], position, on_part=part_sent
    )
    progress["upload"] = sink.upload_id
    progress["entries"] = kept
    save(job)  # the upload's id, before its first part: a crash leaves nothing unnamed
    writer = TarWriter(sink)
    entries = export.write(the_plan, writer, job.source, progress["created-at"], written)
    for entry in entries:
        progress["entries"].append({"entry": entry.document(), "end": sink.tell()})
        job.report.append({**_entry_document(entry), "result": "exported"})
    writer.close()
    sink.finish()
    job.size = sink.size


def _entry_document(entry: Any) -> dict[str, Any]:
    out = {"kind": entry.kind, "address": entry.address}
    if entry.version:
        out["version"] = entry.version
    return out


def _import(job: Job) -> None:
    from chalicelib.bundles import imports, verify
    from chalicelib.bundles.tarstream import open_body

    etag = objects_etag(job.bundle_key)
    checked = verify.check(verify.read(open_body(job.bundle_key, etag)))
    # What it creates, the registry creates from the bundle: System, naming the job.
    acting = {"bundle-job": job.id, "started-by": job.user_id}
    with events.as_system(job.id, f"bundle import {job.id}", **acting):
        outcomes = imports.run(job.principal, checked, lambda: open_body(job.bundle_key, etag))
    job.report = [o.document() for o in outcomes]


def objects_etag(key: str) -> str:
    from chalicelib.core.data.aws import client

    return str(client("s3").head_object(Bucket=objects.bucket(), Key=key)["ETag"])
