"""The tokenizer protocol the aligner and the piece builder need, and two implementations.

The model bundle (`tm_guide.model.Bundle`) satisfies `Tokenizer` as it is; `SentencePieceTokenizer`
serves when a memory is analysed with SentencePiece models but no translation model, and
`WhitespaceTokenizer` when pieces should be whole words.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Protocol, runtime_checkable

from tm_guide.errors import ModelError

SENTENCEPIECE_SPACE = "\u2581"


@runtime_checkable
class Tokenizer(Protocol):
    """What TM analysis needs: the decoder's subword split, and a stable name for it."""

    @property
    def tokenizer_id(self) -> str: ...

    @property
    def alignment_priors_path(self) -> Path | None:
        """Word-alignment priors counted in this tokenization (a bundle's training data), for
        memories too small for their own; None: none."""
        ...

    def encode_source(self, text: str) -> list[str]: ...

    def encode_target(self, text: str) -> list[str]: ...


class WhitespaceTokenizer:
    """Tokens are the whitespace-separated words; pieces are then word n-grams."""

    tokenizer_id = "whitespace"
    alignment_priors_path = None

    def encode_source(self, text: str) -> list[str]:
        return text.split()

    def encode_target(self, text: str) -> list[str]:
        return text.split()


class SentencePieceTokenizer:
    """Source and target SentencePiece models (they may be the same file)."""

    def __init__(self, source_model: Path, target_model: Path | None = None) -> None:
        import sentencepiece as spm

        target_model = target_model or source_model
        self._source = self._load(spm, Path(source_model))
        self._target = self._load(spm, Path(target_model))
        # Same scheme as tm_guide.model.Bundle.tokenizer_id: the same two files give the same id,
        # so alignments made with the bare models stay valid under a bundle that ships them.
        digest = hashlib.sha256()
        for path in (source_model, target_model):
            file_digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            digest.update(file_digest.encode("ascii") + b"|")
        self._id = "spm:" + digest.hexdigest()[:16]
        self.alignment_priors_path: Path | None = None

    @staticmethod
    def _load(spm, path: Path):  # type: ignore[no-untyped-def]
        if not path.is_file():
            raise ModelError(f"{path}: SentencePiece model not found")
        try:
            return spm.SentencePieceProcessor(model_file=str(path))
        except (OSError, RuntimeError) as exc:
            raise ModelError(f"{path}: not a SentencePiece model ({exc})") from exc

    @property
    def tokenizer_id(self) -> str:
        return self._id

    def encode_source(self, text: str) -> list[str]:
        return list(self._source.encode(text, out_type=str))

    def encode_target(self, text: str) -> list[str]:
        return list(self._target.encode(text, out_type=str))


def tokens_to_text(tokens: list[str] | tuple[str, ...]) -> str:
    """Plain text for full-text retrieval from a token sequence (SentencePiece or word tokens)."""
    if any(SENTENCEPIECE_SPACE in token for token in tokens):
        return "".join(tokens).replace(SENTENCEPIECE_SPACE, " ").strip()
    return " ".join(tokens)
