"""Loading a bundle and translating with it, as the engine and the CLI do."""

from __future__ import annotations

from pathlib import Path

import ctranslate2
import pytest

from tm_guide.model import Bundle


def test_tiny_bundle_translates_to_strings_deterministically(tiny_bundle: Bundle) -> None:
    sources = ["Click the menu.", "Open a new spreadsheet and choose the font."]
    batch = [tiny_bundle.source_input(tiny_bundle.encode_source(s)) for s in sources]
    assert all(tokens[-1] == "</s>" for tokens in batch)  # Marian was trained with source </s>

    first = tiny_bundle.translator.translate_batch(batch, beam_size=2, max_decoding_length=12)
    second = tiny_bundle.translator.translate_batch(batch, beam_size=2, max_decoding_length=12)
    texts = [tiny_bundle.decode_target(r.hypotheses[0]) for r in first]
    assert all(isinstance(t, str) and t for t in texts)
    assert [r.hypotheses[0] for r in first] == [r.hypotheses[0] for r in second]

    scored = tiny_bundle.translator.score_batch(batch, [r.hypotheses[0] for r in first])
    for result, hypothesis in zip(scored, first, strict=True):
        assert len(result.log_probs) == len(hypothesis.hypotheses[0]) + 1  # + P(</s>)
        assert all(lp <= 0.0 for lp in result.log_probs)


def test_card_describes_the_bundle(tiny_bundle: Bundle) -> None:
    card = tiny_bundle.card
    assert (card.source_lang, card.target_lang) == ("en", "de")
    assert card.architecture == "MarianMTModel"
    assert card.add_source_eos is True
    assert {"model.bin", "config.json", "source.spm", "target.spm"} <= set(card.files)
    vocabulary = tiny_bundle.vocabularies
    assert card.vocabulary == {
        "shared": True,
        "source_tokens": len(vocabulary.source),
        "target_tokens": len(vocabulary.target),
        "spm_shared": True,
    }
    assert tiny_bundle.source_sp.get_piece_size() == len(vocabulary.target)  # <pad> dropped


def test_encode_decode_round_trip(tiny_bundle: Bundle) -> None:
    text = "Klicken Sie auf die Schaltfläche."
    pieces = tiny_bundle.encode_target(text)
    assert "</s>" not in tiny_bundle.encode_source(text)
    assert tiny_bundle.decode_target(pieces + ["</s>"]) == text


def test_tokenizer_id_is_stable_across_loads(tiny_bundle: Bundle, tiny_bundle_dir: Path) -> None:
    again = Bundle.load(tiny_bundle_dir, intra_threads=1)
    assert again.tokenizer_id == tiny_bundle.tokenizer_id
    assert tiny_bundle.tokenizer_id.startswith("spm:")


@pytest.mark.skipif(ctranslate2.get_cuda_device_count() == 0, reason="no CUDA device")
def test_cuda_translation_matches_cpu(tiny_bundle: Bundle, tiny_bundle_dir: Path) -> None:
    gpu = Bundle.load(tiny_bundle_dir, device="auto")
    assert gpu.translator.device == "cuda"
    batch = [tiny_bundle.source_input(tiny_bundle.encode_source("Insert a new row."))]
    cpu_out = tiny_bundle.translator.translate_batch(batch, beam_size=2, max_decoding_length=8)
    gpu_out = gpu.translator.translate_batch(batch, beam_size=2, max_decoding_length=8)
    assert gpu_out[0].hypotheses == cpu_out[0].hypotheses


