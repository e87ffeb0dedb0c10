"""Keep the local stack's AWS state (DynamoDB, S3, SQS, KMS) in a data directory.

moto keeps everything in memory and has no persistence of its own in this version, and the
AWS APIs cannot carry everything across (KMS never exports key material, so secrets sealed
before a restart could not be opened after it). So the moto backends themselves are saved:
``<data dir>/moto-state.pickle`` holds a pickle of each service's backends (tables and items,
buckets and objects, queues and their messages, keys and aliases, log groups and their
events), written on a clean shutdown and every few seconds after a change, and loaded at
startup before anything is provisioned.

* Consistency: a ``Gate`` in front of moto lets requests run in parallel but a snapshot only
  between them, so it never holds half a request (a transaction, an upload and its S3 event);
  it waits for a quiet moment before it makes new requests wait.
* Cost: a snapshot is taken only after a request that may change state (reads, SQS receives
  and KMS crypto calls do not count); the S3 pickle is reused while no S3 request changed
  anything; the file is written only when its content changed, to a temporary file renamed
  over the old one, so a crash leaves the previous snapshot whole.
* One process per data directory: ``lock_data_dir`` takes an exclusive lock on
  ``<data dir>/.lock``.
* Secrecy: the snapshot holds the KMS key material, so with it alone every sealed secret
  opens: the directory is 0700 and the files 0600 (created so, never briefly wider).
* A snapshot is trusted like the checkout it sits in (it is a pickle); it is bound to moto's
  class layout: after a moto upgrade that changed it, loading fails with a message telling how
  to start empty rather than silently dropping the data.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import pickle
import stat
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infrastructure.s3_auth import ENVIRON_SERVICE

# CloudWatch Logs: the audit trail's exported log group (chalicelib.audit.export).
SERVICES = ("dynamodb", "kms", "logs", "s3", "sqs")
STATE_FILE = "moto-state.pickle"
LOCK_FILE = ".lock"
FORMAT = 1
# The snapshot holds every table, archive and the KMS key material that opens the stored
# secrets (VCS tokens, SMTP passwords): readable by its owner only.
DIR_MODE = 0o700
FILE_MODE = 0o600

log = logging.getLogger("registry.persistence")

# Operations that never change a backend (everything else marks its service dirty).
READ_ONLY_TARGETS = {
    "dynamodb": {
        "BatchGetItem",
        "DescribeContinuousBackups",
        "DescribeTable",
        "DescribeTimeToLive",
        "GetItem",
        "ListTables",
        "ListTagsOfResource",
        "Query",
        "Scan",
        "TransactGetItems",
        # DynamoDB Streams (signed as dynamodb): the local stack's stream poller reads the
        # module-downloads stream twice a second, which must not make a snapshot each time.
        "DescribeStream",
        "GetRecords",
        "GetShardIterator",
        "ListStreams",
    },
    "sqs": {"GetQueueAttributes", "GetQueueUrl", "ListQueues", "ReceiveMessage"},
    "logs": {"DescribeLogGroups", "DescribeLogStreams", "FilterLogEvents", "GetLogEvents"},
    "kms": {
        "Decrypt",
        "DescribeKey",
        "Encrypt",
        "GenerateDataKey",
        "GenerateDataKeyWithoutPlaintext",
        "GetKeyPolicy",
        "GetKeyRotationStatus",
        "GetPublicKey",
        "ListAliases",
        "ListKeys",
        "Sign",
        "Verify",
    },
}


class DataDirInUse(RuntimeError):
    pass


class DataDirNotPrivate(RuntimeError):
    pass


def _make_private(directory: Path) -> None:
    """Owner-only modes on the directory and the snapshot, also on those made before (0755
    and 0644 until then). A shared directory (sticky, like /tmp) or someone else's is
    refused rather than changed."""
    info = directory.stat()
    if info.st_mode & stat.S_ISVTX or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
        raise DataDirNotPrivate(
            f"{directory} is shared or not yours; point REGISTRY_DATA_DIR at a directory of its"
            " own (it holds secrets)"
        )
    directory.chmod(DIR_MODE)
    for name in (STATE_FILE, LOCK_FILE):
        with contextlib.suppress(FileNotFoundError):
            (directory / name).chmod(FILE_MODE)


def lock_data_dir(directory: Path) -> Any:
    """Create ``directory`` (owner only, see ``DIR_MODE``) and lock it for this process;
    returns the open lock file (keep it open as long as the directory is in use)."""
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    _make_private(directory)
    descriptor = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
    handle = os.fdopen(descriptor, "a+")
    try:
        import fcntl
    except ImportError:  # not POSIX: no locking
        return handle
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise DataDirInUse(
            f"another local registry is using {directory}; stop it or set REGISTRY_DATA_DIR"
        ) from None
    for stale in directory.glob(f".{STATE_FILE}.*.tmp"):  # a save cut short by a crash
        stale.unlink(missing_ok=True)
    return handle


# ----- pickling moto's backends -------------------------------------------------------------


def _load_private_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives import serialization

    return serialization.load_pem_private_key(pem, password=None)


class _Pickler(pickle.Pickler):
    """Pickles moto's backends: locks become fresh locks, private keys (KMS) PEM."""

    LOCKS = {type(threading.Lock()): threading.Lock, type(threading.RLock()): threading.RLock}

    def reducer_override(self, obj: Any) -> Any:
        factory = self.LOCKS.get(type(obj))
        if factory is not None:
            return factory, ()
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

        if isinstance(
            obj, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey)
        ):
            pem = obj.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            return _load_private_key, (pem,)
        return NotImplemented


