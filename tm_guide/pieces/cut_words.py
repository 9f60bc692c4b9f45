"""Words an output cuts short: the beginning of a memory target's word, written as a word.

The reward of a piece comes at the token that completes it, so a search can prune a word whose
next piece the model finds unlikely before that reward arrives: of "Sicherheit s maß nahme n"
it keeps "Sicherheitsmaß", which no target writes. Each such word gives a completed output to
score, the word written as the target writes it; the search's own objective decides whether
it is served (tm_guide.decoding.guided), so a completion is one the search would have chosen
had it kept the word.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tm_guide.pieces.words import HYPHENS, continues_word, is_mark, word_spans

# the fewest letters of a cut word: a shorter beginning ("▁S") begins too many words to say
# which one was meant
MIN_LETTERS = 4


def cut_completions(
    output: Sequence[str], targets: Iterable[Sequence[str]], limit: int
) -> list[tuple[str, ...]]:
    """Outputs with one word that is a proper beginning of a target word, and is no whole word
    of any target, written whole as that target writes it (its later pieces inserted); then,
    where there are two or more, all of them at once. At most `limit`, in output order."""
    words: set[tuple[str, ...]] = set()
    rests: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    for target in targets:
        target = tuple(target)
        for start, end in word_spans(target):
            word = target[start:end]
            words.add(word)
            for cut in range(1, len(word)):
                if continues_word(word[cut]):
                    rests.setdefault(word[:cut], set()).add(word[cut:])
    edits: list[tuple[int, tuple[str, ...]]] = []
    for start, end in word_spans(output):
        word = tuple(output[start:end])
        if word in words or word not in rests or _letters(word) < MIN_LETTERS:
            continue
        if end < len(output) and output[end] in HYPHENS:
            continue  # the first part of a compound ("Sicherheits- und Datenschutz…")
        edits += [(end, rest) for rest in sorted(rests[word])]
    completed = [_inserted(output, [edit]) for edit in edits]
    if len({at for at, _ in edits}) > 1:
        firsts = list({at: (at, rest) for at, rest in reversed(edits)}.values())
        completed.append(_inserted(output, sorted(firsts)))
    return completed[:limit]


def _inserted(
    output: Sequence[str], edits: Sequence[tuple[int, tuple[str, ...]]]
) -> tuple[str, ...]:
    tokens = list(output)
    for at, rest in sorted(edits, reverse=True):
        tokens[at:at] = rest
    return tuple(tokens)


def _letters(word: Sequence[str]) -> int:
    return sum(sum(c.isalpha() for c in token) for token in word if not is_mark(token))
