"""One-file bundle archives (tar.gz or zip) with a sha256 sidecar, and their unpacking for loading.

An archive is what gets copied between machines; its .sha256 file (sha256sum format) lets both
people and `Bundle.load` notice a truncated or altered download before anything is unpacked.
Archives unpack into a cache directory named after their checksum, so loading the same archive
again costs no unpacking.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tm_guide.errors import InvalidInput, ModelError
from tm_guide.model.card import CARD_FILE, ModelCard, sha256_file, verify_files

ARCHIVE_FORMATS = ("tar.gz", "zip")
CHECKSUM_SUFFIX = ".sha256"


@dataclass(frozen=True)
class ExportOptions:
    """What `tm-guide model export` needs."""

    bundle_dir: Path
    output: Path  # archive path; its suffix (.tar.gz, .tgz or .zip) picks the format
    force: bool = False


@dataclass(frozen=True)
class ExportResult:
    """The archive written, its .sha256 file and the checksum, which a download is checked
    against."""

    archive: Path
    checksum_file: Path
    sha256: str


def archive_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    if name.endswith(".zip"):
        return "zip"
    raise InvalidInput(f"{path}: an archive name must end in .tar.gz, .tgz or .zip", field="output")


def export_bundle(options: ExportOptions) -> ExportResult:
    """Write the bundle as one archive plus `<archive>.sha256`; its files are checked against
    the card's checksums first (a damaged bundle is not shipped)."""
    fmt = archive_format(options.output)
    bundle_dir = Path(options.bundle_dir)
    card = ModelCard.read(bundle_dir)
    verify_files(bundle_dir, card)
    output = options.output
    if output.exists() and not options.force:
        raise InvalidInput(f"{output}: already exists (use --force to replace it)", field="output")
    output.parent.mkdir(parents=True, exist_ok=True)
    top = bundle_dir.resolve().name
    names = [CARD_FILE, *sorted(card.files)]
    # Written beside the target and renamed at the end (no half archive under the real name);
    # not mkstemp, whose 0600 mode would make the archive unreadable to others.
    tmp = output.with_name(f".{output.name}.{os.getpid()}.partial")
    try:
        if fmt == "tar.gz":
            with tarfile.open(tmp, "w:gz") as tar:
                for name in names:
                    tar.add(bundle_dir / name, arcname=f"{top}/{name}", recursive=False)
        else:
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                for name in names:
                    zf.write(bundle_dir / name, arcname=f"{top}/{name}")
        digest = sha256_file(tmp)
        tmp.replace(output)
    finally:
        tmp.unlink(missing_ok=True)
    checksum_file = checksum_path(output)
    checksum_file.write_text(f"{digest}  {output.name}\n", encoding="utf-8")
    return ExportResult(output, checksum_file, digest)


def checksum_path(archive: Path) -> Path:
    return archive.with_name(archive.name + CHECKSUM_SUFFIX)


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/tm-guide/bundles, else ~/.cache/tm-guide/bundles."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".cache"
    return root / "tm-guide" / "bundles"


def unpack_archive(archive: Path, cache_dir: Path | None = None) -> Path:
    """Check the archive against its .sha256 file (when present) and unpack it into the cache.

    Returns the bundle directory inside the cache. Without a .sha256 file the archive is still
    accepted: every file inside is verified against model_card.json when the bundle loads.
    """
    fmt = _detect_format(archive)
    digest = sha256_file(archive)
    sidecar = checksum_path(archive)
    if sidecar.is_file():
        expected = _read_checksum(sidecar)
        if expected != digest:
            raise ModelError(
                f"{archive}: checksum mismatch (sha256 {digest}, {sidecar.name} says {expected}); "
                "the archive is corrupted or incomplete"
            )
    cache = (cache_dir or default_cache_dir()) / digest
    if not cache.is_dir():
        cache.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".{digest[:12]}.", dir=cache.parent) as tmp:
            staging = Path(tmp) / "bundle"
            staging.mkdir()
            _extract(archive, fmt, staging)
            try:
                staging.rename(cache)
            except OSError:
                if not cache.is_dir():  # not just another process that unpacked it first
                    raise
    return _bundle_root(cache, archive)


def _detect_format(archive: Path) -> str:
    if zipfile.is_zipfile(archive):
        return "zip"
    try:
        if tarfile.is_tarfile(archive):
            return "tar.gz"
    except OSError:
        pass
    raise ModelError(f"{archive}: not a bundle directory, tar.gz or zip archive")


def _read_checksum(sidecar: Path) -> str:
    text = sidecar.read_text(encoding="utf-8", errors="replace").split()
    if not text or len(text[0]) != 64:
        raise ModelError(f"{sidecar}: expected '<sha256>  <archive name>' (sha256sum format)")
    return text[0].lower()


def _extract(archive: Path, fmt: str, target: Path) -> None:
    try:
        if fmt == "tar.gz":
            with tarfile.open(archive, "r:*") as tar:
                for member in tar.getmembers():
                    _check_member_name(archive, member.name)
                    if not (member.isfile() or member.isdir()):
                        raise ModelError(f"{archive}: {member.name}: links are not allowed")
                tar.extractall(target, filter="data")
        else:
            with zipfile.ZipFile(archive) as zf:
                for name in zf.namelist():
                    _check_member_name(archive, name)
                zf.extractall(target)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        shutil.rmtree(target, ignore_errors=True)
        raise ModelError(f"{archive}: damaged archive ({exc})") from exc


def _check_member_name(archive: Path, name: str) -> None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise ModelError(f"{archive}: unsafe path {name!r} in archive")


def _bundle_root(unpacked: Path, archive: Path) -> Path:
    """The directory holding model_card.json: the top level, or its single subdirectory."""
    if (unpacked / CARD_FILE).is_file():
        return unpacked
    subdirs = [p for p in unpacked.iterdir() if p.is_dir()]
    if len(subdirs) == 1 and (subdirs[0] / CARD_FILE).is_file():
        return subdirs[0]
    raise ModelError(f"{archive}: no {CARD_FILE} in the archive; not a model bundle")
