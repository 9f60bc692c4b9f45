"""A new memory's first segments are aligned with the bundle's priors (its training data's
counts), so that the first repair can trust them; its own priors take over as it grows."""

from __future__ import annotations

from pathlib import Path

from tm_guide.formats import read_tmx
from tm_guide.model import Bundle
from tm_guide.pieces.align import AlignOptions, MemoryAligner
from tm_guide.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "help.tmx"
# (source word, target word) pairs of the README's example memory that its alignment must hold
EXPECTED = {
    "save-1": {("▁document", "▁Dokument"), ("▁save", "▁speichern")},
    "menu-1": {("▁File", "▁Datei"), ("▁menu", "▁Menü")},
    "copy-1": {("▁copy", "▁kopieren"), ("▁text", "▁Text")},
    "format-1": {("▁Format", "▁Format")},
}


def _aligned(bundle: Bundle, tmp_path: Path, options: AlignOptions) -> dict[str, set]:
    store = Store.open(f"sqlite:///{tmp_path / 'tm.sqlite'}", tmp_path / "index")
    try:
        memory = store.create_memory("help", "en", "de")
        store.import_records(memory, read_tmx(EXAMPLE, "en", "de"))
        MemoryAligner(store, bundle, options).align_memory(store.get_memory(memory.id))
        return {
            segment.tuid: {
                (segment.source_tokens[s], segment.target_tokens[t]) for s, t in segment.alignment
            }
            for segment in store.iter_segments(store.get_memory(memory.id))
        }
    finally:
        store.close()


def test_the_demo_bundle_ships_priors_its_card_vouches_for(bundle: Bundle) -> None:
    path = bundle.alignment_priors_path
    assert path is not None and path.name in bundle.card.files


def test_a_memory_of_four_units_aligns_its_words_with_the_bundle_priors(
    bundle: Bundle, tmp_path: Path
) -> None:
    links = _aligned(bundle, tmp_path, AlignOptions())
    for tuid, expected in EXPECTED.items():
        assert expected <= links[tuid], (tuid, sorted(links[tuid]))