def test_overlong_input_is_cut_to_the_models_positions(tiny_bundle: Bundle) -> None:
    """The tiny Marian model has 256 positions; a longer segment must not fail its batch."""
    assert tiny_bundle.positions.source == tiny_bundle.positions.target == 256
    pieces = tiny_bundle.encode_source("Click the menu and open the file. " * 60)
    assert len(pieces) > 256
    tokens = tiny_bundle.source_input(pieces)
    assert len(tokens) == 256 and tokens[-1] == "</s>" and tokens[:-1] == pieces[:255]
    short = tiny_bundle.source_input(["▁Click"])
    results = tiny_bundle.translator.translate_batch(
        [tokens, short], beam_size=1, max_decoding_length=tiny_bundle.decoding_length(1000)
    )
    assert len(results[1].hypotheses[0]) <= 256
    assert tiny_bundle.decoding_length(20) == 20


def test_target_offsets_place_every_token_in_the_text(tiny_bundle: Bundle) -> None:
    tokens = tiny_bundle.encode_target("Klicken öffnen das menü datei, dann speichern.")
    text = tiny_bundle.decode_target(tokens)
    offsets = tiny_bundle.target_offsets(tokens)
    assert offsets is not None and len(offsets) == len(tokens) + 1
    assert offsets[0] == 0 and offsets[-1] == len(text)
    assert offsets == sorted(offsets)
    for k in range(len(tokens)):  # each token's characters are its own decoded text
        piece = text[offsets[k] : offsets[k + 1]]
        assert piece.strip() == tiny_bundle.decode_target(tokens[k : k + 1]).strip()


def test_render_target_writes_kept_tokens_in_their_own_characters() -> None:
    """A repaired match keeps its target's characters ("…", typographic quotes, "½") where the
    SentencePiece normalizer changed them; free tokens are detokenized between them, spaced
    as their pieces say, and the offsets place every token."""
    from tm_guide.config import BUNDLED_MODEL

    bundle = Bundle.load(BUNDLED_MODEL)
    text = "Wählen Sie  Format – Absatz… – „Umrandung“ ½."
    pieces, surfaces = bundle.target_surfaces(text)
    assert "".join(surfaces) == text
    whole, offsets = bundle.render_target(pieces, surfaces)
    assert whole == "Wählen Sie Format – Absatz… – „Umrandung“ ½."  # runs of spaces: one
    assert offsets is not None and offsets[-1] == len(whole) and len(offsets) == len(pieces) + 1
    free = bundle.encode_target("die Tabelle")
    tokens = pieces[:2] + free + pieces[2:]
    mixed = surfaces[:2] + [None] * len(free) + surfaces[2:]
    text, offsets = bundle.render_target(tokens, mixed)
    assert text == "Wählen Sie die Tabelle Format – Absatz… – „Umrandung“ ½."
    assert offsets is not None and text[offsets[2] : offsets[2 + len(free)]] == " die Tabelle"
    plain, _ = bundle.render_target(tokens, [None] * len(tokens))
    assert plain == bundle.decode_target(tokens)
    assert bundle.render_target(free + pieces[:2], [None] * len(free) + surfaces[:2])[0] == (
        "die Tabelle Wählen Sie"
    )
    # a free space piece before a kept word is its space, not a second one ("Immer  Ignorieren")
    kept, own = bundle.target_surfaces("Ignorieren")
    spaced, offsets = bundle.render_target(["▁Immer", "▁", *kept], [None, None, *own])
    assert spaced == "Immer Ignorieren"
    assert offsets is not None and spaced[offsets[2] :] == "Ignorieren"
    # a kept mark that its target wrote the next word on to ("=KALENDERWOCHE") keeps what the
    # model writes after it on it, where the piece's own mark asks for a space ("= ISO...")
    mark, mark_own = bundle.target_surfaces("=")
    written = bundle.encode_target("ISOKALENDERWOCHE")
    assert written[0].startswith("▁")
    tokens = [*mark, *written]
    surfaces = [*mark_own, *[None] * len(written)]
    assert bundle.render_target(tokens, surfaces)[0] == "= ISOKALENDERWOCHE"
    joined, offsets = bundle.render_target(tokens, surfaces, [True] + [False] * len(written))
    assert joined == "=ISOKALENDERWOCHE"
    assert offsets is not None and joined[offsets[1] :] == "ISOKALENDERWOCHE"
