"""Fixtures for model tests: writable copies of the session's tiny bundle."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture
def bundle_copy(tiny_bundle_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny bundle directory that a test may damage."""
    return Path(shutil.copytree(tiny_bundle_dir, tmp_path / tiny_bundle_dir.name))


@pytest.fixture
def model_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Archives unpack here instead of the user's ~/.cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache
