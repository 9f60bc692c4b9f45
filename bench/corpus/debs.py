"""Fetch Debian packages into a local cache and unpack them without installing anything."""

from __future__ import annotations

import subprocess
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path


def cached_deb(cache: Path, package: str) -> Path | None:
    """The cached .deb of a package, if one was downloaded before."""
    found = sorted(cache.glob(f"{package}_*.deb"))
    return found[-1] if found else None


def download(packages: list[str], cache: Path) -> dict[str, Path]:
    """Download the packages not yet in the cache with `apt-get download` (one call for all).

    Why one call: apt fetches in parallel and a run over a hundred packages takes seconds.
    """
    cache.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if cached_deb(cache, p) is None]
    if missing:
        subprocess.run(["apt-get", "download", *missing], cwd=cache, check=True)
    result = {}
    for package in packages:
        deb = cached_deb(cache, package)
        if deb is None:
            raise FileNotFoundError(
                f"apt-get download left no .deb for package {package!r} in {cache}"
            )
        result[package] = deb
    return result


def extract(deb: Path, target: Path) -> Path:
    """Unpack a .deb with `dpkg-deb -x` once (a marker file records completion)."""
    marker = target / ".extracted"
    if not marker.exists():
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(target)], check=True)
        marker.write_text(deb.name)
    return target


def iter_members(deb: Path, wanted: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    """Stream the files of a .deb whose path passes `wanted`, without unpacking the rest.

    Why: the catalogue packages hold hundreds of MB of images and other languages we never read.
    """
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
            for member in archive:
                if member.isfile() and wanted(member.name):
                    handle = archive.extractfile(member)
                    if handle is not None:
                        yield member.name, handle.read()
    finally:
        proc.stdout.close()
        if proc.wait() != 0:
            raise RuntimeError(f"dpkg-deb --fsys-tarfile failed on {deb}")
