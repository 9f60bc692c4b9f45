"""Where a piece sits in a served translation (`pieces_used[].span`), when the text was set
right after the search (Bundle.set_right) and a word of the piece is written once."""

from __future__ import annotations

from tm_guide.decoding.guided import GuidedResult, GuidedTranslator, MatchedPiece
from tm_guide.server.translation import translations_of

SOURCE = "Open the menu file save window."


def _served(bundle, words: str, piece_start: int, piece_length: int):
    """The span given for a piece of tokens piece_start.. of the output `words`, with the text
    and offsets the translator serves: the detokenization set right, its offsets moved."""
    tokens = bundle.target_surfaces(words)[0]
    steps = bundle.set_right(SOURCE, bundle.decode_target(tokens))
    offsets = bundle.target_offsets(tokens)
    assert offsets is not None
    for step in steps:
        offsets = [step.moved(offset) for offset in offsets]
    text = steps[-1].text
    piece = MatchedPiece(
        tokens=tuple(tokens[piece_start : piece_start + piece_length]),
        start=piece_start,
        score=0.8,
        segment_ids=[],
    )
    result = GuidedResult(
        translation=text,
        tokens=tokens,
        model_score=-1.0,
        log_prob=-5.0,
        reward=0.8,
        guided=True,
        engine="fused",
        matched_pieces=[piece],
        offsets=offsets,
    )
    [(translation, _)] = translations_of(GuidedTranslator(bundle), [result], None, {})
    [used] = translation.pieces_used
    return text, used


def _word_tokens(bundle, words: str) -> list[int]:
    """Where each word of `words` starts among its target tokens."""
    return [k for k, token in enumerate(bundle.target_surfaces(words)[0]) if token[0] == "▁"]


def test_a_piece_whose_first_word_is_written_once_has_no_span(tiny_bundle) -> None:
    words = "Öffnen das menü menü datei speichern fenster."
    starts = _word_tokens(tiny_bundle, words)
    second_menu, end = starts[3], len(tiny_bundle.target_surfaces(words)[0]) - 1
    text, used = _served(tiny_bundle, words, second_menu, end - second_menu)

    assert text == "Öffnen das menü datei speichern fenster."
    assert used.text == "menü datei speichern fenster"
    # its tokens' characters start inside the word that was dropped: the text there is
    # "datei speichern fenster", which is not the piece
    assert used.span is None


def test_a_piece_the_text_writes_as_its_tokens_has_its_span(tiny_bundle) -> None:
    words = "Öffnen das menü menü datei speichern fenster."
    starts = _word_tokens(tiny_bundle, words)
    text, used = _served(tiny_bundle, words, starts[4], starts[6] - starts[4])

    assert used.text == "datei speichern"
    assert used.span is not None
    assert text[used.span[0] : used.span[1]] == "datei speichern"


def test_the_first_of_a_repeat_keeps_its_span(tiny_bundle) -> None:
    words = "Öffnen das menü menü datei."
    starts = _word_tokens(tiny_bundle, words)
    text, used = _served(tiny_bundle, words, starts[1], starts[3] - starts[1])

    assert text == "Öffnen das menü datei."
    assert used.text == "das menü"
    assert used.span is not None and text[used.span[0] : used.span[1]] == "das menü"
