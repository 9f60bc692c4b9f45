"""`tm-guide model export`: one archive plus its checksum; loading an archive verifies it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tm_guide.errors import InvalidInput, ModelError
from tm_guide.model import Bundle
from tm_guide.model.archive import ExportOptions, checksum_path, export_bundle
from tm_guide.model.card import sha256_file


def _first_translation(bundle: Bundle, text: str) -> list[str]:
    tokens = bundle.source_input(bundle.encode_source(text))
    return bundle.translator.translate_batch([tokens], max_decoding_length=8)[0].hypotheses[0]


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_export_and_load_round_trip(
    tiny_bundle: Bundle, tmp_path: Path, model_cache: Path, suffix: str
) -> None:
    result = export_bundle(ExportOptions(tiny_bundle.path, tmp_path / f"tiny{suffix}"))
    assert result.sha256 == sha256_file(result.archive)
    assert checksum_path(result.archive).read_text() == f"{result.sha256}  tiny{suffix}\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p != model_cache) == sorted(
        [f"tiny{suffix}", f"tiny{suffix}.sha256"]
    )
    assert (
        result.archive.stat().st_mode & 0o044
        == checksum_path(result.archive).stat().st_mode & 0o044
    )

    loaded = Bundle.load(result.archive, intra_threads=1)
    assert loaded.path.is_relative_to(model_cache)
    assert loaded.card == tiny_bundle.card
    assert loaded.tokenizer_id == tiny_bundle.tokenizer_id
    text = "Insert a new column."
    assert _first_translation(loaded, text) == _first_translation(tiny_bundle, text)

    again = Bundle.load(result.archive, intra_threads=1)  # unpacked once, reused
    assert again.path == loaded.path


def test_archive_with_wrong_checksum_is_refused(
    tiny_bundle: Bundle, tmp_path: Path, model_cache: Path
) -> None:
    result = export_bundle(ExportOptions(tiny_bundle.path, tmp_path / "tiny.tar.gz"))
    with result.archive.open("ab") as handle:
        handle.write(b"tampered")
    with pytest.raises(ModelError, match=r"tiny\.tar\.gz: checksum mismatch"):
        Bundle.load(result.archive)
    assert not model_cache.exists() or not any(model_cache.rglob("model.bin"))


def test_truncated_archive_without_checksum_file_is_damaged(
    tiny_bundle: Bundle, tmp_path: Path, model_cache: Path
) -> None:
    result = export_bundle(ExportOptions(tiny_bundle.path, tmp_path / "tiny.tar.gz"))
    data = result.archive.read_bytes()
    result.archive.write_bytes(data[: len(data) // 2])
    result.checksum_file.unlink()
    with pytest.raises(ModelError, match=r"tiny\.tar\.gz: damaged archive"):
        Bundle.load(result.archive)


def test_export_refuses_a_damaged_bundle(bundle_copy: Path, tmp_path: Path) -> None:
    (bundle_copy / "source.spm").write_bytes(b"changed")
    with pytest.raises(ModelError, match=r"source\.spm: checksum mismatch"):
        export_bundle(ExportOptions(bundle_copy, tmp_path / "out.zip"))
    assert not (tmp_path / "out.zip").exists()


def test_export_keeps_existing_archive_without_force(tiny_bundle: Bundle, tmp_path: Path) -> None:
    target = tmp_path / "out.zip"
    target.write_bytes(b"previous")
    with pytest.raises(InvalidInput, match="already exists"):
        export_bundle(ExportOptions(tiny_bundle.path, target))
    assert target.read_bytes() == b"previous"
    with pytest.raises(InvalidInput, match=r"\.tar\.gz, \.tgz or \.zip"):
        export_bundle(ExportOptions(tiny_bundle.path, tmp_path / "out.rar"))


def test_a_file_that_is_no_archive_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "model.bin"
    fake.write_bytes(b"\x00" * 100)
    with pytest.raises(ModelError, match="not a bundle directory, tar.gz or zip archive"):
        Bundle.load(fake)
