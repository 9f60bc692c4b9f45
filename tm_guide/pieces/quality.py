"""Alignment error rate against hand-made gold links, at the word level.

TM alignments are made between subword pieces; gold links are between words. A word link is
predicted when any piece of the source word is linked to any piece of the target word.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tm_guide.pieces.symmetrize import Link
from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE


@dataclass(frozen=True)
class GoldPair:
    source: list[str]  # words
    target: list[str]
    sure: frozenset[Link]
    possible: frozenset[Link]  # includes the sure links


def read_gold(lines: Iterable[str], name: str = "<gold>") -> list[GoldPair]:
    """Lines of 'source words<TAB>target words<TAB>links' ('i-j' sure, 'i?j' possible);
    lines starting with '#' are comments."""
    pairs = []
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise ValueError(f"{name}:{number}: expected 3 tab-separated fields, got {len(fields)}")
        source, target = fields[0].split(), fields[1].split()
        sure, possible = set(), set()
        for item in fields[2].split():
            sep = "-" if "-" in item else "?"
            s, t = (int(x) for x in item.split(sep))
            if not (0 <= s < len(source) and 0 <= t < len(target)):
                raise ValueError(f"{name}:{number}: link {item} outside the sentence")
            possible.add((s, t))
            if sep == "-":
                sure.add((s, t))
        pairs.append(GoldPair(source, target, frozenset(sure), frozenset(possible)))
    return pairs


def piece_words(pieces: Sequence[str]) -> list[int]:
    """Word index of each SentencePiece piece of a text whose words are separated by spaces."""
    words = []
    index = -1
    for piece in pieces:
        if piece.startswith(SENTENCEPIECE_SPACE) or index < 0:
            index += 1
        words.append(index)
    return words


def project_to_words(
    links: Iterable[Link], source_words: Sequence[int], target_words: Sequence[int]
) -> set[Link]:
    return {(source_words[s], target_words[t]) for s, t in links}


def alignment_error_rate(predicted: Sequence[set[Link]], gold: Sequence[GoldPair]) -> float:
    """Och & Ney (2003): 1 - (|A & S| + |A & P|) / (|A| + |S|), summed over the corpus."""
    hits_sure = hits_possible = size_predicted = size_sure = 0
    for links, pair in zip(predicted, gold, strict=True):
        hits_sure += len(links & pair.sure)
        hits_possible += len(links & pair.possible)
        size_predicted += len(links)
        size_sure += len(pair.sure)
    if size_predicted + size_sure == 0:
        return 0.0
    return 1.0 - (hits_sure + hits_possible) / (size_predicted + size_sure)
