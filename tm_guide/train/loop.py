"""The training run: Marian Transformer, token batches, checkpoints, exports, a deadline."""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
import signal
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import torch
import torch.nn.functional as F
from transformers import MarianConfig, MarianMTModel

from tm_guide.errors import ModelError
from tm_guide.formats.parallel import read_tsv
from tm_guide.model.bundle import read_vocabularies
from tm_guide.model.card import ModelCard
from tm_guide.train.batches import Example, encode_pairs, iterate, make_batches
from tm_guide.train.export import export_bundle
from tm_guide.train.options import TrainOptions
from tm_guide.train.vocab import EOS_ID, UNK_ID, add_byte_fallback, train_joint_spm, vocabulary
from tm_guide.train.warm_start import load_bundle_weights

log = logging.getLogger("tm_guide.train")


def read_pairs(path: Path, options: TrainOptions) -> list[tuple[str, str]]:
    """(source, target) pairs of a TSV file, by the one TSV rule of tm_guide.formats (two or
    three columns, an optional header; blank lines and pairs with an empty side skipped)."""
    reader = read_tsv(path, options.source_lang, options.target_lang)
    pairs = [(record.source, record.target) for record in reader]
    if reader.stats.skipped:
        log.info("%s: skipped %s", path, dict(reader.stats.skipped))
    return pairs


# what a warm-started run's bundle keeps of its start's card: the guidance tuned on that model
GUIDANCE_FIELDS = (
    "guided_lambda",
    "guided_reward_repeats",
    "guided_clipped",
    "guided_weighting",
    "guided_repair",
)
# the output bias of <unk> in a byte-fallback model: every engine reads it with the weights
NEVER = -1e4


def build_model(options: TrainOptions, vocab_size: int, pad_id: int) -> MarianMTModel:
    shape = options.shape
    config = MarianConfig(
        vocab_size=vocab_size,
        d_model=shape.d_model,
        encoder_layers=shape.layers,
        decoder_layers=shape.layers,
        encoder_attention_heads=shape.heads,
        decoder_attention_heads=shape.heads,
        encoder_ffn_dim=shape.ffn,
        decoder_ffn_dim=shape.ffn,
        dropout=shape.dropout,
        attention_dropout=0.0,
        activation_dropout=0.0,
        activation_function="relu",
        max_position_embeddings=256,
        pad_token_id=pad_id,
        eos_token_id=EOS_ID,
        decoder_start_token_id=pad_id,
        forced_eos_token_id=EOS_ID,
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
    )
    torch.manual_seed(options.seed)
    return MarianMTModel(config)


@torch.no_grad()
def keep_start_embedding_zero(model: MarianMTModel, pad_id: int) -> None:
    """Keep the <pad> row of the tied embedding at zero.

    Why: the decoder starts from <pad>, and CTranslate2 starts Marian decoders from a zero
    embedding; the tied output projection would otherwise move that row during training.
    """
    embedding = cast(torch.nn.Embedding, model.get_input_embeddings())
    embedding.weight[pad_id].zero_()


def corpus_description(train_tsv: Path) -> str:
    """What the training TSV holds, as the corpus builder described it in its stats.json.

    The builder knows which sources went in; a card must not claim a corpus the run never read.
    """
    stats = train_tsv.parent / "stats.json"
    if stats.is_file():
        description = json.loads(stats.read_text(encoding="utf-8")).get("description")
        if description:
            return str(description)
    return f"{train_tsv.name} (no description beside it)"


def learning_rate(options: TrainOptions, step: int, start_step: int = 0) -> float:
    """Linear warmup, then inverse square root decay.

    A run warm-started at start_step continues the decay where the earlier run left it, ramped
    up again over rewarm_steps because its optimizer moments start from zero.
    """
    rate = options.peak_lr * min(
        max(step, 1) / options.warmup_steps, math.sqrt(options.warmup_steps / max(step, 1))
    )
    if start_step and step - start_step < options.rewarm_steps:
        rate *= max(step - start_step, 1) / options.rewarm_steps
    return rate