def _backends(service: str) -> Any:
    from moto.backends import get_backend

    return get_backend(service)  # type: ignore[call-overload]


# What BackendDict itself sets; anything else on one is service state (S3's bucket_accounts,
# the global bucket namespace that says which account holds which bucket).
_BACKEND_DICT_ATTRIBUTES = {
    "backend",
    "service_name",
    "_use_boto3_regions",
    "_additional_regions",
    "_id",
}


def dump_service(service: str) -> bytes:
    """One service's backends, every account and region, and the service-wide state."""
    backends = _backends(service)
    state = {
        "shared": {k: v for k, v in vars(backends).items() if k not in _BACKEND_DICT_ATTRIBUTES},
        "accounts": {account: dict(regions.items()) for account, regions in backends.items()},
    }
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(state)
    return buffer.getvalue()


def load_service(service: str, blob: bytes) -> None:
    backends = _backends(service)
    state = pickle.loads(blob)
    for name, value in state["shared"].items():
        setattr(backends, name, value)
    for account, regions in state["accounts"].items():
        account_backends = backends[account]
        for region, backend in regions.items():
            account_backends[region] = backend


class SnapshotError(RuntimeError):
    pass


def restore(directory: Path) -> datetime | None:
    """Load the snapshot in ``directory`` into moto; when it was saved, or None if none."""
    path = directory / STATE_FILE
    if not path.exists():
        return None
    snapshot: Any = None
    try:
        snapshot = pickle.loads(path.read_bytes())
        if snapshot.get("format") != FORMAT:
            raise ValueError(f"unknown snapshot format {snapshot.get('format')!r}")
        for service, blob in snapshot["services"].items():
            load_service(service, blob)
    except Exception as exc:  # noqa: BLE001 - reported with what to do about it
        import moto

        raise SnapshotError(
            f"cannot restore the local state from {path} (saved by moto"
            f" {snapshot.get('moto', '?') if isinstance(snapshot, dict) else '?'},"
            f" this is moto {moto.__version__}): {exc!r}. Move the directory away, or start"
            " empty with REGISTRY_DATA_DIR= (nothing kept) or by deleting it."
        ) from exc
    return snapshot.get("saved_at")


# ----- the gate and the saver ---------------------------------------------------------------


