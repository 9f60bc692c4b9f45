"""Turn a trained checkpoint (transformers Marian/OPUS-MT, OpenNMT-py, fairseq) into a bundle.

CTranslate2 does the weight conversion; this module adds what CTranslate2 leaves out: the
SentencePiece models, the model card with checksums, and one rule for the source end-of-sentence
token (always appended by the caller, per the card) so every bundle is used the same way.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import ctranslate2

from tm_guide.errors import InvalidInput, ModelError
from tm_guide.model.bundle import check_pieces_in_vocabulary, load_spm, read_vocabularies
from tm_guide.model.card import (
    SOURCE_SPM,
    TARGET_SPM,
    ModelCard,
    checksum_files,
    is_language_tag,
    verify_files,
)
from tm_guide.model.choices import QUANTIZATIONS
from tm_guide.model.language_tokens import find_language_tokens

# Architectures whose original tokenizer appends </s> to the source although CTranslate2's
# transformers converter records add_source_eos=false (the tokenizer is expected to do it).
_SOURCE_EOS_ARCHITECTURES = ("MarianMTModel",)


@dataclass(frozen=True)
class ConvertOptions:
    """What `tm-guide model convert` needs; paths are checked before any work starts."""

    source_format: str  # "transformers", "opennmt-py" or "fairseq"
    checkpoint: Path  # transformers directory, or a .pt file
    output_dir: Path
    source_lang: str
    target_lang: str
    quantization: str = "int8"
    source_spm: Path | None = None
    target_spm: Path | None = None
    name: str = ""  # default: the output directory's name
    fairseq_data_dir: Path | None = None  # fairseq: directory of dict.<lang>.txt
    training_data: str = ""
    force: bool = False  # replace an existing output directory
    # OpenNMT-py/fairseq .pt files pickle their options: loading them can run code, so only for
    # checkpoints from a trusted source.
    trust_checkpoint: bool = False


class CheckpointSource(ABC):
    """One checkpoint format: its CTranslate2 converter and where its SentencePiece models are."""

    format_name: ClassVar[str]
    source_eos: ClassVar[bool] = False  # True when the model was trained with </s> after the source

    def __init__(self, options: ConvertOptions) -> None:
        self.options = options

    @abstractmethod
    def build_converter(self) -> ctranslate2.converters.Converter:
        """The CTranslate2 converter for this checkpoint."""

    def find_spm_models(self) -> tuple[Path, Path]:
        """(source, target) SentencePiece models: the ones given in the options by default."""
        source, target = self.options.source_spm, self.options.target_spm
        if source is None and target is None:
            raise InvalidInput(
                f"{self.options.checkpoint}: a {self.format_name} checkpoint does not carry its "
                "SentencePiece models; pass --source-spm (and --target-spm if it differs)",
                field="source_spm",
            )
        source = source or target
        target = target or source
        assert source is not None and target is not None
        return source, target

    def architecture(self) -> str:
        return self.format_name


# the joint SentencePiece model's name in M2M100/NLLB/mBART/BART checkpoints (Marian has two)
SHARED_SPM_NAME = "sentencepiece.bpe.model"


class TransformersSource(CheckpointSource):
    """A transformers directory (Marian/OPUS-MT, M2M100/NLLB, mBART, BART): SentencePiece models
    sit next to the weights."""

    format_name = "transformers"
    source_eos = True

    def build_converter(self) -> ctranslate2.converters.Converter:
        return _TransformersConverter(str(self.options.checkpoint))

    def find_spm_models(self) -> tuple[Path, Path]:
        if self.options.source_spm or self.options.target_spm:
            return super().find_spm_models()
        source = self.options.checkpoint / "source.spm"
        target = self.options.checkpoint / "target.spm"
        shared = self.options.checkpoint / SHARED_SPM_NAME  # M2M100, NLLB, mBART, BART
        if not source.is_file() and not target.is_file() and shared.is_file():
            return shared, shared
        for path in (source, target):
            if not path.is_file():
                raise InvalidInput(
                    f"{path}: missing; pass --source-spm/--target-spm for a checkpoint that keeps "
                    "its SentencePiece models elsewhere",
                    field="source_spm",
                )
        return source, target

    def architecture(self) -> str:
        config_path = self.options.checkpoint / "config.json"
        try:
            config = json.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelError(f"{config_path}: unreadable transformers config ({exc})") from exc
        architectures = config.get("architectures") or [config.get("model_type", "transformers")]
        return str(architectures[0])


class _TransformersConverter(ctranslate2.converters.TransformersConverter):  # type: ignore[misc]
    """CTranslate2's converter, given the language tokens of an M2M100 tokenizer.

    CTranslate2 appends them from `special_tokens_map["additional_special_tokens"]`, which
    transformers 5 no longer fills (it keeps them in `lang_token_to_id`): the vocabulary came out
    without them and one size short per language."""

    def load_tokenizer(self, tokenizer_class: Any, model_name_or_path: str, **kwargs: Any) -> Any:
        tokenizer = super().load_tokenizer(tokenizer_class, model_name_or_path, **kwargs)
        by_id = getattr(tokenizer, "lang_token_to_id", None)
        listed = tokenizer.special_tokens_map.get("additional_special_tokens") or []
        if not by_id or listed:
            return tokenizer
        return _WithLanguageTokens(tokenizer, sorted(by_id, key=by_id.__getitem__))


class _WithLanguageTokens:
    """A tokenizer whose special_tokens_map lists its language tokens; the rest is the
    tokenizer's own."""

    def __init__(self, tokenizer: Any, language_tokens: list[str]) -> None:
        self._tokenizer = tokenizer
        self.special_tokens_map = {
            **tokenizer.special_tokens_map,
            "additional_special_tokens": language_tokens,
        }

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tokenizer, name)


