"""Words an output cuts short: the beginning of a memory target's word, written as a word.

The reward of a piece comes at the token that completes it, so a search can prune a word whose
next piece the model finds unlikely before that reward arrives: of "Sicherheit s maß nahme n"
it keeps "Sicherheitsmaß", which no target writes. Each such word gives a completed output to
score, the word written as the target writes it; the search's own objective decides whether
it is served (tm_guide.decoding.guided), so a completion is one the search would have chosen
had it kept the word.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence

from tm_guide.pieces.words import HYPHENS, continues_word, is_mark, word_spans

# the fewest letters of a cut word: a shorter beginning ("▁S") begins too many words to say
# which one was meant
MIN_LETTERS = 4
# the fewest letters of what a completion adds: a shorter rest is an ending ("en", "s"), which
# agreement chooses, not the pieces
MIN_REST_LETTERS = 3


def cut_completions(
    output: Sequence[str],
    targets: Iterable[Sequence[str]],
    pieces: Container[tuple[str, ...]],
    limit: int,
) -> list[tuple[str, ...]]:
    """Outputs with one word that is a proper beginning of a target word, and is no whole word
    of any target, written whole as that target writes it (its later pieces inserted); then,
    where there are two or more, all of them at once. At most `limit`, in output order.

    Only a word of two or more tokens is cut (one the vocabulary holds whole is a word the
    model knows: "Zeit" is not "Zeitpunkt" cut short), only by a rest of MIN_REST_LETTERS or
    more, and only where `pieces` (the sentence's n-grams) hold the word's last token with the
    rest's first: the pieces spell the whole word, and the search stopped short of their
    reward."""
    cut: dict[tuple[str, ...], list[int]] = {}  # each output word that may be cut: its ends
    for start, end in word_spans(output):
        word = tuple(output[start:end])
        if len(word) < 2 or _letters(word) < MIN_LETTERS:
            continue
        if end < len(output) and output[end] in HYPHENS:
            continue  # the first part of a compound ("Sicherheits- und Datenschutz…")
        cut.setdefault(word, []).append(end)
    if not cut:
        return []
    firsts = {word[0] for word in cut}
    words: set[tuple[str, ...]] = set()  # the target words that begin as a cut one does
    rests: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    for target in targets:
        for start, end in _words_from(target, firsts):
            word = tuple(target[start:end])
            words.add(word)
            for at in range(2, len(word)):
                rest = word[at:]
                if (
                    word[:at] in cut
                    and (word[at - 1], rest[0]) in pieces
                    and _letters(rest) >= MIN_REST_LETTERS
                ):
                    rests.setdefault(word[:at], set()).add(rest)
    edits = sorted(
        (end, rest)
        for word, ends in cut.items()
        if word not in words
        for end in ends
        for rest in rests.get(word, ())
    )
    completed = [_inserted(output, [edit]) for edit in edits]
    if len({at for at, _ in edits}) > 1:
        each = list({at: (at, rest) for at, rest in reversed(edits)}.values())
        completed.append(_inserted(output, sorted(each)))  # each word by its first completion
    return completed[:limit]


def _words_from(tokens: Sequence[str], firsts: Container[str]) -> list[tuple[int, int]]:
    """The [start, end) spans of the words of `tokens` (as words.word_spans finds them, marks
    apart) whose first token is one of `firsts`: a scan of the few, not of every word."""
    spans = []
    for start, token in enumerate(tokens):
        if token not in firsts:
            continue
        if start and continues_word(token) and not is_mark(tokens[start - 1]):
            continue  # inside a word
        end = start + 1
        while end < len(tokens) and continues_word(tokens[end]):
            end += 1
        spans.append((start, end))
    return spans


def _inserted(
    output: Sequence[str], edits: Sequence[tuple[int, tuple[str, ...]]]
) -> tuple[str, ...]:
    tokens = list(output)
    for at, rest in sorted(edits, reverse=True):
        tokens[at:at] = rest
    return tuple(tokens)


def _letters(word: Sequence[str]) -> int:
    return sum(sum(c.isalpha() for c in token) for token in word if not is_mark(token))