class Gate:
    """WSGI middleware: requests share the gate, a snapshot takes it alone (writer first).

    Also notes which services a request may have changed (``dirty``)."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self._condition = threading.Condition()
        self._active = 0
        self._writer = False
        self._writers_waiting = 0
        self.dirty: set[str] = set()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        with self._condition:
            while self._writer or self._writers_waiting:
                self._condition.wait()
            self._active += 1
        try:
            return self.app(environ, start_response)
        finally:
            changes = _changes(environ)
            with self._condition:
                self.dirty |= changes
                self._active -= 1
                if not self._active:
                    self._condition.notify_all()

    def exclusive(self) -> _Exclusive:
        return _Exclusive(self)


class _Exclusive:
    """First waits ``PATIENCE`` seconds for a moment without requests, letting new ones in
    (an SQS long poll holds the gate for a second, and requests queued behind a snapshot
    would wait for it); then stops letting new requests in until the running ones end."""

    PATIENCE = 2.0

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def __enter__(self) -> Gate:
        gate = self.gate
        deadline = time.monotonic() + self.PATIENCE
        with gate._condition:
            while (gate._writer or gate._active) and time.monotonic() < deadline:
                gate._condition.wait(max(0.0, deadline - time.monotonic()))
            gate._writers_waiting += 1
            while gate._writer or gate._active:
                gate._condition.wait()
            gate._writers_waiting -= 1
            gate._writer = True
        return gate

    def __exit__(self, *_: Any) -> None:
        with self.gate._condition:
            self.gate._writer = False
            self.gate._condition.notify_all()


def _changes(environ: dict[str, Any]) -> set[str]:
    """The services a request may have changed (S3 writes can also send SQS messages)."""
    service = environ.get(ENVIRON_SERVICE)
    if service is None:  # not a signed AWS request (refused, or moto's own pages)
        return set()
    if service == "s3":
        read_only = environ.get("REQUEST_METHOD") in ("GET", "HEAD", "OPTIONS")
        return set() if read_only else {"s3", "sqs"}
    target = str(environ.get("HTTP_X_AMZ_TARGET") or "")
    operation = target.rsplit(".", 1)[-1]
    if operation and operation in READ_ONLY_TARGETS.get(service, ()):
        return set()
    return {service} if service in SERVICES else set(SERVICES)


class Saver(threading.Thread):
    """Saves the snapshot after changes (every ``interval`` seconds) and on ``stop()``."""

    def __init__(
        self,
        directory: Path,
        gate: Gate,
        interval: float = 5.0,
        before_save: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(name="state-saver", daemon=True)
        self.directory = directory
        self.gate = gate
        self.interval = interval
        # Run before a snapshot that will be taken (the local stack deletes expired items,
        # so the file never keeps what DynamoDB would have deleted); its own requests go
        # through the gate, so it runs outside the exclusive section.
        self.before_save = before_save
        self.stopping = threading.Event()
        self._blobs: dict[str, bytes] = {}
        self._digest = ""
        self._save_lock = threading.Lock()
        self.saves = 0

    def run(self) -> None:
        while not self.stopping.wait(self.interval):
            try:
                self.save()
            except Exception:  # noqa: BLE001 - keep serving; the next round tries again
                log.exception("saving the local state to %s failed", self.directory)

    def save(self, force: bool = False) -> bool:
        """Snapshot the services changed since the last save; True when the file changed."""
        with self._save_lock:
            if self.before_save is not None and (force or not self._blobs or self.gate.dirty):
                self.before_save()
            with self.gate.exclusive():
                dirty = set(SERVICES) if force or not self._blobs else set(self.gate.dirty)
                if not dirty:
                    return False
                started = time.monotonic()
                for service in SERVICES:
                    if service in dirty or service not in self._blobs:
                        self._blobs[service] = dump_service(service)
                self.gate.dirty.clear()
            snapshot = {
                "format": FORMAT,
                "moto": _moto_version(),
                "saved_at": datetime.now(UTC),
                "services": dict(self._blobs),
            }
            digest = hashlib.sha256(
                b"".join(hashlib.sha256(self._blobs[s]).digest() for s in SERVICES)
            ).hexdigest()
            if digest == self._digest:
                return False
            data = pickle.dumps(snapshot, protocol=pickle.HIGHEST_PROTOCOL)
            _write_atomically(self.directory / STATE_FILE, data)
            self._digest = digest
            self.saves += 1
            log.debug(
                "saved %d bytes of state in %.0f ms",
                len(data),
                (time.monotonic() - started) * 1000,
            )
            return True

    def stop(self) -> None:
        """Stop the periodic saves and save once more (everything, to be sure)."""
        self.stopping.set()
        if self.is_alive():
            self.join(timeout=self.interval + 5)
        self.save(force=True)


def _moto_version() -> str:
    import moto

    return str(moto.__version__)


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    # Created owner-only (never world-readable, not even for a moment); O_EXCL: a link
    # planted at that name is not followed.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    os.fchmod(descriptor, FILE_MODE)  # a umask can only take bits away; be exact anyway
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    try:  # the rename itself
        directory = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(directory)
    except OSError:
        pass
    finally:
        os.close(directory)
