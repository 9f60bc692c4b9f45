"""Invariants of Algorithm 1 and eq. 8/9 on random aligned pairs."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tm_guide.pieces.collect import (
    AlignedPair,
    PieceTable,
    collect_ngrams,
    compare,
    pair_pieces,
    piece_counts,
)

# The suite runs on a shared, often busy machine: no per-example deadline or speed check.
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

WORDS = st.sampled_from([f"w{i}" for i in range(12)])
OTHER_WORDS = st.sampled_from([f"v{i}" for i in range(12)])


@st.composite
def aligned_pairs(draw, source_words=WORDS):  # type: ignore[no-untyped-def]
    source = draw(st.lists(source_words, min_size=1, max_size=12))
    target = draw(st.lists(st.sampled_from([f"t{i}" for i in range(8)]), min_size=1, max_size=12))
    links = draw(
        st.sets(
            st.tuples(st.integers(0, len(source) - 1), st.integers(0, len(target) - 1)),
            max_size=20,
        )
    )
    return AlignedPair.build(7, source, target, sorted(links))


def all_ngrams(tokens, max_n=4):  # type: ignore[no-untyped-def]
    return {
        tuple(tokens[i : j + 1])
        for i in range(len(tokens))
        for j in range(i, min(len(tokens), i + max_n))
    }


@PROPERTY
@given(aligned_pairs())
def test_identical_source_yields_every_target_ngram_with_score_1(pair: AlignedPair) -> None:
    comparison, pieces = pair_pieces(list(pair.source), pair)
    assert comparison.similarity == 1.0
    assert pieces == all_ngrams(pair.target)


@PROPERTY
@given(aligned_pairs(), st.lists(OTHER_WORDS, min_size=1, max_size=12))
def test_pair_sharing_no_token_yields_nothing(pair: AlignedPair, query: list[str]) -> None:
    comparison, pieces = pair_pieces(query, pair)
    assert comparison.similarity == 0.0
    assert comparison.unedited == 0
    assert pieces == set()


@PROPERTY
@given(aligned_pairs(), st.lists(WORDS, min_size=1, max_size=12))
def test_pieces_never_cross_an_edited_alignment(pair: AlignedPair, query: list[str]) -> None:
    comparison, pieces = pair_pieces(query, pair)
    assert 0.0 <= comparison.similarity <= 1.0
    edited = ~comparison.unedited
    target = pair.target
    for piece in pieces:
        n = len(piece)
        assert 1 <= n <= 4
        # the piece occurs at some start position where no token links to an edited source word
        assert any(
            target[i : i + n] == piece
            and all(pair.target_links[k] & edited == 0 for k in range(i, i + n))
            for i in range(len(target) - n + 1)
        )


@PROPERTY
@given(aligned_pairs(), st.lists(WORDS, min_size=1, max_size=12))
def test_unaligned_target_tokens_do_not_stop_a_piece(pair: AlignedPair, query: list[str]) -> None:
    """Algorithm 1 breaks only on a link to an edited source word: every maximal run of target
    tokens without such a link is collected whole (up to 4 tokens), unaligned tokens included."""
    comparison, pieces = pair_pieces(query, pair)
    if comparison.unedited == 0:
        return
    expected = set()
    run: list[str] = []
    for token, links in zip(pair.target, pair.target_links, strict=True):
        if links & ~comparison.unedited:
            expected |= all_ngrams(run)
            run = []
        else:
            run.append(token)
    expected |= all_ngrams(run)
    assert pieces == expected


def test_algorithm_1_alone_collects_wholly_unaligned_ngrams() -> None:
    """Without the empty-W^m rule, Algorithm 1 keeps n-grams whose tokens have no link at all."""
    ngrams = set(collect_ngrams(["a", "b", "c"], [1, 0, 0], unedited=0))
    assert ngrams == {("b",), ("c",), ("b", "c")}


@PROPERTY
@given(st.lists(aligned_pairs(), min_size=1, max_size=6), st.lists(WORDS, min_size=1, max_size=10))
def test_scores_are_the_best_similarity_of_the_yielding_pairs(
    pairs: list[AlignedPair], query: list[str]
) -> None:
    table = PieceTable()
    per_pair = []
    for index, pair in enumerate(pairs):
        pair = AlignedPair(index, pair.source, pair.target, pair.target_links)
        comparison, pieces = pair_pieces(query, pair)
        per_pair.append((comparison.similarity, pieces, index))
        table.add(pieces, comparison.similarity, index)
    for ngram, score in table.scores.items():
        yielding = [(sim, idx) for sim, pieces, idx in per_pair if ngram in pieces]
        assert 0.0 <= score <= 1.0
        assert score == max(sim for sim, _ in yielding)
        assert table.provenance[ngram] == [idx for _, idx in yielding]
    assert table.unigrams() == {ngram[0] for ngram in table.scores if len(ngram) == 1}
    assert all(token in table.unigrams() for ngram in table.scores for token in ngram)


def test_min_similarity_drops_weak_pairs() -> None:
    pair = AlignedPair.build(
        1, ["a", "b", "c", "d"], ["A", "B", "C", "D"], [(i, i) for i in range(4)]
    )
    comparison, pieces = pair_pieces(["a", "x", "y", "z"], pair, min_similarity=0.5)
    assert comparison.similarity == 0.25 and pieces == set()
    _, pieces = pair_pieces(["a", "x", "y", "z"], pair, min_similarity=0.25)
    assert pieces == {("A",)}


def test_alignment_outside_the_sentence_is_rejected() -> None:
    import pytest

    with pytest.raises(
        ValueError, match="segment 3: alignment has a link outside 2 source x 1 target"
    ):
        AlignedPair.build(3, ["a", "b"], ["A"], [(2, 0)])


def test_a_piece_counts_only_where_its_source_words_are_unedited() -> None:
    """A section heading "6.2.2." matched against "6.2.4.": the TM target holds "2 ." twice, but
    the second is aligned to the edited "2", so the pair gives "2 ." once (as the input has it)
    and clipping cannot lure the search into "6.2.2.4."."""
    source = ["6", ".", "2", ".", "2", ".", "Mail"]
    target = ["6", ".", "2", ".", "2", ".", "Post"]
    pair = AlignedPair.build(1, source, target, [(i, i) for i in range(len(source))])
    query = ["6", ".", "2", ".", "4", ".", "Mail"]
    counts = piece_counts(compare(query, source), pair, max_n=4)
    assert counts[("2", ".")] == 1
    assert counts[("2",)] == 1
    assert counts[(".",)] == 3
    assert ("2", ".", "2") not in counts
    assert counts[("6", ".", "2", ".")] == 1


SUBWORD_TARGET = ["▁Öffne", "t", "▁den", "▁Funktions", "as", "s", "ist", "en", "ten", "."]
# Opens0 the1 Function2 Wizard3 .4 -> the compound's first piece to "Function", the rest to
# "Wizard", as an aligner links a compound's parts
SUBWORD_PAIR = AlignedPair.build(
    3,
    ["▁Opens", "▁the", "▁Function", "▁Wizard", "."],
    SUBWORD_TARGET,
    [(0, 0), (0, 1), (1, 2), (2, 3), (3, 4), (3, 5), (3, 6), (3, 7), (3, 8), (4, 9)],
)


def test_by_whole_words_no_piece_of_a_changed_word_is_collected() -> None:
    """ "Function Wizard" becomes "Connection Type Wizard": "Funktionsassistenten" translated
    the changed "Function", so none of its pieces is a piece of the input's translation, though
    "as s ist en ten" are aligned to the unchanged "Wizard"."""
    query = ["▁Opens", "▁the", "▁Connection", "▁Type", "▁Wizard", "."]
    comparison = compare(query, SUBWORD_PAIR.source)
    by_pieces = piece_counts(comparison, SUBWORD_PAIR)
    assert ("ist",) in by_pieces and ("ist", "en", "ten", ".") in by_pieces
    by_words = piece_counts(comparison, SUBWORD_PAIR, whole_words=True)
    assert set(by_words) == all_ngrams(SUBWORD_TARGET[:3]) | {(".",)}
    assert SUBWORD_PAIR.word_links[3:9] == (0b1100,) * 6


def test_by_whole_words_an_unlinked_part_of_a_compound_goes_with_the_compound() -> None:
    """ "Email basics" becomes "Unix file basics": the aligner linked only "Mail" of
    "E-Mail-Systems" to "Email" (and "s" to "basics"), and "E", linked to nothing, would be a
    piece that writes "Grundlagen des E-Systems". A part linked on its own stands for its own
    words: "Versionskontrollsystem" of "Versionskontrollsystem-Werkzeuge" is a piece for
    "version control system" when "tools" becomes "systems"."""
    source = ["▁6", ".", "▁Email", "▁basic", "s"]
    target = ["▁6", ".", "▁Grund", "lag", "en", "▁des", "▁E", "-", "Mail", "-", "System", "s"]
    links = [(0, 0), (1, 1), (2, 8), (3, 2), (3, 3), (4, 4), (4, 11)]
    pair = AlignedPair.build(1, source, target, links)
    query = ["▁6", ".", "▁Unix", "▁file", "▁basic", "s"]
    counts = piece_counts(compare(query, source), pair, whole_words=True)
    assert set(counts) == all_ngrams(target[:6]) | all_ngrams(target[9:])
    # the paper's rule, piece by piece, gives "E"
    assert ("▁des", "▁E", "-") in piece_counts(compare(query, source), pair)

    source = ["▁other", "▁version", "▁control", "▁tool", "s"]
    target = ["▁anderer", "▁", "Versionskontroll", "system", "-", "Werkzeug", "e"]
    pair = AlignedPair.build(1, source, target, [(0, 0), (1, 1), (2, 2), (2, 3), (3, 5), (4, 6)])
    query = ["▁other", "▁version", "▁control", "▁system", "s"]
    counts = piece_counts(compare(query, source), pair, whole_words=True)
    assert set(counts) == all_ngrams(target[:5])  # its hyphen stands for nothing


@PROPERTY
@given(aligned_pairs(), st.lists(WORDS, min_size=1, max_size=12))
def test_whole_word_tokens_collect_the_same_either_way(pair: AlignedPair, query: list[str]) -> None:
    """Tokens without SentencePiece's space mark are words of their own: by whole words is
    then Algorithm 1 as the paper states it."""
    comparison = compare(query, pair.source)
    assert piece_counts(comparison, pair, whole_words=True) == piece_counts(comparison, pair)


PIECES = st.sampled_from(["▁a", "b", "▁c", "d", "-", "e"])


@PROPERTY
@given(st.data())
def test_by_whole_words_collects_a_subset(data: st.DataObject) -> None:
    """Joining a word's links only adds edited links: never a piece, nor an occurrence of one,
    that the paper's rule lacks."""
    source = data.draw(st.lists(WORDS, min_size=1, max_size=10))
    target = data.draw(st.lists(PIECES, min_size=1, max_size=12))
    links = data.draw(
        st.sets(st.tuples(st.integers(0, len(source) - 1), st.integers(0, len(target) - 1)))
    )
    pair = AlignedPair.build(1, source, target, sorted(links))
    comparison = compare(data.draw(st.lists(WORDS, min_size=1, max_size=10)), pair.source)
    by_words = piece_counts(comparison, pair, whole_words=True)
    by_pieces = piece_counts(comparison, pair)
    assert all(count <= by_pieces[piece] for piece, count in by_words.items())
