"""What the engine tests share: model inputs, reward tables, and the int8 closeness measure."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from tm_guide.decoding.rewards import PieceReward
from tm_guide.decoding.step import SearchBatch, StepRows

# German targets for the first three fixture sentences (score_batch comparisons)
TARGETS = ["Datei speichern.", "Öffnen Sie das Menü Tabelle Zelle Text.", "Hilfe"]


def model_inputs(bundle, sentences):  # type: ignore[no-untyped-def]
    return [bundle.source_input(bundle.encode_source(s)) for s in sentences]


def batch_of(inputs, rewards, caps, prefixes=None, templates=None):  # type: ignore[no-untyped-def]
    """A SearchBatch for the compiled searches, which take it as search.py hands it over."""
    return SearchBatch(
        sources=inputs,
        rewards=list(rewards),
        caps=np.asarray(caps, dtype=np.int64),
        prefixes=prefixes if prefixes is not None else [[] for _ in inputs],
        templates=templates if templates is not None else [None] * len(inputs),
    )


def rewards_for(bundle, token_lists, score=0.7, clipped=False):  # type: ignore[no-untyped-def]
    """Every 1..4-gram of each token list as a piece of `score`; `clipped`: each limited to
    its count in the list (PieceOptions.clipped), else the pieces-once limits."""
    index = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    tables = []
    for tokens in token_lists:
        grams = [
            tuple(tokens[s : s + n])
            for s in range(len(tokens))
            for n in range(1, 5)
            if s + n <= len(tokens)
        ]
        limits = Counter(grams) if clipped else None
        tables.append(PieceReward.from_tokens(dict.fromkeys(grams, score), index, limits=limits))
    return tables


def int8_gaps(
    int8_bundle,  # type: ignore[no-untyped-def]
    float_bundle,
    sentences: Sequence[str],
    score: Callable[[Sequence[str], list[int]], np.ndarray],
) -> tuple[float, float]:
    """Mean |log-prob| distance of an engine's `score(source, target ids)` from CTranslate2's
    int8 score_batch, and CTranslate2's own float32-to-int8 distance on the same pairs: the
    scale of quantization noise that an engine's distance is held to."""
    index = {t: i for i, t in enumerate(int8_bundle.vocabularies.target)}
    inputs = model_inputs(int8_bundle, sentences[: len(TARGETS)])
    targets = [int8_bundle.encode_target(t) for t in TARGETS]
    expected = int8_bundle.translator.score_batch(inputs, targets)
    float_run = float_bundle.translator.score_batch(inputs, targets)
    gaps, own_gaps = [], []
    for source, target, scored, floats in zip(inputs, targets, expected, float_run, strict=True):
        mine = score(source, [index[t] for t in target])
        gaps.append(float(np.mean(np.abs(mine - np.array(scored.log_probs)))))
        own_gaps.append(float(np.mean(np.abs(np.array(floats.log_probs) - scored.log_probs))))
    return float(np.mean(gaps)), float(np.mean(own_gaps))


def teacher_forced(decoder, source, target_ids):  # type: ignore[no-untyped-def]
    """Log-probabilities of target_ids (then </s>): the engine's own `score` where it has one,
    else its steps one token at a time."""
    if hasattr(decoder, "score"):
        return np.asarray(decoder.score(source, target_ids))
    state = decoder.start([source])
    previous, parents, scores = decoder.start_id, None, []
    for token in [*target_ids, decoder.end_id]:
        log_probs = decoder.step(
            state, StepRows(parents, np.array([0]), np.array([previous]), False)
        )
        scores.append(float(log_probs[0, token]))
        previous, parents = token, np.array([0])
    return np.array(scores)


@contextlib.contextmanager
def aligned_memory(root: Path, bundle, name: str, pairs):  # type: ignore[no-untyped-def]
    """A SQLite store under `root` holding memory `name` (en -> de) of `pairs`, word-aligned
    with `bundle`'s tokenizer: (store, memory)."""
    from tm_guide.pieces.align import AlignOptions, MemoryAligner
    from tm_guide.records import SegmentRecord
    from tm_guide.store import Store

    store = Store.open(f"sqlite:///{root / 'tm.sqlite'}", root / "index")
    try:
        memory = store.create_memory(name, "en", "de")
        store.import_records(memory, [SegmentRecord(s, t) for s, t in pairs])
        MemoryAligner(store, bundle, AlignOptions(cache_dir=root / "priors")).align_memory(
            store.get_memory(memory.id)
        )
        yield store, store.get_memory(memory.id)
    finally:
        store.close()


def template_variants(vocabulary, plain):  # type: ignore[no-untyped-def]
    """The four forms of the template rule over the same plain templates: plain, finishing
    words past a spent gap (the vocabulary's continuation marks, 4 tokens of overrun), looking
    ahead (no gap writes the next three content words, nothing glued to a kept word), and
    owing (a gap holds at least one token where the source changed)."""
    from dataclasses import replace

    from tm_guide.decoding.template import ahead_of, glues_on
    from tm_guide.pieces.repair import continuation_mask

    continues = continuation_mask(vocabulary)
    finishing = [replace(t, continues=continues, overrun=4) for t in plain]
    looking = [
        replace(
            t,
            ahead=ahead_of([vocabulary[i] for i in t.tokens], t.tokens, 3),
            joins=(False, *(glues_on(vocabulary[i]) for i in t.tokens)),
        )
        for t in finishing
    ]
    owing = [replace(t, least=tuple(int(g > 0) for g in t.gaps)) for t in looking]
    return {"plain": plain, "finishing": finishing, "looking": looking, "owing": owing}
