"""Running the systems an evaluation compares: retrieval, pieces, unguided and guided decoding.

Pieces are collected once per (sentence, M, reward variant) and handed to the translator, so the
lambda grid and the engines reuse them and each stage is timed on its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from tm_guide.decoding.engines import AUTO
from tm_guide.errors import InvalidInput
from tm_guide.evaluation.analysis import EngineTiming, RunData, SweepPoint, build_results
from tm_guide.evaluation.baseline import Candidate, best_match_target
from tm_guide.evaluation.options import EvalOptions, display_path
from tm_guide.evaluation.signature import model_checksum
from tm_guide.evaluation.testset import TestSet, read_tsv
from tm_guide.matching import exact_match, match_percentage

EVAL_MEMORY = "eval-tm"


@dataclass
class CollectedPieces:
    """Pieces of every sentence of a set at one M, with mean seconds per sentence per stage."""

    pieces: list[Any]
    retrieval: float
    pieces_time: float


@contextlib.contextmanager
def open_tm(
    tm: str, db_url: str | None, bundle: Any, progress: bool = True
) -> Iterator[tuple[Any, Any]]:
    """(store, memory): memory `tm` of the store at `db_url` (its stale segments aligned first),
    or a TSV file `tm` imported and aligned: into a memory named after the file's content in
    the store at `db_url`, which keeps it (and its word alignment) for the next run, else into a
    throwaway store."""
    from tm_guide.pieces.align import MemoryAligner
    from tm_guide.store import Store

    tm_path = Path(tm)
    if tm_path.suffix.lower() == ".tsv" and tm_path.is_file():
        if db_url is not None:
            store = Store.open(db_url)
            try:
                yield store, _tsv_memory(store, tm_path, bundle, progress)
            finally:
                store.close()
            return
        with tempfile.TemporaryDirectory(prefix="tm-guide-eval-") as tmp:
            store = Store.open(f"sqlite:///{tmp}/tm.sqlite", index_dir=Path(tmp) / "index")
            try:
                yield store, _tsv_memory(store, tm_path, bundle, progress)
            finally:
                store.close()
        return
    if db_url is None:
        raise InvalidInput(
            f"--tm {tm!r} is not a .tsv file, so it names a memory: give --db too",
            field="tm",
        )
    store = Store.open(db_url)
    try:
        memory = store.get_memory(tm)
        MemoryAligner(store, bundle).align_memory(memory, mode="stale", progress=progress)
        yield store, store.get_memory(memory.id)
    finally:
        store.close()


def _tsv_memory(store: Any, tm_path: Path, bundle: Any, progress: bool) -> Any:
    """The memory holding the TSV's pairs, aligned: imported on first use; on later runs the
    same memory, with only what is stale aligned again."""
    from tm_guide.errors import NotFound
    from tm_guide.formats.parallel import read_tsv as read_tm_tsv
    from tm_guide.pieces.align import MemoryAligner

    card = bundle.card
    # named by the file's content: another file, or this one changed, gets a memory of its own
    digest = hashlib.sha256(tm_path.read_bytes()).hexdigest()[:12]
    name = f"{EVAL_MEMORY}-{tm_path.stem}-{digest}"
    try:
        memory = store.get_memory(name)
        mode = "stale"
    except NotFound:
        memory = store.create_memory(name, card.source_lang, card.target_lang)
        records = read_tm_tsv(tm_path, card.source_lang, card.target_lang)
        store.import_records(memory, records, progress=progress)
        mode = "full"
    MemoryAligner(store, bundle).align_memory(
        store.get_memory(memory.id), mode=mode, progress=progress
    )
    return store.get_memory(memory.id)


def _load_set(path: Path, options: EvalOptions) -> tuple[TestSet, int]:
    data = read_tsv(path)
    return data.sample(options.limit, options.seed), len(data)


class Runner:
    """Holds the translator and the base decoding options for one evaluation."""

    def __init__(self, options: EvalOptions, translator: Any, memory_id: int) -> None:
        from tm_guide.decoding.guided import EngineOptions, TranslateOptions
        from tm_guide.decoding.search import SearchOptions

        self.options = options
        self.translator = translator
        lam = options.lambdas[0] if options.lambdas else 1.0
        self.base = options.guidance(lam).apply(
            TranslateOptions(
                search=SearchOptions(beam_size=options.beam_size),
                engine=EngineOptions(
                    engine=options.engines[0],
                    device=options.device,
                    batch_size=options.batch_size,
                    threads=options.threads,
                ),
                memory_ids=(memory_id,),
                max_length_ratio=options.max_length_ratio,
            )
        )

    def collect(self, data: TestSet, m: int, binary: bool = False) -> CollectedPieces:
        options = replace(self.base, pieces=replace(self.base.pieces, m=m, binary_reward=binary))
        clock = time.perf_counter
        found, retrieval, total = [], 0.0, 0.0
        label = f"{data.name}: pieces M={m}" + (" (1/0)" if binary else "")
        for sentence in tqdm(data.sources, desc=label, disable=not self.options.progress):
            tokens = self.translator.bundle.encode_source(sentence)
            started = clock()
            pieces = self.translator.collect_pieces(tokens, options)
            total += clock() - started
            retrieval += pieces.timings.get("retrieval", 0.0) if pieces is not None else 0.0
            found.append(pieces)
        n = max(len(data), 1)
        return CollectedPieces(found, retrieval / n, max(total - retrieval, 0.0) / n)

    def decode(
        self,
        sources: Sequence[str],
        pieces: Sequence[Any],
        lam: float,
        engine: str | None = None,
        desc: str = "",
    ) -> tuple[list[str], float]:
        """Translations and mean decoding seconds per sentence (lam 0: native beam search)."""
        options = replace(
            self.base,
            search=replace(self.base.search, lam=lam),
            engine=replace(self.base.engine, engine=engine or self.base.engine.engine),
        )
        outputs: list[str] = []
        seconds = 0.0
        step = self.options.batch_size
        for start in tqdm(
            range(0, len(sources), step), desc=desc, unit="batch", disable=not self.options.progress
        ):
            results = self.translator.translate(
                list(sources[start : start + step]),
                options,
                pieces=list(pieces[start : start + step]),
            )
            outputs += [r.translation for r in results]
            seconds += sum(r.timings.get("decoding", 0.0) for r in results)
        return outputs, seconds / max(len(sources), 1)


def served_outputs(
    sources: Sequence[str], pieces: Sequence[Any], guided: Sequence[str]
) -> list[str]:
    """What the server suggests: the target of a TM segment whose source is the sentence itself
    (a 100 match, chosen as the server chooses: matching.exact_match, the guided translation
    breaking ties), else the guided translation."""
    out = []
    for source, found, output in zip(sources, pieces, guided, strict=True):
        matches = found.matches if found is not None else []
        chosen = exact_match(
            [(match_percentage(source, m.segment.source), m.segment) for m in matches], output
        )
        out.append(chosen[1].target if chosen is not None else output)
    return out


def best_match_outputs(pieces: Sequence[Any]) -> tuple[list[str], list[float]]:
    """The best-match baseline and eq. 11 similarity of each sentence (0 when nothing was found)."""
    targets, similarities = [], []
    for found in pieces:
        matches = list(found.matches) if found is not None else []
        targets.append(
            best_match_target([Candidate(m.similarity, m.segment.target) for m in matches])
        )
        similarities.append(max((m.similarity for m in matches), default=0.0))
    return targets, similarities


def run_evaluation(options: EvalOptions, command: str) -> dict[str, Any]:
    """Run every system the report needs and return the results dictionary."""
    from tm_guide.decoding.guided import GuidedTranslator
    from tm_guide.model import Bundle

    test, test_total = _load_set(options.test, options)
    dev, dev_total = _load_set(options.dev, options) if options.dev else (None, 0)
    bundle = Bundle.load(options.model, device=options.device, intra_threads=options.threads)
    notes: list[str] = []
    from_card = options.lambdas is None and bundle.card.guided_lambda is not None
    options = options.for_model(bundle.card)
    lambdas: tuple[float, ...] = options.lambdas or ()
    if options.limit is not None:
        notes.append(
            f"Sample: {len(test)} of {test_total} test sentences"
            + (f" and {len(dev)} of {dev_total} dev sentences" if dev else "")
            + f" (seeded, seed {options.seed}); scores on a sample differ from the full set."
        )
    with open_tm(options.tm, options.db_url, bundle, options.progress) as (store, memory):
        translator = GuidedTranslator(bundle, store)
        # "auto" is reported as the engine it runs here
        options = replace(
            options,
            engines=tuple(
                translator.engine_choice(options.device).engine if e == AUTO else e
                for e in options.engines
            ),
        )
        runner = Runner(options, translator, memory.id)
        engine = options.engines[0]

        dev_outputs: dict[str, list[str]] = {}
        dev_guided: dict[float, list[str]] = {}
        if dev is not None:
            dev_pieces = runner.collect(dev, options.m)
            dev_outputs["unguided"], _ = runner.decode(
                dev.sources, dev_pieces.pieces, 0.0, desc="dev: unguided"
            )
            for lam in lambdas:
                dev_guided[lam], _ = runner.decode(
                    dev.sources, dev_pieces.pieces, lam, desc=f"dev: lambda {lam}"
                )
            from tm_guide.evaluation.scoring import corpus_score

            best_lambda = max(
                lambdas,
                key=lambda lam: (corpus_score(dev_guided[lam], dev.references).bleu, -lam),
            )
            lambda_choice = "the model card's" if from_card else "tuned on dev by BLEU"
            dev_outputs["guided"] = dev_guided[best_lambda]
            dev_outputs["served"] = served_outputs(
                dev.sources, dev_pieces.pieces, dev_outputs["guided"]
            )
            dev_binary = runner.collect(dev, options.m, binary=True)
            dev_outputs["binary_reward"], _ = runner.decode(
                dev.sources, dev_binary.pieces, best_lambda, desc="dev: 1/0 reward"
            )
        else:
            best_lambda = lambdas[0]
            lambda_choice = "the model card's" if from_card else "no dev set: first lambda given"

        main = runner.collect(test, options.m)
        unguided, base_time = runner.decode(test.sources, main.pieces, 0.0, desc="test: unguided")
        guided, guided_time = runner.decode(
            test.sources, main.pieces, best_lambda, desc="test: guided"
        )
        binary = runner.collect(test, options.m, binary=True)
        binary_out, _ = runner.decode(test.sources, binary.pieces, best_lambda, desc="test: 1/0")
        best_match, similarities = best_match_outputs(main.pieces)

        sweep = []
        for m in options.m_values:
            if m == options.m:
                sweep.append(SweepPoint(m, guided, main.retrieval, main.pieces_time, guided_time))
                continue
            point = runner.collect(test, m)
            hyps, seconds = runner.decode(
                test.sources, point.pieces, best_lambda, desc=f"test: M={m}"
            )
            sweep.append(SweepPoint(m, hyps, point.retrieval, point.pieces_time, seconds))

        timings = [
            EngineTiming(
                engine, base_time, main.retrieval, main.pieces_time, guided_time, len(test)
            )
        ]
        count = min(options.timing_limit, len(test))
        for other in options.engines[1:]:
            if count == 0:
                break
            sources, pieces = test.sources[:count], main.pieces[:count]
            _, seconds = runner.decode(
                sources, pieces, best_lambda, engine=other, desc=f"timing: {other}"
            )
            _, base_seconds = runner.decode(sources, pieces, 0.0, desc="timing: unguided")
            timings.append(
                EngineTiming(other, base_seconds, main.retrieval, main.pieces_time, seconds, count)
            )

        tm_info = {
            "name": memory.name if Path(options.tm).suffix != ".tsv" else options.tm,
            "segments": memory.segment_count,
            "revision": memory.revision,
        }
        card = bundle.card
        model_info = {
            "name": card.name,
            "path": display_path(options.model),
            "checksum": model_checksum(card.files),
            "files": dict(card.files),
            "quantization": card.quantization,
            "architecture": card.architecture,
            "card_metrics": {
                "bleu": card.metrics.bleu,
                "chrf": card.metrics.chrf,
                "test_set": card.metrics.test_set,
            },
        }
        run = RunData(
            options=options,
            command=command,
            test=test,
            test_total=test_total,
            test_outputs={
                "unguided": unguided,
                "guided": guided,
                "served": served_outputs(test.sources, main.pieces, guided),
                "binary_reward": binary_out,
                "best_match": best_match,
            },
            similarities=similarities,
            best_lambda=best_lambda,
            lambda_choice=lambda_choice,
            tm_targets=lambda: (segment.target for segment in store.iter_segments(memory)),
            tm_info=tm_info,
            model_info=model_info,
            dev=dev,
            dev_total=dev_total,
            dev_outputs=dev_outputs,
            dev_guided=dev_guided,
            sweep=sweep,
            timings=timings,
            notes=notes,
        )
        return build_results(run, progress=options.progress)
