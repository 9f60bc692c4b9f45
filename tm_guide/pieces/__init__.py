"""Word alignment of translation memories and translation-piece collection (paper section 3.1)."""

from tm_guide.pieces.align import ALIGNER_ID, AlignOptions, AlignReport, MemoryAligner
from tm_guide.pieces.builder import FuzzyMatch, PieceBuilder, PieceOptions, TranslationPieces
from tm_guide.pieces.tokenizer import SentencePieceTokenizer, Tokenizer, WhitespaceTokenizer

__all__ = [
    "ALIGNER_ID",
    "AlignOptions",
    "AlignReport",
    "FuzzyMatch",
    "MemoryAligner",
    "PieceBuilder",
    "PieceOptions",
    "SentencePieceTokenizer",
    "Tokenizer",
    "TranslationPieces",
    "WhitespaceTokenizer",
]
