"""The reproducibility block of a report: which model, TM state, options and software."""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Mapping
from importlib import metadata

PACKAGES: tuple[str, ...] = (
    "tm-guide",
    "ctranslate2",
    "sentencepiece",
    "sacrebleu",
    "numpy",
    "rapidfuzz",
    "eflomal",
    "whoosh",
    "sqlalchemy",
    "torch",
    "matplotlib",
)


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed versions (None where a package is not installed, e.g. an optional extra)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    if versions.get("tm-guide") is None:  # running from a checkout that is not installed
        import tm_guide

        versions["tm-guide"] = tm_guide.__version__
    return versions


def model_checksum(files: Mapping[str, str]) -> str:
    """One sha256 over the bundle's per-file checksums from its model card (name-sorted)."""
    joined = json.dumps(dict(sorted(files.items())), sort_keys=True).encode()
    return hashlib.sha256(joined).hexdigest()


def machine() -> dict[str, str | int | None]:
    """What the timings were taken on."""
    cpu = platform.processor() or None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "system": platform.system(),
        "machine": platform.machine(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
    }
