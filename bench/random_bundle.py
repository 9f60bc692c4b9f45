"""A randomly initialised Marian (OPUS-MT) model of a real size, converted into a bundle.

    python bench/random_bundle.py OUT_DIR [--layers 6] [--d-model 512] [--heads 8] [--ffn 2048]
                                          [--vocab 58000] [--quantization int8] [--seed 0]

For speed measurements on the sizes users deploy (bench/decoding_bench.py --bundle OUT_DIR): an
OPUS-MT model is 6+6 layers, d_model 512, 8 heads, feed-forward 2048, a ~58k joint vocabulary.
Random weights decode as fast as trained ones per step (outputs are nonsense, so give the bench a
--max-length). The SentencePiece model is a small one trained on the bench's sample sentences;
the vocabulary is its pieces followed by filler tokens up to --vocab, as the output layer's size is
what costs. The conversion is `tm-guide model convert`'s (tm_guide.model.convert).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=2048)
    parser.add_argument("--vocab", type=int, default=58000)
    parser.add_argument("--quantization", default="int8")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import sentencepiece as spm
    import torch
    import transformers
    from decoding_bench import SAMPLE

    from tm_guide.model.convert import ConvertOptions, convert_checkpoint

    checkpoint = args.out.with_name(args.out.name + "-checkpoint")
    checkpoint.mkdir(parents=True, exist_ok=True)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(SAMPLE * 8),
        model_writer=model,
        vocab_size=400,
        hard_vocab_limit=False,
        model_type="unigram",
        unk_id=0,
        eos_id=1,
        bos_id=-1,
        pad_id=-1,
        character_coverage=1.0,
        num_threads=1,
        minloglevel=2,
    )
    for name in ("source.spm", "target.spm"):
        (checkpoint / name).write_bytes(model.getvalue())
    pieces = spm.SentencePieceProcessor(model_proto=model.getvalue())
    vocab = {pieces.id_to_piece(i): i for i in range(pieces.get_piece_size())}
    while len(vocab) < args.vocab - 1:
        vocab[f"▁filler{len(vocab)}"] = len(vocab)
    vocab["<pad>"] = len(vocab)  # Marian keeps <pad> last
    (checkpoint / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
        tokenizer = transformers.MarianTokenizer(
            str(checkpoint / "source.spm"),
            str(checkpoint / "target.spm"),
            str(checkpoint / "vocab.json"),
            source_lang="en",
            target_lang="de",
        )
        tokenizer.save_pretrained(checkpoint)
    config = transformers.MarianConfig(
        vocab_size=len(vocab),
        d_model=args.d_model,
        encoder_layers=args.layers,
        decoder_layers=args.layers,
        encoder_attention_heads=args.heads,
        decoder_attention_heads=args.heads,
        encoder_ffn_dim=args.ffn,
        decoder_ffn_dim=args.ffn,
        max_position_embeddings=512,
        pad_token_id=vocab["<pad>"],
        eos_token_id=vocab["</s>"],
        decoder_start_token_id=vocab["<pad>"],
        forced_eos_token_id=vocab["</s>"],
    )
    torch.manual_seed(args.seed)
    transformers.MarianMTModel(config).eval().save_pretrained(checkpoint)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
        path = convert_checkpoint(
            ConvertOptions(
                source_format="transformers",
                checkpoint=checkpoint,
                output_dir=args.out,
                source_lang="en",
                target_lang="de",
                quantization=args.quantization,
                name=args.out.name,
                training_data=f"random weights (bench/random_bundle.py, seed {args.seed})",
            )
        )
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