class OpenNMTPySource(CheckpointSource):
    format_name = "opennmt-py"

    def build_converter(self) -> ctranslate2.converters.Converter:
        return ctranslate2.converters.OpenNMTPyConverter(
            str(self.options.checkpoint), unsafe_deserialization=self.options.trust_checkpoint
        )


class FairseqSource(CheckpointSource):
    """A fairseq .pt; fairseq appends </s> to every source sentence."""

    format_name = "fairseq"
    source_eos = True

    def build_converter(self) -> ctranslate2.converters.Converter:
        data_dir = self.options.fairseq_data_dir or self.options.checkpoint.parent
        return ctranslate2.converters.FairseqConverter(
            str(self.options.checkpoint),
            str(data_dir),
            source_lang=self.options.source_lang,
            target_lang=self.options.target_lang,
            unsafe_deserialization=self.options.trust_checkpoint,
        )

    def find_spm_models(self) -> tuple[Path, Path]:
        if self.options.source_spm or self.options.target_spm:
            return super().find_spm_models()
        joint = self.options.checkpoint.parent / "sentencepiece.bpe.model"
        if joint.is_file():
            return joint, joint
        return super().find_spm_models()


SOURCES: dict[str, type[CheckpointSource]] = {
    cls.format_name: cls for cls in (TransformersSource, OpenNMTPySource, FairseqSource)
}


def convert_checkpoint(options: ConvertOptions) -> Path:
    """Convert a checkpoint into a complete, verified bundle at options.output_dir.

    The bundle is built in a temporary directory beside the output and moved into place at the end,
    so a failed conversion never leaves a half-written bundle behind.
    """
    _check_options(options)
    source = SOURCES[options.source_format](options)
    spm_source, spm_target = source.find_spm_models()
    for path in (spm_source, spm_target):
        if not path.is_file():
            raise InvalidInput(f"{path}: SentencePiece model not found", field="source_spm")
    output_dir = options.output_dir
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{output_dir.name}.", dir=output_dir.parent) as tmp:
        ct2_dir = Path(tmp) / "bundle"
        try:
            source.build_converter().convert(
                str(ct2_dir), quantization=options.quantization, force=True
            )
        except Exception as exc:  # converters raise anything from pickle to KeyError
            hint = ""
            if type(exc).__name__ == "UnpicklingError" and not options.trust_checkpoint:
                hint = "; if the checkpoint comes from a trusted source, pass --trust-checkpoint"
            elif isinstance(exc, ImportError) and exc.name:
                hint = (
                    f"; converting {options.source_format} checkpoints needs {exc.name} installed"
                )
            raise ModelError(
                f"{options.checkpoint}: CTranslate2 could not convert this {options.source_format} "
                f"checkpoint ({type(exc).__name__}: {_first_line(exc)}){hint}"
            ) from exc
        card_fields = {
            "name": options.name or output_dir.name,
            "source_lang": options.source_lang,
            "target_lang": options.target_lang,
            "architecture": source.architecture(),
            "quantization": options.quantization,
            "add_source_eos": source.source_eos,
            "training_data": options.training_data,
        }
        write_bundle(ct2_dir, spm_source, spm_target, card_fields)
        if output_dir.exists():
            shutil.rmtree(output_dir)
        ct2_dir.rename(output_dir)
    return output_dir


