"""Tiny randomly initialised transformers checkpoints of the model families users bring, with
each family's real configuration flags, and their conversion by `tm-guide model convert`'s code.

m2m100: pre-norm, final layer norms, sinusoidal positions, language tokens (__de__);
mbart50: pre-norm, learned positions, layernorm_embedding, GELU, scaled embeddings (de_DE);
bart: post-norm, learned positions, layernorm_embedding, GELU.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from tiny_corpus import tiny_corpus, train_spm

FAMILIES = ("m2m100", "mbart50", "bart")
# how far each fixture favours </s>, so that its hypotheses end at varied lengths (1 to 16)
EOS_BIAS = {"m2m100": 0.12, "mbart50": 2.0, "bart": 6.0}


# every tiny fixture's shape: 2+2 layers, d_model 64, 4 heads
TINY_SIZES = dict(
    d_model=64,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=128,
    decoder_ffn_dim=128,
    max_position_embeddings=128,
)


def _sizes(**ids: int) -> dict:
    return {**TINY_SIZES, **ids}


def build_checkpoint(family: str, out: Path) -> Path:
    """A saved transformers checkpoint of `family` (with its tokenizer) in `out`."""
    import sentencepiece as spm
    import torch
    import transformers

    out.mkdir(parents=True)
    model_file = out / "sentencepiece.bpe.model"
    model_file.write_bytes(train_spm(tiny_corpus(), unk_id=0, bos_id=1, eos_id=2))  # fairseq ids
    ids = dict(pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
    if family == "m2m100":
        processor = spm.SentencePieceProcessor(model_file=str(model_file))
        vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
        for i in range(processor.get_piece_size()):
            vocab.setdefault(processor.id_to_piece(i), len(vocab))
        (out / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        tokenizer = transformers.M2M100Tokenizer(
            str(out / "vocab.json"), str(model_file), src_lang="en", tgt_lang="de"
        )
        size = len(tokenizer) + len(tokenizer.lang_token_to_id) + tokenizer.num_madeup_words
        config = transformers.M2M100Config(
            vocab_size=size, tie_word_embeddings=False, **_sizes(**ids)
        )
        model_class = transformers.M2M100ForConditionalGeneration
    else:
        processor = spm.SentencePieceProcessor(model_file=str(model_file))
        pieces = [
            (processor.id_to_piece(i), processor.get_score(i))
            for i in range(processor.get_piece_size())
        ]
        codes = {"src_lang": "en_XX", "tgt_lang": "de_DE"} if family == "mbart50" else {}
        tokenizer = transformers.MBart50Tokenizer(vocab=pieces, bos_token="<s>", **codes)
        common = dict(
            vocab_size=len(tokenizer),
            activation_function="gelu",
            tokenizer_class="MBart50Tokenizer",
            forced_bos_token_id=None,
            **_sizes(**ids),
        )
        # the flags hub configs carry (transformers 5 no longer writes them; CTranslate2 reads them)
        if family == "mbart50":
            config = transformers.MBartConfig(
                scale_embedding=True, normalize_before=True, normalize_embedding=True, **common
            )
            model_class = transformers.MBartForConditionalGeneration
        else:
            config = transformers.BartConfig(
                normalize_before=False, normalize_embedding=True, **common
            )
            model_class = transformers.BartForConditionalGeneration
    tokenizer.save_pretrained(out)
    with torch.random.fork_rng():
        torch.manual_seed(3)
        model = model_class(config).eval()
        with torch.no_grad():  # random weights favour no token: make </s> a real choice
            for name, parameter in model.named_parameters():
                if "embed_positions" not in name and "norm" not in name:
                    parameter.add_(torch.randn(parameter.shape) * 0.3)
            if hasattr(model, "final_logits_bias"):
                model.final_logits_bias[0, 2] = EOS_BIAS[family]
            else:  # M2M100 has no output bias: a final-norm offset that </s>'s row reads
                model.model.decoder.layer_norm.bias.fill_(1.0)
                model.lm_head.weight[2] = EOS_BIAS[family]
    model.save_pretrained(out)
    return out


def convert(checkpoint: Path, out: Path, quantization: str) -> Path:
    """The checkpoint as an en->de bundle."""
    from tm_guide.model.convert import ConvertOptions, convert_checkpoint

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return convert_checkpoint(
            ConvertOptions(
                source_format="transformers",
                checkpoint=checkpoint,
                output_dir=out,
                source_lang="en",
                target_lang="de",
                quantization=quantization,
                name=out.name,
                training_data="random weights (test fixture)",
            )
        )
