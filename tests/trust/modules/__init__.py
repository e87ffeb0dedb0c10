"""The scan tests' fixture modules, one folder each (read by the scanner as they are):
``insecure`` (a public-read bucket ACL, SSH open to the world, an unencrypted EBS volume, a
publicly accessible database), ``clean`` and ``formats`` (``.tofu``, ``.tf.json``, a local
submodule). The end-to-end tests publish the same ``insecure`` module."""

from __future__ import annotations

from pathlib import Path

MODULES = Path(__file__).parent
INSECURE_TF = (MODULES / "insecure" / "main.tf").read_text()
