"""Plain (unguided) batch translation with a bundle: the baseline guided decoding must beat.

Lines are sorted by length before batching so each batch pads little, then put back in input
order; long inputs are read in windows so memory stays bounded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TypeVar

from tqdm import tqdm

from tm_guide.errors import InvalidInput
from tm_guide.model.bundle import Bundle

T = TypeVar("T")
BATCH_TYPES = ("examples", "tokens")


@dataclass(frozen=True)
class UnguidedOptions:
    """Options of `translate_lines`; device, compute_type, threads apply when loading a bundle."""

    beam_size: int = 5
    batch_size: int = 32  # sentences per batch, or source tokens per batch (batch_type="tokens")
    batch_type: str = "examples"  # "examples" or "tokens"
    max_length: int = 256  # maximum target tokens per sentence
    length_penalty: float = 1.0
    device: str = "cpu"
    compute_type: str = "default"
    threads: int = 0  # CTranslate2 intra-op threads; 0 = its default
    progress: bool = False  # tqdm bar on stderr
    sort_window: int = 4096  # lines read at once and sorted by length into batches
    # a multilingual model's language pair (None: the model card's); a model of one pair ignores it
    languages: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        for name in ("beam_size", "batch_size", "max_length", "sort_window"):
            if getattr(self, name) < 1:
                raise InvalidInput(f"{name} must be at least 1", field=name)
        if self.batch_type not in BATCH_TYPES:
            raise InvalidInput(
                f"batch_type must be one of {', '.join(BATCH_TYPES)}, not {self.batch_type!r}",
                field="batch_type",
            )
        if self.threads < 0:
            raise InvalidInput("threads must be 0 (default) or more", field="threads")


def translate_lines(bundle: Bundle, lines: Sequence[str], options: UnguidedOptions) -> list[str]:
    """Translate each line (one segment per line); a line with no letter or digit (an empty
    one too) comes back as it is."""
    return list(translate_stream(bundle, lines, options, total=len(lines)))


def translate_stream(
    bundle: Bundle, lines: Iterable[str], options: UnguidedOptions, total: int | None = None
) -> Iterator[str]:
    """Yield one translation per input line, in input order, reading `sort_window` lines at a time.

    Memory stays bounded for any input size, and output starts before the input ends.
    """
    with tqdm(total=total, disable=not options.progress, unit="line", desc="translating") as bar:
        for window in _chunks(iter(lines), options.sort_window):
            yield from _translate_window(bundle, window, options)
            bar.update(len(window))


def _translate_window(bundle: Bundle, lines: list[str], options: UnguidedOptions) -> list[str]:
    # the model reads each line without the marks at its edges it cannot read; set_right puts
    # them back (tm_guide.text.edges). A line with no letter or digit ("¶", "✓", a rule) has
    # nothing to translate and comes back as it is, as the server's layout keeps it
    # (tm_guide.text.layout): the demo model made "\ufffd:" of a lone pilcrow.
    wordless = [not any(c.isalnum() for c in line) for line in lines]
    encoded = [
        [] if skip else bundle.encode_source(bundle.edges(line).core)
        for line, skip in zip(lines, wordless, strict=True)
    ]
    results = [line if skip else "" for line, skip in zip(lines, wordless, strict=True)]
    source_lang, target_lang = options.languages or (None, None)
    inputs = [bundle.source_input(pieces, source_lang) if pieces else [] for pieces in encoded]
    todo = sorted((i for i, tokens in enumerate(inputs) if tokens), key=lambda i: len(inputs[i]))
    prefix = bundle.target_prefix(target_lang)
    for batch in _batches(todo, inputs, options):
        outputs = bundle.translator.translate_batch(
            [inputs[i] for i in batch],
            target_prefix=[prefix] * len(batch) if prefix else None,
            beam_size=options.beam_size,
            max_decoding_length=bundle.decoding_length(options.max_length + len(prefix)),
            length_penalty=options.length_penalty,
        )
        for i, output in zip(batch, outputs, strict=True):
            results[i] = bundle.set_right(lines[i], bundle.decode_target(output.hypotheses[0]))[
                -1
            ].text
    return results


def _batches(
    order: list[int], inputs: list[list[str]], options: UnguidedOptions
) -> Iterator[list[int]]:
    """Consecutive runs of the length-sorted indices, each within the batch budget.

    With batch_type="tokens" the budget counts padded source tokens (longest x count), which is
    what the encoder computes; a single overlong sentence still gets a batch of its own.
    """
    if options.batch_type == "examples":
        yield from _chunks(iter(order), options.batch_size)
        return
    batch: list[int] = []
    for i in order:  # ascending length, so inputs[i] is the batch's longest
        if batch and len(inputs[i]) * (len(batch) + 1) > options.batch_size:
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def _chunks(items: Iterator[T], size: int) -> Iterator[list[T]]:
    while chunk := list(islice(items, size)):
        yield chunk
