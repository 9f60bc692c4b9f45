"""The engine registry: what each engine runs and how it is made, and which one "auto" runs.

Every engine is an entry of REGISTRY (EngineSpec): its devices, whether it is exact, how its
decoder is made, and how it decodes under a repair template. Nothing else names an engine.

`choose_engine` looks at the model as it is stored (architecture, int8 or float), the device, the
CPU's kernel paths and the installed extras, and picks the first engine of this order that runs
the model exactly in its own precision:

CPU:  1. fused on a vector kernel path (AVX-512 VNNI, AVX2, NEON), int8 models
      2. torch (int8 as CTranslate2 stores it, or float32), when PyTorch is installed
      3. ct2 (CTranslate2 runs each decoder step), any model CTranslate2 runs
CUDA: 1. torch on CUDA  2. ct2

The order is the measured one (bench/decoding_bench.py; docs/benchmarks.md "Decoding engines"):
on the demo bundle, one thread, the fused engine on AVX2 runs 0.67x native CTranslate2 per
sentence, torch-int8 1.16x, ct2 10x, and the fused engine's portable loops 14x, so those loops are
never chosen: they run only when asked for by name. A float model is never given to the fused
engine by "auto", because it computes in int8 and would not be exact.

Everything an engine refuses is part of the choice (`passed_over`), so a model an engine cannot
run is read once, at the first translation, not at every request.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tm_guide.errors import ModelError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineRequest:
    """What an engine is made from: the model bundle, its target vocabulary, the device (cpu or
    cuda), the threads one batch decodes on (0: the engine's default), whether linear layers
    run in int8 (the torch engine on CPU) and what the torch engine computes in (auto: float16
    on CUDA, float32 on the CPU; tm_guide.decoding.torch_engine.COMPUTE_TYPES)."""

    bundle: Any
    vocabulary: Sequence[str]
    device: str
    threads: int
    quantize: bool
    compute_type: str = "auto"
    # the torch engine ranks the search's candidates on its device (None: on a GPU)
    rank_on_device: bool | None = None


@dataclass(frozen=True)
class ModelFacts:
    """What decides whether an engine runs a model here: why the re-implemented engines cannot
    run its architecture (None: they can; tm_guide.decoding.transformer_spec), the precision it
    is stored in, the device, and whether PyTorch is installed."""

    unsupported: str | None
    precision: str
    device: str
    torch_there: bool


@dataclass(frozen=True)
class EngineSpec:
    """One engine of the registry: what it runs and how it is made.

    exact: it reproduces CTranslate2's search rule for rule (rerank is approximate).
    devices: where it runs. make: the step or whole-search decoder for a request (None for an
    engine that has none of its own). template_steps: the engine whose steps decode a sentence
    under a repair template for it (rerank's n-best cannot follow a template). reranks: its
    guided search reranks CTranslate2's own n-best. compiled: the fused C++ kernels run it (its
    kernel path is reported and it computes in int8). refusal: why it cannot run a model here
    (its architectures, the precisions it is exact for, what it needs installed); precision
    and reason: what it computes a model in, and why "auto" takes it (choose_engine asks each
    engine of ORDER in turn)."""

    name: str
    exact: bool
    devices: tuple[str, ...]
    make: Callable[[EngineRequest], Any] | None
    template_steps: str | None = None
    reranks: bool = False
    compiled: bool = False
    # why it cannot run a model here (None: it can): its architectures, precisions and extras
    refusal: Callable[[ModelFacts], str | None] = lambda facts: None
    # what it computes a model in, and why "auto" takes it when it does
    precision: Callable[[ModelFacts], str] = lambda facts: facts.precision
    reason: Callable[[ModelFacts], str] = lambda facts: ""

    @property
    def stepper(self) -> str:
        """The engine whose decoder runs this one's step-by-step searches."""
        return self.template_steps or self.name

    def resolve_device(self, device: str) -> str:
        """`device` with "auto" made concrete: CUDA where the engine runs there and PyTorch sees
        a GPU, else the CPU."""
        if device != AUTO:
            return device
        return _auto_device() if "cuda" in self.devices else "cpu"

    def kernel(self) -> str | None:
        """The kernel path it runs on here: the compiled engine's (None for the others)."""
        if not self.compiled:
            return None
        from tm_guide.decoding import compiled

        return compiled.kernel()


def _make_ct2(request: EngineRequest) -> Any:
    from tm_guide.decoding.ct2_engine import CT2StepDecoder

    return CT2StepDecoder(request.bundle.translator, list(request.vocabulary))


def _make_fused(request: EngineRequest) -> Any:
    from tm_guide.decoding.fused_engine import FusedDecoder

    if request.device != "cpu":
        raise ModelError(f"the fused engine runs on the CPU, not {request.device!r}")
    return FusedDecoder(request.bundle.path, threads=request.threads or 1)


def _make_torch(request: EngineRequest) -> Any:
    from tm_guide.decoding.torch_engine import TorchStepDecoder

    return TorchStepDecoder(
        request.bundle.path,
        device=request.device,
        num_threads=request.threads or None,
        quantize=request.quantize,
        compute_type=request.compute_type,
        rank_on_device=request.rank_on_device,
    )


def _torch_precision(facts: ModelFacts) -> str:
    """The torch engine computes an int8 model in int8 on the CPU, everything else in float32
    there; on CUDA in float16 (its compute type "auto")."""
    return facts.precision if facts.device == "cpu" else "float16"


AUTO = "auto"  # not an engine: the registry's choice for the model and device (choose_engine)
NATIVE = "native"  # what produced an output CTranslate2's own search decoded (no engine)
REGISTRY: dict[str, EngineSpec] = {
    spec.name: spec
    for spec in (
        EngineSpec(
            "fused",
            exact=True,
            devices=("cpu",),
            make=_make_fused,
            compiled=True,
            refusal=lambda facts: _fused_refusal(facts.unsupported, facts.precision),
            precision=lambda facts: "int8",
            reason=lambda facts: "the fastest exact engine here",
        ),
        EngineSpec(
            "torch",
            exact=True,
            devices=("cpu", "cuda"),
            make=_make_torch,
            refusal=lambda facts: _torch_refusal(facts.unsupported, facts.torch_there),
            precision=_torch_precision,
            reason=lambda facts: (
                "the fastest exact engine that runs here"
                + (
                    " (int8 products as CTranslate2 stores them)"
                    if _torch_precision(facts) == "int8"
                    else ""
                )
            ),
        ),
        EngineSpec(
            "ct2",
            exact=True,
            devices=("cpu", "cuda"),
            make=_make_ct2,
            reason=lambda facts: (
                "CTranslate2 computes every step; the faster engines do not run here"
            ),
        ),
        EngineSpec(
            "rerank",
            exact=False,
            devices=("cpu", "cuda"),
            make=None,
            template_steps="ct2",
            reranks=True,
        ),
    )
}
ENGINES = (*REGISTRY, AUTO)
# the order "auto" tries, fastest first (the module's docstring says why; fused on the CPU only)
ORDER = ("fused", "torch", "ct2")


def engine_spec(name: str) -> EngineSpec:
    """The registry's entry for `name` (not "auto", which choose_engine resolves)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ModelError(f"engine {name!r} is not one of {', '.join(REGISTRY)}") from None


def make_decoder(name: str, request: EngineRequest) -> Any:
    """A decoder of engine `name` for `request`."""
    spec = engine_spec(name)
    if spec.make is None:
        raise ModelError(f"engine {name!r} has no step decoder")
    return spec.make(request)


def named_choice(name: str, quantization: str) -> EngineChoice:
    """What an engine named by the operator (not "auto") runs, described as a choice would be."""
    spec = engine_spec(name)
    facts = ModelFacts(None, stored_precision(quantization), "cpu", torch_there=False)
    return EngineChoice(
        name, "cpu", spec.precision(facts), "set by TM_GUIDE_ENGINE", kernel=spec.kernel()
    )


@dataclass(frozen=True)
class EngineChoice:
    """The engine "auto" runs for one model and device, and why."""

    engine: str  # "fused", "torch" or "ct2"
    device: str  # "cpu" or "cuda"
    precision: str  # what the engine computes in: "int8" or "float32"
    reason: str
    kernel: str | None = None  # the fused engine's kernel path
    passed_over: tuple[tuple[str, str], ...] = ()  # (faster engine, why it does not run here)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "device": self.device,
            "precision": self.precision,
            "kernel": self.kernel,
            "reason": self.reason,
            "passed_over": {engine: why for engine, why in self.passed_over},
        }

    def describe(self) -> str:
        """One line for logs and `tm-guide model info`."""
        on = f" on {self.kernel} kernels" if self.kernel else f" on {self.device}"
        return f"{self.engine}{on} ({self.precision}): {self.reason}"


def stored_precision(quantization: str) -> str:
    """ "int8" for CTranslate2's int8 kinds (int8, int8_float32, int8_float16...), else float32,
    in which every engine computes a float model on the CPU (CTranslate2 included)."""
    return "int8" if quantization.startswith("int8") else "float32"


def choose_engine(model_dir: Path | str, quantization: str, device: str = "cpu") -> EngineChoice:
    """The engine that "auto" runs for the model in `model_dir` on `device` ("cpu", "cuda" or
    "auto": CUDA when PyTorch sees a GPU): the first of ORDER that runs on the device and does
    not refuse the model, with why each one before it did."""
    torch_there = _torch_there()
    if device == AUTO:
        device = _auto_device()
    facts = ModelFacts(
        _unsupported(Path(model_dir)), stored_precision(quantization), device, torch_there
    )
    passed: list[tuple[str, str]] = []
    for name in ORDER:
        spec = REGISTRY[name]
        if device not in spec.devices:
            continue
        why = spec.refusal(facts)
        if why is not None:
            passed.append((name, why))
            continue
        return EngineChoice(
            name,
            device,
            spec.precision(facts),
            spec.reason(facts),
            kernel=spec.kernel(),
            passed_over=tuple(passed),
        )
    raise ModelError(f"no engine runs this model on {device!r}: {dict(passed)}")


def _unsupported(model_dir: Path) -> str | None:
    """Why the fused and torch engines cannot run this model (they implement the same
    TransformerSpec features), or None."""
    from tm_guide.decoding.model_file import read_model_file
    from tm_guide.decoding.transformer_spec import check_supported

    try:
        check_supported(read_model_file(model_dir))
    except ModelError as exc:
        return str(exc)
    return None


def _fused_refusal(unsupported: str | None, precision: str) -> str | None:
    from tm_guide.decoding import compiled

    if not compiled.available():
        return "not built (no C++ compiler at install time)"
    if unsupported is not None:
        return unsupported
    if precision != "int8":
        return f"computes in int8; the model is stored as {precision}, so it would not be exact"
    if compiled.kernel() == "portable":
        return "this CPU has none of its vector kernel paths (AVX-512 VNNI, AVX2, NEON)"
    return None


def _torch_refusal(unsupported: str | None, torch_there: bool) -> str | None:
    if not torch_there:
        return "PyTorch is not installed (the [torch] extra)"
    return unsupported


def _torch_there() -> bool:
    return importlib.util.find_spec("torch") is not None


def _auto_device() -> str:
    """What the device "auto" is here: CUDA when PyTorch is installed and sees a GPU, else the
    CPU."""
    return "cuda" if _torch_there() and _cuda_available() else "cpu"


def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())
