"""The server's side of the model: loading the guided translator and shaping its output as JSON.

Everything that touches `tm_guide.model`, `tm_guide.pieces` and `tm_guide.decoding` goes through
this module, so the blueprints stay independent of how those parts name their objects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tm_guide.config import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MTOptions:
    """Per-request decoding options; None keeps the translator's default."""

    lam: float | None = None
    beam_size: int | None = None
    min_similarity: float | None = None
    binary_reward: bool = False
    unguided: bool = False


def load_translator(settings: Settings, store: Any) -> Any:
    from tm_guide.decoding import GuidedTranslator
    from tm_guide.model import Bundle

    bundle = Bundle.load(settings.model_path, device=settings.device)
    return GuidedTranslator(bundle, store)


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
    """Tokenize and align freshly written segments so their pieces serve the next query."""
    raise NotImplementedError


def analyse_memory(services: Any, memory: Any) -> int:
    raise NotImplementedError