def loss_of(model, batch, label_smoothing: float) -> tuple[torch.Tensor, int]:
    logits = model(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        decoder_input_ids=batch["decoder_input_ids"],
    ).logits
    labels = batch["labels"]
    loss = F.cross_entropy(
        logits.reshape(-1, logits.size(-1)),
        labels.reshape(-1),
        ignore_index=-100,
        label_smoothing=label_smoothing,
        reduction="sum",
    )
    tokens = int((labels != -100).sum())
    return loss / max(tokens, 1), tokens


@torch.no_grad()
def dev_loss(model, examples: list[Example], pad_id: int) -> float:
    """Per-token cross-entropy (no smoothing) on the dev set."""
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    for _, batch in iterate(examples, make_batches(examples, 4000, 0), 0, pad_id):
        loss, count = loss_of(model, batch, 0.0)
        total += float(loss) * count
        tokens += count
    model.train(was_training)
    return total / max(tokens, 1)


class Checkpoints:
    """Checkpoints in run_dir/checkpoints, the last few kept for averaging and resuming."""

    def __init__(self, directory: Path, keep: int) -> None:
        self.directory = directory
        self.keep = max(keep, 1)
        directory.mkdir(parents=True, exist_ok=True)

    def paths(self) -> list[Path]:
        return sorted(self.directory.glob("step-*.pt"))

    def save(self, state: dict) -> Path:
        path = self.directory / f"step-{state['progress']['step']:07d}.pt"
        partial = path.with_suffix(".partial")
        torch.save(state, partial)
        partial.rename(path)
        for old in self.paths()[: -self.keep]:
            old.unlink()
        return path

    def latest(self) -> dict | None:
        paths = self.paths()
        return torch.load(paths[-1], weights_only=False) if paths else None

    def averaged_weights(self) -> dict[str, torch.Tensor] | None:
        paths = self.paths()
        if len(paths) < 2:
            return None
        total: dict[str, torch.Tensor] = {}
        for path in paths:
            weights = torch.load(path, weights_only=False)["model"]
            for name, tensor in weights.items():
                if tensor.is_floating_point():
                    total[name] = total.get(name, 0) + tensor.double() / len(paths)
                else:
                    total[name] = tensor
        return {
            name: tensor.float() if tensor.is_floating_point() else tensor
            for name, tensor in total.items()
        }


class StopFlag:
    """Set by SIGTERM/SIGINT: training stops at the next step and the final bundle is written."""

    def __init__(self) -> None:
        self.raised = False
        signal.signal(signal.SIGTERM, self._set)
        signal.signal(signal.SIGINT, self._set)

    def _set(self, signum, frame) -> None:  # noqa: ARG002
        log.info("signal %s: stopping at the next step, then exporting", signum)
        self.raised = True


