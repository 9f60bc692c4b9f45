"""Unguided BLEU/chrF of a CTranslate2 bundle on a TSV test set (beam search, sacrebleu)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import ctranslate2
import sacrebleu
import sentencepiece as spm


@dataclass(frozen=True)
class Scores:
    bleu: float
    chrf: float
    sentences: int
    seconds: float


def translate_texts(bundle_dir: Path, texts: list[str], beam_size: int, threads: int) -> list[str]:
    """Translate in length order for speed, return in input order. </s> is appended per the card."""
    source_sp = spm.SentencePieceProcessor(model_file=str(bundle_dir / "source.spm"))
    target_sp = spm.SentencePieceProcessor(model_file=str(bundle_dir / "target.spm"))
    translator = ctranslate2.Translator(
        str(bundle_dir), device="cpu", compute_type="int8", intra_threads=threads
    )
    pieces = [source_sp.encode(t, out_type=str)[:254] + ["</s>"] for t in texts]
    order = sorted(range(len(texts)), key=lambda i: len(pieces[i]))
    results = translator.translate_batch(
        [pieces[i] for i in order],
        beam_size=beam_size,
        max_batch_size=2048,
        batch_type="tokens",
        max_decoding_length=256,
    )
    output = [""] * len(texts)
    for index, result in zip(order, results, strict=True):
        output[index] = target_sp.decode(result.hypotheses[0])
    return output


def score_bundle(
    bundle_dir: Path, pairs: list[tuple[str, str]], beam_size: int = 5, threads: int = 2
) -> Scores:
    import time

    started = time.monotonic()
    hypotheses = translate_texts(bundle_dir, [s for s, _ in pairs], beam_size, threads)
    references = [[t for _, t in pairs]]
    return Scores(
        bleu=round(sacrebleu.corpus_bleu(hypotheses, references).score, 2),
        chrf=round(sacrebleu.corpus_chrf(hypotheses, references).score, 2),
        sentences=len(pairs),
        seconds=round(time.monotonic() - started, 1),
    )
