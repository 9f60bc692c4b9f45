"""Reading a test or dev set (TSV: source, reference) and the seeded sample `--limit` asks for."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from tm_guide.errors import InvalidInput


@dataclass(frozen=True)
class TestSet:
    """Parallel sentences to translate and score, with their line numbers in their file."""

    name: str
    sources: list[str]
    references: list[str]
    lines: list[int]

    def __len__(self) -> int:
        return len(self.sources)

    def sample(self, limit: int | None, seed: int) -> TestSet:
        """A seeded random subset of `limit` sentences in file order (all if limit is None)."""
        if limit is None or limit >= len(self):
            return self
        if limit <= 0:
            raise InvalidInput(f"limit must be positive, not {limit}", field="limit")
        chosen = sorted(random.Random(seed).sample(range(len(self)), limit))
        return TestSet(
            name=self.name,
            sources=[self.sources[i] for i in chosen],
            references=[self.references[i] for i in chosen],
            lines=[self.lines[i] for i in chosen],
        )


def read_tsv(path: Path, name: str | None = None) -> TestSet:
    """Read `source<TAB>reference` lines; extra columns are ignored, blank lines skipped.

    A line without a tab or with an empty side is an error naming the file and line, since a
    silently dropped sentence would change every score.
    """
    sources: list[str] = []
    references: list[str] = []
    lines: list[int] = []
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read test set: {exc.strerror}", field="path") from exc
    with handle:
        try:
            for number, raw in enumerate(handle, start=1):
                line = raw.rstrip("\n").rstrip("\r")
                if not line.strip():
                    continue
                fields = line.split("\t")
                if len(fields) < 2:
                    raise InvalidInput(
                        f"{path}:{number}: expected source<TAB>reference, found no tab"
                    )
                source, reference = fields[0].strip(), fields[1].strip()
                if not source or not reference:
                    side = "source" if not source else "reference"
                    raise InvalidInput(f"{path}:{number}: empty {side}")
                sources.append(source)
                references.append(reference)
                lines.append(number)
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})"
            ) from exc
    if not sources:
        raise InvalidInput(f"{path}: no sentences")
    return TestSet(name=name or path.stem, sources=sources, references=references, lines=lines)
