"""The typed answer of a suggestion request (tm_guide.server.results): how sentences' timings
and pieces combine, and that `/v1`'s JSON is built from the values alone."""

from __future__ import annotations

from tm_guide.server.results import PieceUse, SegmentRef, Suggestion, Timing, Translation


def _piece(span: tuple[int, int] | None) -> PieceUse:
    return PieceUse(
        text="Datei",
        tokens=("▁Datei",),
        position=3,
        span=span,
        score=0.81234,
        segments=(SegmentRef(7, "help", "u7", 0.812345),),
    )


def test_sentences_timings_add_up_with_one_shared_queue_wait() -> None:
    first = Timing(retrieval=2.0, pieces=1.0, queue=5.0, decoding=10.0)
    second = Timing(retrieval=3.0, pieces=0.5, queue=4.0, decoding=20.0)

    joined = Timing.summed([first, second])

    assert joined == Timing(retrieval=5.0, pieces=1.5, queue=5.0, decoding=30.0)
    assert joined.to_json() == {
        "retrieval": 5.0,
        "pieces": 1.5,
        "queue": 5.0,
        "decoding": 30.0,
        "total": 41.5,
    }


def test_a_matches_only_answer_times_its_retrieval_alone() -> None:
    assert Timing(retrieval=1.25).to_json() == {"retrieval": 1.25}
    assert Timing.summed([]).to_json() == {}


def test_a_piece_moves_with_its_sentence_unless_it_has_no_span() -> None:
    assert _piece((4, 9)).moved(10).span == (14, 19)
    assert _piece(None).moved(10).span is None


def test_a_verbatim_text_translates_nothing() -> None:
    verbatim = Translation.verbatim("%s")

    assert (verbatim.text, verbatim.unguided, verbatim.sentences) == ("%s", "%s", 0)
    assert not verbatim.guided and verbatim.engine is None


def test_v1_json_is_rendered_from_the_values() -> None:
    translation = Translation(
        text="Speichern Sie die Datei.",
        unguided=None,
        guided=True,
        engine="fused",
        model_score=-0.123456,
        reward=1.000049,
        best_match_similarity=0.8,
        repaired=SegmentRef(7, "help", "u7", 0.812345),
        pieces_used=(_piece((18, 23)),),
    )
    answer = Suggestion("Save the file.", (), translation, Timing(retrieval=1.0)).to_json()

    rendered = answer["translation"]
    assert rendered["mt_text"] == rendered["text"] == "Speichern Sie die Datei."
    assert (rendered["origin"], rendered["tm_match"], rendered["glossary"]) == ("mt", None, [])
    assert (rendered["model_score"], rendered["reward"]) == (-0.1235, 1.0)
    assert rendered["repaired"] == {
        "segment_id": 7,
        "memory": "help",
        "tuid": "u7",
        "similarity": 0.8123,
    }
    assert rendered["pieces_used"] == [
        {
            "text": "Datei",
            "tokens": ["▁Datei"],
            "position": 3,
            "span": [18, 23],
            "score": 0.8123,
            "segments": [{"id": 7, "memory": "help", "tuid": "u7", "similarity": 0.8123}],
        }
    ]
    assert answer["timings_ms"] == {"retrieval": 1.0} and answer["matches"] == []
