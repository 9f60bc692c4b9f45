"""A model bundle: a CTranslate2 model, its SentencePiece models and its card, checked before use.

A bundle is a directory (or an archive written by `tm-guide model export`) holding model.bin,
config.json, the CTranslate2 vocabulary file(s), source.spm, target.spm and model_card.json.
Loading verifies every checksum listed in the card and that the SentencePiece models belong to the
vocabularies, so a damaged or mixed-up bundle fails at start-up with a message naming the file,
instead of producing silent garbage translations later.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import ctranslate2
import sentencepiece as spm

from tm_guide import languages
from tm_guide.errors import InvalidInput, ModelError
from tm_guide.model.card import (
    ALIGNMENT_PRIORS,
    CARD_FILE,
    SOURCE_SPM,
    TARGET_SPM,
    ModelCard,
    sha256_file,
    verify_files,
)
from tm_guide.model.language_tokens import token_for
from tm_guide.model.positions import NO_LIMITS, PositionLimits, read_position_limits
from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE
from tm_guide.pieces.words import byte_value
from tm_guide.text.brackets import closed_brackets
from tm_guide.text.edges import Edges, edges_of, is_mark, with_edges
from tm_guide.text.edits import Edited
from tm_guide.text.normalized import restore
from tm_guide.text.seams import set_seams
from tm_guide.text.stutter import stutter_passes

log = logging.getLogger(__name__)

DEFAULT_EOS = "</s>"
_VOCAB_STEMS = ("shared_vocabulary", "source_vocabulary", "target_vocabulary")
_DEVICES = ("cpu", "cuda", "auto")


@dataclass(frozen=True)
class Vocabularies:
    """The CTranslate2 vocabularies of a bundle (the same list twice for a shared vocabulary)."""

    source: list[str]
    target: list[str]
    source_file: str
    target_file: str


class Bundle:
    """A loaded, verified model bundle. Build it with `Bundle.load`."""

    def __init__(
        self,
        path: Path,
        card: ModelCard,
        translator: ctranslate2.Translator,
        source_sp: spm.SentencePieceProcessor,
        target_sp: spm.SentencePieceProcessor,
        vocabularies: Vocabularies,
        eos_token: str = DEFAULT_EOS,
        positions: PositionLimits = NO_LIMITS,
    ) -> None:
        self.path = path
        self.card = card
        self.translator = translator
        self.source_sp = source_sp
        self.target_sp = target_sp
        self.vocabularies = vocabularies
        self.eos_token = eos_token  # the model's end-of-sentence token (config.json)
        self.positions = positions  # longest source/target sequences the model can encode
        self._language_tokens: dict[str, str] = {}  # tag -> token, as token_for found it
        self._spelt: dict[str, bool] = {}  # a mark -> whether the source vocabulary has a piece

    @classmethod
    def load(
        cls,
        path: Path | str,
        device: str = "cpu",
        compute_type: str = "default",
        *,
        intra_threads: int = 0,
    ) -> Bundle:
        """Verify and load a bundle directory or archive; raise ModelError naming what is wrong.

        device is cpu, cuda or auto (cuda when a GPU is visible); intra_threads=0 lets CTranslate2
        choose.
        """
        path = Path(path)
        if not path.exists():
            raise ModelError(f"{path}: model bundle not found (set TM_GUIDE_MODEL or pass --model)")
        if path.is_file():
            from tm_guide.model.archive import unpack_archive

            path = unpack_archive(path)
        card = ModelCard.read(path)
        verify_files(path, card)
        vocabularies = read_vocabularies(path)
        source_sp = load_spm(path / SOURCE_SPM)
        target_sp = load_spm(path / TARGET_SPM)
        check_pieces_in_vocabulary(
            source_sp, vocabularies.source, SOURCE_SPM, vocabularies.source_file
        )
        check_pieces_in_vocabulary(
            target_sp, vocabularies.target, TARGET_SPM, vocabularies.target_file
        )
        eos_token = _check_config(path)
        try:
            translator = ctranslate2.Translator(
                str(path),
                device=resolve_device(device),
                compute_type=compute_type,
                intra_threads=intra_threads,
            )
        except (RuntimeError, ValueError) as exc:
            raise ModelError(
                f"{path / 'model.bin'}: CTranslate2 cannot load the model ({exc})"
            ) from exc
        if resolve_device(device) == "cuda":
            translator = _runnable(
                translator, vocabularies.source[-1], path, compute_type, intra_threads
            )
        positions = read_position_limits(path / "model.bin")
        bundle = cls(
            path, card, translator, source_sp, target_sp, vocabularies, eos_token, positions
        )
        try:  # a multilingual model must know the card's own pair
            bundle.language_token(card.source_lang, "source_lang")
            bundle.language_token(card.target_lang, "target_lang")
        except InvalidInput as exc:
            raise ModelError(f"{path / CARD_FILE}: {exc.message}") from None
        return bundle

    def encode_source(self, text: str) -> list[str]:
        """Source subword pieces, WITHOUT `</s>` (see `source_input`)."""
        return list(self.source_sp.encode(text, out_type=str))

    def encode_target(self, text: str) -> list[str]:
        return list(self.target_sp.encode(text, out_type=str))

    def decode_target(self, tokens: Sequence[str]) -> str:
        """Detokenize target pieces; end-of-sentence, padding and language tokens, if any, are
        dropped."""
        languages = self.card.language_tokens
        dropped = (self.eos_token, "<pad>")
        return str(
            self.target_sp.decode_pieces(
                [t for t in tokens if t not in dropped and t not in languages]
            )
        )

    def same_text(self, text: str, other: str) -> bool:
        """Whether two target texts are the same up to the characters the target normalizer
        changes (those set_right puts back) and the spaces around them."""
        return self._normalized(text) == self._normalized(other)

    def set_right(
        self, source: str, translation: str, targets: Sequence[str] = ()
    ) -> tuple[Edited, ...]:
        """The edits that make the model's `translation` of `source` what a translator gets, in
        order, each of the text the one before made: the source's characters that the target
        tokenizer's normalizer changed put back ("m2" -> "m²"), and those of `targets` (the TM
        targets that guided it: "..." -> "…"; tm_guide.text.normalized), then a word written
        twice over written once (tm_guide.text.stutter, pass after pass), then, where `targets`
        guided it, a bracket it left open closed as the source closes its own
        (tm_guide.text.brackets) and the marks and hyphens at the seams of its gaps set right
        (tm_guide.text.seams); last, the marks at the source's edges that the model did not
        read put back (tm_guide.text.edges)."""
        restored = restore(source, translation, self._normalized, targets)
        once = stutter_passes(source, restored.text, targets)
        steps: tuple[Edited, ...] = (restored, *once)
        if targets:
            closed = closed_brackets(source, once[-1].text)
            steps += (closed, set_seams(source, closed.text, targets))
        return *steps, with_edges(self.edges(source), steps[-1].text)

    def edges(self, text: str) -> Edges:
        """`text` cut at the marks at its edges that the source vocabulary spells only in byte
        pieces (tm_guide.text.edges): the model translates the core, set_right puts them back."""
        return edges_of(text, self._unreadable)

    def mark_pieces(self, edges: Edges) -> frozenset[str]:
        """The byte pieces that spell the marks of `edges` in the target vocabulary."""
        marks = self.encode_target(edges.lead + edges.trail)
        return frozenset(p for p in marks if byte_value(p) is not None)

    def _unreadable(self, character: str) -> bool:
        if not is_mark(character):
            return False
        spelt = self._spelt.get(character)
        if spelt is None:
            encoded = self.source_sp.encode(character, out_type=str)
            pieces = [p for p in encoded if p != SENTENCEPIECE_SPACE]
            spelt = not pieces or any(byte_value(p) is None for p in pieces)
            self._spelt[character] = spelt
        return not spelt

    def _normalized(self, text: str) -> str:
        return str(self.target_sp.normalize(text)).replace(SENTENCEPIECE_SPACE, " ").strip()

    def target_surfaces(self, text: str) -> tuple[list[str], list[str]]:
        """Target pieces of `text` and the characters of `text` each stands for (before the
        normalizer: "…" where the piece says "..."; a byte-fallback character's text on its
        last byte piece, "" on the others).

        SentencePiece's offset mapping gives the same surfaces as its proto's without needing
        protobuf, which the serve install does not have."""
        mapped = self.target_sp.encode(text, out_type="offset_mapping")
        return list(mapped["pieces"]), [text[begin:end] for begin, end in mapped["offsets"]]

    def render_target(
        self,
        tokens: Sequence[str],
        surfaces: Sequence[str | None],
        attached: Sequence[bool] = (),
    ) -> tuple[str, list[int] | None]:
        """The text of target `tokens` where a token with a surface (not None) is written as
        that text (a TM target's own characters) and runs of the others are detokenized; with
        where each token starts in it, plus its length (as target_offsets; None where that is
        None). A leading space is one space, and none at the start or after a space (a free
        space piece before a kept word: "Immer" "▁" "▁Ignorieren"), nor after a token with a
        surface that `attached` marks (a mark its text writes the next word on: "=" + "▁ISO"
        is "=ISO")."""
        text = ""
        offsets: list[int] = []
        known = True
        k = 0
        while k < len(tokens):
            own = surfaces[k] is not None
            end = k
            while end < len(tokens) and (surfaces[end] is not None) == own:
                end += 1
            if own:
                spaced = False  # a space is owed before the next characters
                for j in range(k, end):
                    surface = str(surfaces[j])
                    stripped = surface.lstrip()
                    spaced |= stripped != surface or tokens[j].startswith(SENTENCEPIECE_SPACE)
                    offsets.append(len(text))
                    if stripped:
                        text += " " if text and spaced and not text.endswith(" ") else ""
                        text += stripped
                        spaced = False
            else:
                run = list(tokens[k:end])
                decoded = self.decode_target(run)
                space = (
                    " "
                    if text
                    and not text.endswith(" ")
                    and not (k > 0 and k - 1 < len(attached) and attached[k - 1])
                    and run[0].startswith(SENTENCEPIECE_SPACE)
                    and decoded
                    else ""
                )
                inner = self.target_offsets(run)
                known &= inner is not None
                for j in range(len(run)):
                    offsets.append(len(text) + (inner[j] + len(space) if inner and j else 0))
                text += space + decoded
            k = end
        offsets.append(len(text))
        return text, offsets if known else None

    def language_token(self, tag: str, field: str = "target_lang") -> str | None:
        """A multilingual model's token for language `tag` (None for a model of one pair);
        InvalidInput naming `field` when the model has no token for it. Looked up once per tag:
        every input and output asks."""
        if not self.card.language_tokens:
            return None
        token = self._language_tokens.get(tag)
        if token is None:
            token = token_for(self.card.language_tokens, tag, field)
            self._language_tokens[tag] = token
        return token

    def serves_language(self, tag: str, side: str) -> bool:
        """Whether the model reads (side "source") or writes (side "target") language `tag`: the
        card's language of that side (by language and script), or for a multilingual model any
        language it has a token for."""
        if not self.card.language_tokens:
            return languages.matches(tag, getattr(self.card, f"{side}_lang"))
        try:
            self.language_token(tag, f"{side}_lang")
        except InvalidInput:
            return False
        return True

    def serves(self, source_lang: str, target_lang: str) -> bool:
        """Whether the model translates this pair (serves_language, both sides)."""
        return self.serves_language(source_lang, "source") and self.serves_language(
            target_lang, "target"
        )

    def target_prefix(self, target_lang: str | None = None) -> list[str]:
        """The tokens every output starts with, forced (translate_batch's target_prefix): a
        multilingual model's target-language token, else none."""
        token = self.language_token(target_lang or self.card.target_lang, "target_lang")
        return [token] if token else []

    def target_offsets(self, tokens: Sequence[str]) -> list[int] | None:
        """Where each target token starts in `decode_target(tokens)`, plus the text's length:
        token k covers text[offsets[k]:offsets[k + 1]] (a leading space included), so a caller
        can point at the words a token span produced. None when the detokenizer does not grow
        the text token by token (a multi-byte character split across byte-fallback tokens)."""
        text = self.decode_target(tokens)
        offsets: list[int] = []
        for k in range(len(tokens)):
            prefix = self.decode_target(tokens[:k])
            if not text.startswith(prefix) or (offsets and len(prefix) < offsets[-1]):
                return None
            offsets.append(len(prefix))
        offsets.append(len(text))
        return offsets

    def source_input(self, pieces: Sequence[str], source_lang: str | None = None) -> list[str]:
        """The tokens to pass to translator.translate_batch/score_batch for these source pieces.

        Puts a multilingual model's source-language token first (`source_lang`, default the
        card's), appends `</s>` when the model was trained with it (card.add_source_eos), and
        cuts a source longer than the model's position table (CTranslate2 would fail the whole
        batch), so no caller has to know how the model was converted.
        """
        tokens = list(pieces)
        if tokens and tokens[-1] == self.eos_token:
            tokens.pop()
        language = self.language_token(source_lang or self.card.source_lang, "source_lang")
        head = [language] if language else []
        add_eos = self.card.add_source_eos
        limit = self.positions.source
        if limit is not None and len(head) + len(tokens) + add_eos > limit:
            tokens = tokens[: limit - add_eos - len(head)]
        tokens = head + tokens
        if add_eos:
            tokens.append(self.eos_token)
        return tokens

    def decoding_length(self, requested: int) -> int:
        """The max_decoding_length to pass to CTranslate2: at most the model's target positions.

        A target prefix counts too (CTranslate2 counts it), and score_batch needs one position
        more than the target's length.
        """
        limit = self.positions.target
        return requested if limit is None else min(requested, limit)

    @property
    def alignment_priors_path(self) -> Path | None:
        """The bundle's word-alignment priors (tm_guide.model.priors), if it ships them."""
        path = self.path / ALIGNMENT_PRIORS
        return path if path.is_file() else None

    @cached_property
    def tokenizer_id(self) -> str:
        """Stable id of the two SentencePiece models; stored alignments are only valid for it."""
        digest = hashlib.sha256()
        for name in (SOURCE_SPM, TARGET_SPM):
            digest.update(sha256_file(self.path / name).encode("ascii") + b"|")
        return "spm:" + digest.hexdigest()[:16]

    def __repr__(self) -> str:
        return (
            f"Bundle({self.card.name!r}, {self.card.source_lang}->{self.card.target_lang}, "
            f"path={str(self.path)!r})"
        )


def _runnable(
    translator: ctranslate2.Translator,
    token: str,
    path: Path,
    compute_type: str,
    intra_threads: int,
) -> ctranslate2.Translator:
    """`translator` (on CUDA) if it translates there, else the model on the CPU: CTranslate2's
    CUDA build needs CUDA 12's cuBLAS, which a CUDA 13 machine lacks, and it finds out only
    when it first translates. The torch engine still decodes on the GPU; what CTranslate2
    itself runs (no engine of ours for the model, the ct2 and rerank engines) runs on the
    CPU."""
    try:
        translator.translate_batch([[token]], beam_size=1, max_decoding_length=1)
        return translator
    except RuntimeError as exc:
        log.warning("CTranslate2 cannot translate on CUDA here (%s); it runs on the CPU", exc)
        return ctranslate2.Translator(
            str(path), device="cpu", compute_type=compute_type, intra_threads=intra_threads
        )


def resolve_device(device: str) -> str:
    if device not in _DEVICES:
        raise ModelError(f"device must be one of {', '.join(_DEVICES)}, not {device!r}")
    if device == "auto":
        return "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
    return device


def read_vocabularies(bundle_dir: Path) -> Vocabularies:
    """Read the CTranslate2 vocabulary file(s): *_vocabulary.json (CTranslate2 >= 3) or .txt."""
    found = {stem: _find_vocabulary_file(bundle_dir, stem) for stem in _VOCAB_STEMS}
    shared = found["shared_vocabulary"]
    if shared is not None:
        tokens = _read_vocabulary_file(shared)
        return Vocabularies(tokens, tokens, shared.name, shared.name)
    source, target = found["source_vocabulary"], found["target_vocabulary"]
    if source is None or target is None:
        raise ModelError(
            f"{bundle_dir}: no CTranslate2 vocabulary (shared_vocabulary.json, or "
            "source_vocabulary.json and target_vocabulary.json)"
        )
    return Vocabularies(
        _read_vocabulary_file(source), _read_vocabulary_file(target), source.name, target.name
    )


def _find_vocabulary_file(bundle_dir: Path, stem: str) -> Path | None:
    for suffix in (".json", ".txt"):
        candidate = bundle_dir / (stem + suffix)
        if candidate.is_file():
            return candidate
    return None


def _read_vocabulary_file(path: Path) -> list[str]:
    try:
        if path.suffix == ".json":
            tokens = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
                raise ModelError(f"{path}: expected a JSON list of token strings")
            return tokens
        return path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"{path}: unreadable vocabulary ({exc})") from exc


def load_spm(path: Path) -> spm.SentencePieceProcessor:
    processor = spm.SentencePieceProcessor()
    try:
        processor.Load(model_proto=path.read_bytes())
    except (RuntimeError, OSError) as exc:
        raise ModelError(f"{path}: not a valid SentencePiece model ({exc})") from exc
    return processor


def check_pieces_in_vocabulary(
    processor: spm.SentencePieceProcessor, vocabulary: Sequence[str], spm_name: str, vocab_name: str
) -> None:
    """Every normal piece the SentencePiece model can produce must be a token of the model.

    A SentencePiece model from another training run shares few pieces with the vocabulary; its
    pieces would all become <unk> and the translations garbage.
    """
    known = set(vocabulary)
    pieces = [
        processor.id_to_piece(i)
        for i in range(processor.get_piece_size())
        if not (processor.is_control(i) or processor.is_unknown(i) or processor.is_unused(i))
    ]
    missing = [p for p in pieces if p not in known]
    if missing:
        examples = ", ".join(repr(p) for p in missing[:5])
        raise ModelError(
            f"{spm_name}: vocabulary size mismatch: the SentencePiece model has "
            f"{len(pieces)} pieces, "
            f"{len(missing)} of them are not among the {len(vocabulary)} tokens of {vocab_name} "
            f"(e.g. {examples}); the SentencePiece model does not belong to this model"
        )


def _check_config(bundle_dir: Path) -> str:
    """The model's EOS token; config.json must leave source EOS to us (card.add_source_eos)."""
    path = bundle_dir / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"{path}: invalid JSON ({exc})") from exc
    if not isinstance(config, dict):
        raise ModelError(f"{path}: expected a JSON object")
    if config.get("add_source_eos"):
        raise ModelError(
            f"{path}: add_source_eos is true; a bundle sets it false and records it in {CARD_FILE} "
            "instead (re-create the bundle with `tm-guide model convert`)"
        )
    eos = config.get("eos_token") or DEFAULT_EOS
    if not isinstance(eos, str):
        raise ModelError(f"{path}: eos_token must be a string")
    return eos
