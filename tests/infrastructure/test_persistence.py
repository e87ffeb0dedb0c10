"""The local stack's data directory (``infrastructure.persistence``) is private: the snapshot
holds the KMS key material that opens every stored secret."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from infrastructure import persistence


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The loosest umask: whatever the code does not restrict itself comes out 0666/0777."""
    previous = os.umask(0)
    yield
    os.umask(previous)


def test_a_new_data_dir_and_its_files_are_owner_only(tmp_path: Path, open_umask: None):
    directory = tmp_path / "nested" / "data"
    lock = persistence.lock_data_dir(directory)
    try:
        assert mode(directory) == 0o700
        assert mode(directory / persistence.LOCK_FILE) == 0o600
    finally:
        lock.close()


def test_an_existing_world_readable_data_dir_is_made_private_at_start(tmp_path: Path):
    directory = tmp_path / "data"
    directory.mkdir()
    directory.chmod(0o755)
    for name in (persistence.STATE_FILE, persistence.LOCK_FILE):
        (directory / name).write_bytes(b"made by an earlier version")
        (directory / name).chmod(0o644)
    lock = persistence.lock_data_dir(directory)
    try:
        assert mode(directory) == 0o700
        assert mode(directory / persistence.STATE_FILE) == 0o600
        assert mode(directory / persistence.LOCK_FILE) == 0o600
    finally:
        lock.close()


def test_a_shared_directory_is_refused_not_changed(tmp_path: Path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: chmod 0700 would lock everyone else out of it
    with pytest.raises(persistence.DataDirNotPrivate, match="REGISTRY_DATA_DIR"):
        persistence.lock_data_dir(shared)
    assert mode(shared) == 0o1777


def test_the_snapshot_is_written_owner_only_from_its_first_byte(
    tmp_path: Path, open_umask: None, monkeypatch: pytest.MonkeyPatch, aws: None
):
    """Saved through the real saver (moto's backends pickled); its temporary file is 0600
    from the moment it exists, not chmod-ed after the secrets are in it."""
    directory = tmp_path / "data"
    lock = persistence.lock_data_dir(directory)
    seen: list[int] = []
    fsync = os.fsync

    def watching_fsync(descriptor: int) -> None:
        info = os.fstat(descriptor)
        if stat.S_ISREG(info.st_mode):
            seen.append(stat.S_IMODE(info.st_mode))
        fsync(descriptor)

    created: list[int] = []
    os_open = os.open

    def watching_open(path: object, flags: int, *args: object, **kwargs: object) -> int:
        descriptor = os_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]
        if str(path).endswith(".tmp"):
            created.append(stat.S_IMODE(os.fstat(descriptor).st_mode))
        return descriptor

    monkeypatch.setattr(os, "fsync", watching_fsync)
    monkeypatch.setattr(os, "open", watching_open)
    try:
        previous = directory / persistence.STATE_FILE
        previous.write_bytes(b"an earlier, world-readable snapshot")
        previous.chmod(0o644)
        saver = persistence.Saver(directory, persistence.Gate(lambda *_: []))
        assert saver.save(force=True)
    finally:
        lock.close()
    assert created == [0o600]  # the temporary file, as created
    assert seen == [0o600]  # and once written, before the rename
    assert mode(directory / persistence.STATE_FILE) == 0o600
    assert sorted(p.name for p in directory.iterdir()) == [
        persistence.LOCK_FILE,
        persistence.STATE_FILE,
    ]
