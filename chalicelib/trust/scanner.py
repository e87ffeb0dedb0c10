"""The interface a scanner implements (Trivy is the first: ``trust.trivy``).

A scanner reads a module's files unpacked in a directory, offline (it never downloads a
remote module source, a rule update or anything else), within ``ScanLimits``, and returns a
``ScanReport``: ``passed`` or ``findings``, or ``failed`` with the reason when it could not
finish (over its time or memory, or the scanner broke). It raises only for the caller's
mistakes (no such directory), never for what the module holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from chalicelib.core.settings import get_settings
from chalicelib.trust.findings import ScanReport


@dataclass(frozen=True)
class ScanLimits:
    """A scan's bounds: wall time, the scanner process's memory, findings kept per version."""

    seconds: float = 60.0
    memory_bytes: int = 1024 * 1024 * 1024
    max_findings: int = 500

    @classmethod
    def from_settings(cls) -> ScanLimits:
        """The settings' bounds (``REGISTRY_SCAN_SECONDS``, ``REGISTRY_SCAN_MEMORY_MB``,
        ``REGISTRY_SCAN_MAX_FINDINGS``)."""
        settings = get_settings()
        return cls(
            seconds=settings.scan_seconds,
            memory_bytes=settings.scan_memory_mb * 1024 * 1024,
            max_findings=settings.scan_max_findings,
        )


class Scanner(Protocol):
    @property
    def name(self) -> str: ...

    def scan(self, directory: Path, limits: ScanLimits) -> ScanReport:
        """Scan the module unpacked at ``directory`` (findings' files relative to it)."""
