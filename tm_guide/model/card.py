"""The model card (model_card.json): what a bundle is, what it was trained on, its checksums."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from tm_guide.errors import ModelError

CARD_FILE = "model_card.json"
_HASH_CHUNK = 1 << 20
# A BCP-47-like language tag: en, de-CH, pt_BR, zh-Hant-TW.
_LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$")


SOURCE_SPM = "source.spm"
TARGET_SPM = "target.spm"
REQUIRED_FILES = ("model.bin", "config.json", SOURCE_SPM, TARGET_SPM)
# optional: word-alignment priors from the training data (tm_guide.model.priors)
ALIGNMENT_PRIORS = "alignment_priors.txt"


@dataclass(frozen=True)
class Metrics:
    """Scores of the unguided model on a held-out test set (None when not measured)."""

    bleu: float | None = None
    chrf: float | None = None
    test_set: str = ""


@dataclass(frozen=True)
class ModelCard:
    """Everything a user needs to know about a bundle before trusting its output.

    add_source_eos: True when the caller must append `</s>` to the source pieces before handing
    them to CTranslate2 (Marian/fairseq models were trained with it; CTranslate2 itself adds
    nothing because every bundle's config.json says add_source_eos=false).
    `Bundle.source_input` applies it.
    """

    name: str
    source_lang: str
    target_lang: str
    architecture: str = ""
    quantization: str = ""
    add_source_eos: bool = False
    ctranslate2_version: str = ""
    training_data: Any = ""
    vocabulary: dict[str, Any] = field(default_factory=dict)  # sizes, shared or not
    metrics: Metrics = field(default_factory=Metrics)
    # lambda (eq. 10) tuned for this model on a dev set with `tm-guide eval`: the server's
    # default for guided decoding with it (None: not tuned)
    guided_lambda: float | None = None
    # whether that lambda was tuned with eq. 10's reward of every occurrence of a piece (True) or
    # with pieces of 2+ tokens rewarded once per hypothesis (False); None: eq. 10
    guided_reward_repeats: bool | None = None
    # with repeats off: whether each piece was limited to its count in the TM target
    # (PieceOptions.clipped) when lambda was tuned; None: not (pieces of 2+ tokens once)
    guided_clipped: bool | None = None
    # how pieces were weighed by their match's similarity (a PieceWeighting spec such as
    # "power:2"); None: eq. 8's similarity itself
    guided_weighting: str | None = None
    # from which similarity the best match's target is repaired instead (a RepairOptions spec
    # such as "0.7:1:1"); None: never
    guided_repair: str | None = None
    # how a close match's candidates are chosen from (a ChoiceOptions spec such as
    # "0.5:1:0.5:0.2"); None: never, the search's output is served
    guided_choice: str | None = None
    # a multilingual model's language tokens, token -> language tag (tm_guide.model
    # .language_tokens); {}: a model of one pair, whose inputs and outputs carry none
    language_tokens: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, where: str = CARD_FILE) -> ModelCard:
        """Build a card from parsed JSON; a missing or mistyped field is named in the error."""
        if not isinstance(data, dict):
            raise ModelError(f"{where}: expected a JSON object, got {type(data).__name__}")
        for name in ("name", "source_lang", "target_lang"):
            value = data.get(name)
            if not isinstance(value, str) or not value.strip():
                raise ModelError(f"{where}: field {name!r} is missing or not a non-empty string")
        for name in ("source_lang", "target_lang"):
            if not is_language_tag(data[name]):
                raise ModelError(
                    f"{where}: field {name!r} is {data[name]!r}, "
                    "not a language tag like en or de-CH"
                )
        if not isinstance(data.get("add_source_eos", False), bool):
            raise ModelError(f"{where}: field 'add_source_eos' must be true or false")
        files = data.get("files", {})
        if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in files.items()
        ):
            raise ModelError(f"{where}: field 'files' must map file names to sha256 strings")
        vocabulary = data.get("vocabulary") or {}
        if not isinstance(vocabulary, dict):
            raise ModelError(f"{where}: field 'vocabulary' must be an object")
        metrics = data.get("metrics") or {}
        if not isinstance(metrics, dict):
            raise ModelError(f"{where}: field 'metrics' must be an object")
        guided_lambda = _optional_float(data.get("guided_lambda"), f"{where}: guided_lambda")
        if guided_lambda is not None and guided_lambda < 0:
            raise ModelError(f"{where}: guided_lambda must be >= 0, not {guided_lambda}")
        reward_repeats = data.get("guided_reward_repeats")
        if reward_repeats is not None and not isinstance(reward_repeats, bool):
            raise ModelError(f"{where}: field 'guided_reward_repeats' must be true, false or null")
        clipped = data.get("guided_clipped")
        if clipped is not None and not isinstance(clipped, bool):
            raise ModelError(f"{where}: field 'guided_clipped' must be true, false or null")
        weighting = data.get("guided_weighting")
        if weighting is not None:
            _check_weighting(weighting, where)
        repair = data.get("guided_repair")
        if repair is not None:
            _check_repair(repair, where)
        choice = data.get("guided_choice")
        if choice is not None:
            _check_choice(choice, where)
        language_tokens = data.get("language_tokens") or {}
        if not isinstance(language_tokens, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in language_tokens.items()
        ):
            raise ModelError(f"{where}: field 'language_tokens' must map tokens to language tags")
        known = {f.name for f in fields(cls)} - {"extra"}
        return cls(
            name=data["name"],
            source_lang=data["source_lang"],
            target_lang=data["target_lang"],
            architecture=str(data.get("architecture", "")),
            quantization=str(data.get("quantization", "")),
            add_source_eos=bool(data.get("add_source_eos", False)),
            ctranslate2_version=str(data.get("ctranslate2_version", "")),
            training_data=data.get("training_data", ""),
            vocabulary=dict(vocabulary),
            metrics=Metrics(
                bleu=_optional_float(metrics.get("bleu"), f"{where}: metrics.bleu"),
                chrf=_optional_float(metrics.get("chrf"), f"{where}: metrics.chrf"),
                test_set=str(metrics.get("test_set", "") or ""),
            ),
            guided_lambda=guided_lambda,
            guided_reward_repeats=reward_repeats,
            guided_clipped=clipped,
            guided_weighting=weighting,
            guided_repair=repair,
            guided_choice=choice,
            language_tokens=dict(language_tokens),
            files=dict(files),
            extra={k: v for k, v in data.items() if k not in known},
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        extra = data.pop("extra")
        data.update(extra)
        return data

    @classmethod
    def read(cls, bundle_dir: Path) -> ModelCard:
        path = bundle_dir / CARD_FILE
        if not path.is_file():
            raise ModelError(f"{path}: missing; a model bundle needs a {CARD_FILE}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise ModelError(f"{path}: not UTF-8 text ({exc})") from exc
        except json.JSONDecodeError as exc:
            raise ModelError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from exc
        return cls.from_dict(data, where=str(path))

    def write(self, bundle_dir: Path) -> Path:
        path = bundle_dir / CARD_FILE
        path.write_text(
            json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        return path


def is_language_tag(value: str) -> bool:
    return bool(_LANGUAGE_TAG.match(value))


def _optional_float(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelError(f"{where}: expected a number, got {value!r}")
    return float(value)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in chunks so large model.bin files need little memory."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def checksum_files(bundle_dir: Path) -> dict[str, str]:
    """sha256 of every file of a bundle except the card itself (which holds the result)."""
    return {
        path.relative_to(bundle_dir).as_posix(): sha256_file(path)
        for path in sorted(bundle_dir.rglob("*"))
        if path.is_file() and path.name != CARD_FILE
    }


def verify_files(bundle_dir: Path, card: ModelCard) -> None:
    """Every required file exists and every file listed in the card has its recorded sha256."""
    for name in REQUIRED_FILES:
        if not (bundle_dir / name).is_file():
            raise ModelError(f"{bundle_dir / name}: missing from the model bundle")
    for name in REQUIRED_FILES:
        if name not in card.files:
            raise ModelError(f"{bundle_dir / CARD_FILE}: no checksum recorded for {name}")
    for name, expected in sorted(card.files.items()):
        file_path = bundle_dir / name
        if not file_path.is_file():
            raise ModelError(f"{file_path}: missing from the model bundle (listed in {CARD_FILE})")
        actual = sha256_file(file_path)
        if actual != expected.lower():
            raise ModelError(
                f"{file_path}: checksum mismatch (sha256 {actual}, {CARD_FILE} says {expected}); "
                "the file is corrupted or was replaced"
            )


def _check_repair(spec: Any, where: str) -> None:
    from tm_guide.errors import InvalidInput
    from tm_guide.pieces.repair import RepairOptions

    try:
        RepairOptions.parse(spec if isinstance(spec, str) else "")
    except InvalidInput as exc:
        raise ModelError(f"{where}: field 'guided_repair': {exc.message}") from None


def _check_choice(spec: Any, where: str) -> None:
    from tm_guide.errors import InvalidInput
    from tm_guide.pieces.choice import ChoiceOptions

    try:
        ChoiceOptions.parse(spec if isinstance(spec, str) else "")
    except InvalidInput as exc:
        raise ModelError(f"{where}: field 'guided_choice': {exc.message}") from None


def _check_weighting(spec: Any, where: str) -> None:
    from tm_guide.errors import InvalidInput
    from tm_guide.pieces.weighting import PieceWeighting

    try:
        PieceWeighting.parse(spec if isinstance(spec, str) else "")
    except InvalidInput as exc:
        raise ModelError(f"{where}: field 'guided_weighting': {exc.message}") from None