def write_bundle(
    ct2_dir: Path, spm_source: Path, spm_target: Path, card_fields: Mapping[str, Any]
) -> Path:
    """Make a CTranslate2 model directory a bundle, in place, and return its path.

    Copies the SentencePiece models to source.spm/target.spm, moves the source-EOS rule from
    config.json into the card, and writes model_card.json with the sha256 of every file.
    card_fields holds the card's descriptive fields: name, source_lang, target_lang, and optionally
    architecture, quantization, training_data, metrics {bleu, chrf, test_set}, add_source_eos
    (default: true for MarianMTModel, else what config.json says) and any extra JSON fields.
    Raises ModelError when the SentencePiece models do not match the vocabularies.
    """
    ct2_dir = Path(ct2_dir)
    config_path = ct2_dir / "config.json"
    if not config_path.is_file() or not (ct2_dir / "model.bin").is_file():
        raise ModelError(f"{ct2_dir}: not a CTranslate2 model directory (config.json, model.bin)")
    for src, name in ((Path(spm_source), SOURCE_SPM), (Path(spm_target), TARGET_SPM)):
        if not src.is_file():
            raise ModelError(f"{src}: SentencePiece model not found")
        if src.resolve() != (ct2_dir / name).resolve():
            shutil.copyfile(src, ct2_dir / name)

    config = json.loads(config_path.read_text(encoding="utf-8"))
    config_eos = bool(config.get("add_source_eos", False))
    fields = dict(card_fields)
    if "add_source_eos" not in fields:
        fields["add_source_eos"] = config_eos or (
            fields.get("architecture") in _SOURCE_EOS_ARCHITECTURES
        )
    if config_eos:
        config["add_source_eos"] = False
        config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")

    vocabularies = read_vocabularies(ct2_dir)
    if "language_tokens" not in fields:
        fields["language_tokens"] = find_language_tokens(
            str(fields.get("architecture", "")), vocabularies.target
        )
    check_pieces_in_vocabulary(
        load_spm(ct2_dir / SOURCE_SPM), vocabularies.source, SOURCE_SPM, vocabularies.source_file
    )
    check_pieces_in_vocabulary(
        load_spm(ct2_dir / TARGET_SPM), vocabularies.target, TARGET_SPM, vocabularies.target_file
    )

    fields["vocabulary"] = {
        "shared": vocabularies.source_file == vocabularies.target_file,
        "source_tokens": len(vocabularies.source),
        "target_tokens": len(vocabularies.target),
        "spm_shared": (ct2_dir / SOURCE_SPM).read_bytes() == (ct2_dir / TARGET_SPM).read_bytes(),
        **dict(fields.get("vocabulary") or {}),
    }
    fields["ctranslate2_version"] = ctranslate2.__version__
    fields["files"] = checksum_files(ct2_dir)
    card = ModelCard.from_dict(fields, where="card fields")
    card.write(ct2_dir)
    verify_files(ct2_dir, card)
    return ct2_dir


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


def _check_options(options: ConvertOptions) -> None:
    if options.source_format not in SOURCES:
        raise InvalidInput(
            f"unknown checkpoint format {options.source_format!r} (one of {', '.join(SOURCES)})",
            field="source_format",
        )
    if options.quantization not in QUANTIZATIONS:
        raise InvalidInput(
            f"unknown quantization {options.quantization!r} (one of {', '.join(QUANTIZATIONS)})",
            field="quantization",
        )
    if not options.checkpoint.exists():
        raise InvalidInput(f"{options.checkpoint}: checkpoint not found", field="checkpoint")
    for name in ("source_lang", "target_lang"):
        if not is_language_tag(getattr(options, name)):
            raise InvalidInput(
                f"{name} {getattr(options, name)!r} is not a language tag like en or de-CH",
                field=name,
            )
    if options.output_dir.exists() and not options.force:
        raise InvalidInput(
            f"{options.output_dir}: already exists (use --force to replace it)", field="output_dir"
        )
