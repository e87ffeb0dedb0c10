"""Exports and imports as jobs: the route records the job and queues it (``artifacts.queue``,
kinds ``bundle-export`` and ``bundle-import``); the ingest function runs it (``run``),
writing the bundle to, or reading it from, ``bundles/files/<job id>.tar``.

A job's state is one small JSON object, ``bundles/jobs/<job id>.json`` (a job is written by
one runner at a time: its route, then its queue message): ``status`` (``awaiting-upload``,
``queued``, ``running``, ``finished``, ``failed``), what it was asked, its per-entry report
and its error. SQS delivers a message at least once: a finished or failed job is not run
again, and a job found ``running`` (its runner crashed) runs again from the start (an
export rewrites its object; an import skips what it created, and resumes a module version
it created whose archive it had not yet written).

Audit events (site-wide): the site admin makes an import (``created``) and starts an
export or import (``started``), the registry finishes
(``finished`` / ``failed``, as System, naming the job).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from chalicelib.accounts import authorization
from chalicelib.artifacts import objects, queue
from chalicelib.bundles import export
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
    queue.enqueue(EXPORT, job=job.id)
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
    queue.enqueue(IMPORT, job=job.id)
    trail.record(_event(principal, job, "started"))
    return job


def upload_link(job: Job) -> str | None:
    return objects.presigned_upload_url(job.bundle_key) if job.status == AWAITING_UPLOAD else None


def download_link(job: Job) -> str | None:
    if job.kind == EXPORT and job.status == FINISHED:
        return objects.presigned_download_url(job.bundle_key)
    return None


# ----- running ----------------------------------------------------------------------------------


def run(message: dict[str, Any]) -> str:
    """Run the queued job a message names; its final status."""
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
            _export(job)
        else:
            _import(job)
    except (export.BadSelection, export.Changed, BadBundle, verify.Refused, Unprocessable) as exc:
        job.status, job.error = FAILED, str(exc)[:4000]
        if isinstance(exc, verify.Refused):
            job.report = [{"result": "refused", "reason": p} for p in exc.problems]
    except ApiError as exc:  # a service's refusal (a 404, a 403): the job's answer, no retry
        job.status, job.error = FAILED, (str(exc) or exc.title)[:4000]
    else:
        job.status = FINISHED
    save(job)
    meta = {"status": job.status, "error": job.error, **_tally(job.report)}
    trail.record(_event(None, job, job.status, **meta))
    log.info("%s %s %s", kind, job.id, job.status)
    return job.status


def _tally(report: list[dict[str, Any]]) -> dict[str, int]:
    results = [str(r.get("result")) for r in report]
    return {name: results.count(name) for name in ("created", "skipped", "refused", "exported")}


def _export(job: Job) -> None:
    from chalicelib.bundles.tarstream import S3Sink, TarWriter

    the_plan = export.plan(job.principal, _selection(job.selection))
    sink = S3Sink(job.bundle_key)
    try:
        writer = TarWriter(sink)
        for entry in export.write(the_plan, writer, job.source):
            job.report.append({**_entry_document(entry), "result": "exported"})
        writer.close()
        sink.finish()
    except BaseException:
        sink.abort()
        raise
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
    outcomes = imports.run(job.principal, checked, lambda: open_body(job.bundle_key, etag))
    job.report = [o.document() for o in outcomes]


def objects_etag(key: str) -> str:
    from chalicelib.core.data.aws import client

    return str(client("s3").head_object(Bucket=objects.bucket(), Key=key)["ETag"])
