"""The server's side of the model: loading the guided translator and shaping its output as JSON.

Everything that touches `tm_guide.model`, `tm_guide.pieces` and `tm_guide.decoding` goes through
this module, so the blueprints stay independent of how those parts name their objects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MTOptions:
    """Per-request decoding options; None keeps the translator's default."""

    lam: float | None = None
    beam_size: int | None = None
    min_similarity: float | None = None
    binary_reward: bool = False
    unguided: bool = False


def load_translator(config: Any, bundle: Any, store: Any, aligner: Any) -> Any:
    from tm_guide.decoding import GuidedTranslator
    from tm_guide.pieces import PieceBuilder

    builder = PieceBuilder(store, bundle, aligner=aligner)
    return GuidedTranslator(bundle, store, builder)


def model_info(translator: Any) -> dict[str, Any]:
    card = translator.bundle.card
    return {
        "name": card.name,
        "source_lang": card.source_lang,
        "target_lang": card.target_lang,
        "quantization": card.quantization,
        "checksum": card.files.get("model.bin"),
    }


def translate_segments(
    translator: Any,
    sources: Sequence[str],
    memory_ids: Sequence[int],
    m: int,
    options: MTOptions,
    memory_names: dict[int, str],
) -> list[dict[str, Any]]:
    raise NotImplementedError


def analyse_new_segments(services: Any, segments: Sequence[Any]) -> bool:
    """Tokenize and align freshly written segments so that their pieces serve the next query.

    Without a usable model the segment is stored unaligned (the answer says so, and the piece
    builder aligns it when it is first retrieved once a model is there).
    """
    from tm_guide.errors import ModelError

    try:
        aligner = services.aligner()
    except ModelError as exc:
        log.info("segments stored without alignment: %s", exc.message)
        return False
    aligner.align_segments(segments)
    return True


def analyse_memory(services: Any, memory: Any) -> int:
    """Align what an import brought in, in one pass; 0 when there is no model to tokenize with."""
    from tm_guide.errors import ModelError

    try:
        aligner = services.aligner()
    except ModelError as exc:
        log.info("memory %s imported without alignment: %s", memory.name, exc.message)
        return 0
    return aligner.align_memory(memory, mode="auto").aligned
