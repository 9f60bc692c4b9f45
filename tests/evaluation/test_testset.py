"""Reading test/dev TSVs and the seeded `--limit` sample."""

import pytest

from tm_guide.errors import InvalidInput
from tm_guide.evaluation.testset import read_tsv


def write(tmp_path, text):
    path = tmp_path / "test.tsv"
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_pairs_and_keeps_line_numbers(tmp_path):
    data = read_tsv(
        write(tmp_path, "Open the file.\tÖffnen Sie die Datei.\n\nClose.\tSchließen.\textra\n")
    )
    assert data.sources == ["Open the file.", "Close."]
    assert data.references == ["Öffnen Sie die Datei.", "Schließen."]
    assert data.lines == [1, 3]


def test_line_without_tab_is_an_error_naming_file_and_line(tmp_path):
    path = write(tmp_path, "a\tb\nno tab here\n")
    with pytest.raises(InvalidInput, match=r"test\.tsv:2: .*no tab"):
        read_tsv(path)


def test_empty_reference_is_an_error(tmp_path):
    with pytest.raises(InvalidInput, match=r"test\.tsv:1: empty reference"):
        read_tsv(write(tmp_path, "source\t \n"))


def test_sample_is_seeded_in_file_order_and_a_subset(tmp_path):
    data = read_tsv(write(tmp_path, "".join(f"s{i}\tt{i}\n" for i in range(100))))
    first = data.sample(10, seed=7)
    assert first.sources == data.sample(10, seed=7).sources
    assert first.sources != data.sample(10, seed=8).sources
    assert first.lines == sorted(first.lines)
    assert all(
        f"t{src[1:]}" == ref for src, ref in zip(first.sources, first.references, strict=True)
    )
    assert data.sample(None, seed=7) is data and data.sample(1000, seed=7) is data