def run(options: TrainOptions) -> dict:
    """Train until the deadline (or a signal), then write the final bundle. Returns its scores."""
    torch.set_num_threads(options.threads)
    random.seed(options.seed)
    options.run_dir.mkdir(parents=True, exist_ok=True)
    (options.run_dir / "options.json").write_text(
        json.dumps(asdict(options), default=str, indent=2)
    )
    started = time.monotonic()

    train_pairs = read_pairs(options.train_tsv, options)
    dev_pairs = read_pairs(options.dev_tsv, options)
    test_pairs = read_pairs(options.test_tsv, options)
    log.info(
        "data: %d train, %d dev, %d test pairs", len(train_pairs), len(dev_pairs), len(test_pairs)
    )
    spm_prefix = options.run_dir / "spm"
    start_card = None
    guidance = None  # the start's tuned guidance, kept on the bundles this run writes
    if options.init_from is not None:
        start_card = ModelCard.read(options.init_from)
        guidance = {name: getattr(start_card, name) for name in GUIDANCE_FIELDS}
        if not spm_prefix.with_suffix(".model").exists():
            spm_prefix.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(options.init_from / "source.spm", spm_prefix.with_suffix(".model"))
            if options.byte_fallback:
                add_byte_fallback(spm_prefix.with_suffix(".model"))
    processor = train_joint_spm(
        [text for pair in train_pairs for text in pair],
        spm_prefix,
        options.vocab_size,
        options.seed,
    )
    spm_file = spm_prefix.with_suffix(".model")
    pieces = vocabulary(processor)
    pad_id = len(pieces) - 1
    byte_fallback = processor.is_byte(pad_id - 1)  # the byte pieces come last
    if options.init_from is not None:
        bundle_vocabulary = read_vocabularies(options.init_from).target
        if bundle_vocabulary != pieces[: len(bundle_vocabulary)]:  # bytes may follow
            raise ModelError(
                f"{options.init_from}: its vocabulary is not the one of {spm_prefix}.model"
            )
    train = encode_pairs(processor, train_pairs, options.shape.max_length)
    dev = encode_pairs(processor, dev_pairs, options.shape.max_length)
    epoch_tokens = sum(len(e.target) for e in train)
    log.info(
        "vocabulary %d pieces; %d target tokens per epoch; prepared in %.0fs",
        len(pieces),
        epoch_tokens,
        time.monotonic() - started,
    )

    model = build_model(options, len(pieces), pad_id)
    keep_start_embedding_zero(model, pad_id)
    if byte_fallback:  # <unk> is never the right output
        with torch.no_grad():
            model.final_logits_bias[0, UNK_ID] = NEVER
    log.info("model: %.1fM parameters", sum(p.numel() for p in model.parameters()) / 1e6)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=options.peak_lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.0
    )
    checkpoints = Checkpoints(options.run_dir / "checkpoints", options.average_last)
    state: dict[str, Any] = {
        "step": 0, "epoch": 0, "position": 0, "tokens": 0, "train_seconds": 0.0
    }  # fmt: skip
    saved = checkpoints.latest() if options.resume else None
    if saved is None and options.init_from is not None and start_card is not None:
        load_bundle_weights(model, options.init_from, options.shape.layers)
        keep_start_embedding_zero(model, pad_id)
        earlier = start_card.training_data or {}
        state["step"] = int(earlier.get("steps", 0))
        state["tokens"] = int(earlier.get("target_tokens_seen", 0))
        state["train_seconds"] = float(earlier.get("training_hours", 0.0)) * 3600
        state["epoch"] = int(state["tokens"] / max(epoch_tokens, 1))
        log.info(
            "warm start from %s (step %d, dev loss %.3f)",
            options.init_from,
            state["step"],
            dev_loss(model, dev, pad_id),
        )
    state["start_step"] = state.get("start_step", state["step"] if options.init_from else 0)
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        state = saved["progress"]
        log.info(
            "resumed at step %d (epoch %d, batch %d)",
            state["step"],
            state["epoch"],
            state["position"],
        )

    def training_data(final: bool) -> dict:
        return {
            "corpus": corpus_description(options.train_tsv),
            "pairs": len(train_pairs),
            "spm": f"joint SentencePiece unigram, {len(pieces) - 1} pieces"
            + (" (256 of them bytes: byte fallback)" if byte_fallback else ""),
            "model": f"MarianMT {options.shape.layers}+{options.shape.layers} layers, d_model "
            f"{options.shape.d_model}, {options.shape.heads} heads, ffn {options.shape.ffn}",
            "steps": state["step"],
            "target_tokens_seen": state["tokens"],
            "epochs": round(state["tokens"] / max(epoch_tokens, 1), 2),
            "training_hours": round(state["train_seconds"] / 3600, 2),
            "checkpoint_averaging": final,
            **(
                {"warm_start": f"continued from a bundle at step {state['start_step']}"}
                if state["start_step"]
                else {}
            ),
        }

    def save_checkpoint() -> None:
        path = checkpoints.save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "progress": dict(state),
            }
        )
        log.info("checkpoint %s; dev loss %.3f", path.name, dev_loss(model, dev, pad_id))

    stop = StopFlag()
    deadline = options.deadline.timestamp()
    last_checkpoint = last_export = time.monotonic()
    window_tokens, window_loss, window_steps, window_start = 0, 0.0, 0, time.monotonic()
    model.train()
    done = False
    while not done:
        batches = make_batches(train, options.batch_tokens, options.seed + state["epoch"])
        for position, batch in iterate(train, batches, state["position"], pad_id):
            step_start = time.monotonic()
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(options, state["step"] + 1, state["start_step"])
            loss, tokens = loss_of(model, batch, options.label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            keep_start_embedding_zero(model, pad_id)
            state["step"] += 1
            state["position"] = position + 1
            state["tokens"] += tokens
            state["train_seconds"] += time.monotonic() - step_start
            window_tokens += tokens
            window_loss += float(loss.detach())
            window_steps += 1
            if state["step"] % 20 == 0:
                elapsed = time.monotonic() - window_start
                left = deadline - time.time()
                log.info(
                    "step %d epoch %d batch %d/%d loss %.3f lr %.2e %.0f tgt tok/s; "
                    "%.2f epochs done; %.0f min to deadline",
                    state["step"],
                    state["epoch"],
                    position + 1,
                    len(batches),
                    window_loss / window_steps,
                    learning_rate(options, state["step"], state["start_step"]),
                    window_tokens / max(elapsed, 1e-9),
                    state["tokens"] / epoch_tokens,
                    left / 60,
                )
                window_tokens, window_loss, window_steps, window_start = 0, 0.0, 0, time.monotonic()
            now = time.monotonic()
            if time.time() >= deadline or stop.raised:
                done = True
                break
            if now - last_checkpoint >= options.checkpoint_minutes * 60:
                save_checkpoint()
                last_checkpoint = time.monotonic()
            if options.export_minutes and now - last_export >= options.export_minutes * 60:
                scores = export_bundle(
                    model,
                    spm_file,
                    pieces,
                    options,
                    test_pairs[: options.export_test_limit],
                    training_data(False),
                    f"step{state['step']}",
                    guidance,
                )
                log.info(
                    "mid-way bundle written to %s: BLEU %.2f chrF %.2f on %d test sentences "
                    "(%.0fs)",
                    options.bundle_dir,
                    scores.bleu,
                    scores.chrf,
                    scores.sentences,
                    scores.seconds,
                )
                last_export = time.monotonic()
        else:
            state["epoch"] += 1
            state["position"] = 0

    log.info("stopping at step %d (%.2f epochs)", state["step"], state["tokens"] / epoch_tokens)
    save_checkpoint()
    model.eval()
    current_loss = dev_loss(model, dev, pad_id)
    averaged = checkpoints.averaged_weights()
    averaging = False
    if averaged is not None:
        current = {k: v.clone() for k, v in model.state_dict().items()}
        model.load_state_dict(averaged)
        averaged_loss = dev_loss(model, dev, pad_id)
        log.info(
            "dev loss: last %.3f, average of %d checkpoints %.3f",
            current_loss,
            len(checkpoints.paths()),
            averaged_loss,
        )
        if averaged_loss < current_loss:
            averaging = True
        else:
            model.load_state_dict(current)
    scores = export_bundle(
        model, spm_file, pieces, options, test_pairs, training_data(averaging), "final", guidance
    )
    log.info(
        "final bundle written to %s: BLEU %.2f chrF %.2f on %d test sentences (%.0fs)",
        options.bundle_dir,
        scores.bleu,
        scores.chrf,
        scores.sentences,
        scores.seconds,
    )
    result = {
        "bleu": scores.bleu,
        "chrf": scores.chrf,
        "steps": state["step"],
        "finished": datetime.now(UTC).isoformat(),
    }
    (options.run_dir / "final.json").write_text(json.dumps(result, indent=2))
    return result
