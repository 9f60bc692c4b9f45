"""Joint SentencePiece model and the Marian-style vocabulary built from it.

Marian conventions (what CTranslate2's Marian loader expects): `</s>` = 0, `<unk>` = 1, and
`<pad>` appended as the last id, which also starts the decoder (a zero embedding).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sentencepiece as spm

EOS_ID = 0
UNK_ID = 1


def train_joint_spm(
    texts: Sequence[str], prefix: Path, vocab_size: int, seed: int
) -> spm.SentencePieceProcessor:
    """Train (once) a unigram model on source and target text together."""
    model_file = prefix.with_suffix(".model")
    if not model_file.exists():
        prefix.parent.mkdir(parents=True, exist_ok=True)
        sample = list(texts)
        random.Random(seed).shuffle(sample)
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sample),
            model_prefix=str(prefix),
            vocab_size=vocab_size,
            model_type="unigram",
            character_coverage=0.9999,
            input_sentence_size=400_000,
            shuffle_input_sentence=True,
            eos_id=EOS_ID,
            unk_id=UNK_ID,
            bos_id=-1,
            pad_id=-1,
            eos_piece="</s>",
            unk_piece="<unk>",
            num_threads=2,
            hard_vocab_limit=False,
            minloglevel=2,
        )
    return spm.SentencePieceProcessor(model_file=str(model_file))


BYTE_PIECES = [f"<0x{b:02X}>" for b in range(256)]


def add_byte_fallback(model_file: Path) -> bool:
    """Give a SentencePiece model byte fallback, in place: its 256 byte pieces appended after
    every existing piece (whose ids stay), so a character outside the pieces becomes its UTF-8
    bytes instead of <unk> (no "⁇" in an output). False when it had byte fallback already.
    Needs protobuf (the [train] extra)."""
    from sentencepiece import sentencepiece_model_pb2

    model_pb2: Any = sentencepiece_model_pb2  # generated protobuf code, without type stubs
    proto = model_pb2.ModelProto()
    proto.ParseFromString(model_file.read_bytes())
    if proto.trainer_spec.byte_fallback:
        return False
    for piece in BYTE_PIECES:
        added = proto.pieces.add()
        added.piece = piece
        added.score = 0.0
        added.type = model_pb2.ModelProto.SentencePiece.BYTE
    proto.trainer_spec.byte_fallback = True
    model_file.write_bytes(proto.SerializeToString())
    return True


def vocabulary(processor: spm.SentencePieceProcessor) -> list[str]:
    """Pieces by id, `<pad>` last."""
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())] + ["<pad>"]


def save_marian_tokenizer(processor_file: Path, pieces: list[str], directory: Path) -> None:
    """Write a transformers MarianTokenizer beside the weights (the converter reads it)."""
    from transformers import MarianTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    vocab_file = directory / "vocab.json"
    vocab_file.write_text(json.dumps({p: i for i, p in enumerate(pieces)}, ensure_ascii=False))
    tokenizer = MarianTokenizer(
        source_spm=str(processor_file),
        target_spm=str(processor_file),
        vocab=str(vocab_file),
        unk_token="<unk>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=512,
    )
    tokenizer.save_pretrained(str(directory))
