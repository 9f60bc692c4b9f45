"""Code words a close match takes over before it is compared: function names, constants, cell
references and other words in capitals, snake_case identifiers, names written with a capital
inside (OpenPGP, LibreOffice), absolute file paths, and numbers.

A model writes such words badly: asked to fill the gap where "=MITTELWERTWENNS(" stood, for an
input with AVERAGEIF instead of AVERAGEIFS, the demo model wrote "=AWERTIF(". A translator does
not decode them; they copy them or edit them as the source was edited (asked for
"/etc/dhcp/dhcpd.conf" where the match had "/etc/bind/named.conf.local", the model wrote
"/etc/dhcp.conf", and "Wikipedien" for OpenPGP where the match had OpenType). So, before a match is
compared with the input, each code word of its source that the input changes is changed in the
match as well, on both sides, and then counts as unedited: the repair keeps it and Algorithm 1
takes its pieces.
- An identifier, name, path or number the target holds as it is (COPY, B2, dh_installdocs,
  OpenType, /etc/hosts, 4.10) becomes the input's.
- A number the target writes with other separators takes them too: 51,000 -> 57,700 makes
  "51000" "57700", and 4.5 -> 4.7 makes "4,5" "4,7".
- A translated one loses what the source lost, when the target holds the same affix:
  AVERAGEIFS -> AVERAGEIF makes MITTELWERTWENNS MITTELWERTWENN, WEEKNUM_OOO -> WEEKNUM makes
  KALENDERWOCHE_OOO KALENDERWOCHE.
- An identifier or a name replaced by another that a retrieved pair's source holds takes what
  that pair's target writes at its place, where every such pair writes the same: asked for
  `=ARABIC("MMII")` with a match on `=VALUE("1234")`, the demo model kept "ARABIC"; the help's
  pair on ARABIC says "ARABISCH". Where such pairs disagree, or none says, the change is left
  to the repair and the model, which the pieces of a pair holding the new word guide
  ("ISOWEEKNUM" -> "ISOKALENDERWOCHE"). Where no retrieved source holds it, the input's word
  is copied whole.

The pair's tokens are encoded again from the edited text, and each new token takes the word
alignment of the old tokens it covers, so the rest of the match is aligned as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from tm_guide.pieces.collect import AlignedPair
from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE

# an absolute path ("/" or "~/", then parts of letters, digits, "_", "+", "-" and inner dots,
# not a sentence's final one, each maybe a dotfile); a word in capitals (digits and underscores
# inside); a snake_case identifier (not in a path or a file name); a name with a capital after
# a small letter (OpenPGP, LibreOffice, ScriptForge); or a number (digits, maybe grouped or with
# decimals by "." or ","): not part of a longer word
_PATH = r"(?<![\w/.~-])~?(?:/\.?[\w+-]+(?:\.[\w+-]+)*)+/?(?![\w/])"
CODE_WORD = re.compile(
    rf"(?P<path>{_PATH})"
    r"|(?<![^\W_])[A-Z][A-Z0-9_]*[A-Z0-9](?![^\W_])"
    r"|(?<![\w/.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/-]|\.\w)"
    r"|(?P<name>(?<![^\W_])(?=[A-Za-z])[A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*)(?![^\W_])"
    r"|(?P<number>(?<![\w.,])\d+(?:[.,]\d+)*)(?![^\W_])"
)
_SEPARATORS = ".,"
# the kinds of code word copied whole where no rule derives the new one (a path or a name the
# target writes otherwise is the translator's own)
_COPIED = ("identifier", "number")
# the kinds of code word that another retrieved pair may say the translation of: identifiers
# (a function name in capitals, a snake_case name) and names; a number or a path is the source's
_TRANSLATED = ("identifier", "name")
# the kinds whose words are counted together to find a word's translation by its place
_PLACES = {"path": "path", "name": "name", "identifier": "code", "number": "code"}
# a piece that stands for something other than its characters: a byte, </s>, a language token
_CONTROL = re.compile(r"<[^<>]+>")
# a shared core shorter than this (or than half the longer word) pairs no two words by content
MIN_CORE = 3


@dataclass(frozen=True)
class Word:
    """A word of a pair's joined tokens: where it starts and ends, and its kind."""

    start: int
    end: int
    text: str
    kind: str  # "path", "name", "number" or "identifier": only words of one kind pair up


def missing_code_words(query: Sequence[str], pairs: Sequence[AlignedPair]) -> list[str]:
    """The identifiers and names of `query` (tokens) that no source of `pairs` holds, in
    order, each once: the words whose translation a memory may hold in pairs that were not
    retrieved for the sentence as a whole (absorb_code_words' `look_up`)."""
    held = frozenset(w.text for pair in pairs for w in _code_words("".join(pair.source)))
    return _missing(_code_words("".join(query)), held)


def _missing(query_words: list[Word], held: frozenset[str]) -> list[str]:
    missing: list[str] = []
    for word in query_words:
        if word.kind in _TRANSLATED and word.text not in held and word.text not in missing:
            missing.append(word.text)
    return missing


def absorb_code_words(
    query: Sequence[str],
    pairs: Sequence[AlignedPair],
    encode_source: Callable[[str], list[str]],
    encode_target: Callable[[str], list[str]],
    look_up: Callable[[list[str]], Sequence[AlignedPair]] | None = None,
) -> list[AlignedPair]:
    """Each retrieved pair with the code words of its source that `query` (tokens) changes
    changed on both sides; a pair itself where there are none, or where its edited text does not
    encode back to the same characters.

    A new word that no rule derives is copied whole into a target only where none of the
    retrieved sources holds it: nothing retrieved says what the target language calls it, and a
    copied word reads better than a made-up one ("AVERA(" for AVERAGEA). `look_up`: given the
    query's identifiers and names that no retrieved source holds (missing_code_words), more
    pairs of the memory, which only say what their targets call their code words."""
    query_words = _code_words("".join(query))
    if not query_words or not pairs:
        return list(pairs)
    source_words = [_code_words("".join(pair.source)) for pair in pairs]
    held = frozenset(w.text for words in source_words for w in words)
    references: Sequence[AlignedPair] = ()
    if look_up is not None and (missing := _missing(query_words, held)):
        references = look_up(missing)
    known = _translations(
        [*pairs, *references],
        source_words + [_code_words("".join(pair.source)) for pair in references],
    )
    return [
        _absorbed(query_words, pair, words, held, known, encode_source, encode_target)
        for pair, words in zip(pairs, source_words, strict=True)
    ]


def _translations(
    pairs: Sequence[AlignedPair], source_words: list[list[Word]]
) -> dict[str, str | None]:
    """Each code word of the retrieved sources, with what their targets write for it at its
    place (_target_of): the one translation where every pair that says gives the same, None
    where they differ or none says ("FLOOR" -> "UNTERGRENZE" from the help's page on FLOOR,
    for a match on CEILING)."""
    found: dict[str, set[str]] = {}
    for pair, words in zip(pairs, source_words, strict=True):
        target_words = _code_words("".join(pair.target)) if words else []
        for k, word in enumerate(words):
            said = found.setdefault(word.text, set())
            if word.kind in _TRANSLATED:
                translation = _target_of(k, words, target_words)
                if translation is not None and translation.kind in _TRANSLATED:
                    said.add(translation.text)
    return {word: next(iter(said)) if len(said) == 1 else None for word, said in found.items()}


def _absorbed(
    query_words: list[Word],
    pair: AlignedPair,
    source_words: list[Word],
    held: frozenset[str],
    known: dict[str, str | None],
    encode_source: Callable[[str], list[str]],
    encode_target: Callable[[str], list[str]],
) -> AlignedPair:
    """One pair of absorb_code_words, its source's code words and the query's found."""
    if not source_words:
        return pair
    if not any(SENTENCEPIECE_SPACE in token for token in pair.source):
        return pair  # whole-word tokens: the joined text has no word boundaries to go by
    if any(_CONTROL.fullmatch(token) for token in (*pair.source, *pair.target)):
        return pair  # a byte piece (<0xC2>) is no text to edit and encode again
    target_words = _code_words("".join(pair.target))
    source_edits: list[tuple[Word, str]] = []
    target_edits: list[tuple[Word, str]] = []
    for k, new in _changed(source_words, query_words):
        old = source_words[k]
        translation = _target_of(k, source_words, target_words)
        if translation is None:
            continue
        changed = transferred(old.text, new, translation.text)
        if changed is None and old.kind in _TRANSLATED and translation.kind in _TRANSLATED:
            changed = known.get(new)  # as another retrieved pair translates it
        if changed is None and new not in held and old.kind in _COPIED:
            changed = new
        if changed is None:
            continue
        source_edits.append((old, new))
        target_edits.append((translation, changed))
    if not source_edits:
        return pair
    return rebuilt(pair, source_edits, target_edits, encode_source, encode_target)


def rebuilt(
    pair: AlignedPair,
    source_edits: list[tuple[Word, str]],
    target_edits: list[tuple[Word, str]],
    encode_source: Callable[[str], list[str]],
    encode_target: Callable[[str], list[str]],
) -> AlignedPair:
    """`pair` with the words of `source_edits` and `target_edits` (each a word of its joined
    tokens and what it becomes) replaced, its tokens encoded again and each new token aligned as
    the old tokens it covers were; `pair` itself where an edited text does not encode back to
    the same characters."""
    source = _encoded(pair.source, source_edits, encode_source)
    target = _encoded(pair.target, target_edits, encode_target)
    if source is None or target is None:
        return pair
    (source_tokens, source_map), (target_tokens, target_map) = source, target
    # the new source positions of each old one, then each new target token's links: those of
    # the old tokens it covers, moved to the new source positions
    moved: dict[int, int] = {}
    for j, olds in enumerate(source_map):
        for s in olds:
            moved[s] = moved.get(s, 0) | 1 << j
    links = []
    for olds in target_map:
        mask = 0
        for t in olds:
            bits = pair.target_links[t]
            s = 0
            while bits:
                if bits & 1:
                    mask |= moved.get(s, 0)
                bits >>= 1
                s += 1
        links.append(mask)
    return AlignedPair(pair.segment_id, tuple(source_tokens), tuple(target_tokens), tuple(links))


def transferred(old: str, new: str, target: str) -> str | None:
    """What `target` (the translation of the code word `old`) becomes when `old` becomes
    `new`; None where the match cannot say (see the module's docstring)."""
    if _is_number(old) != _is_number(new):
        return None
    if target == old:
        return new
    if _is_path(old):
        return None  # a path the target writes otherwise is not one the match can change
    if _is_number(old):
        return _separated_as(old, new, target)
    core = SequenceMatcher(None, old, new, autojunk=False).find_longest_match(
        0, len(old), 0, len(new)
    )
    if _pairs_by_core(core.size, old, new):
        before, after = old[: core.a], old[core.a + core.size :]
        added = new[: core.b] + new[core.b + core.size :]
        inner = len(target) - len(before) - len(after)
        if not added and inner > 0 and target.startswith(before) and target.endswith(after):
            return target[len(before) : len(target) - len(after)]
    return None


def _is_number(word: str) -> bool:
    return word[:1].isdigit()


def _is_path(word: str) -> bool:
    return word.startswith(("/", "~/"))


def _separated_as(old: str, new: str, target: str) -> str | None:
    """`new` with the separators that `target` writes where `old` has its own ("51,000" ->
    "51000" turns "57,700" into "57700"); None where `target` is not `old` so written."""
    mapped: dict[str, str] = {}
    i = j = 0
    while i < len(old):
        char = old[i]
        if char in _SEPARATORS:
            written = target[j] if j < len(target) and target[j] in _SEPARATORS else ""
            if mapped.setdefault(char, written) != written:
                return None
            j += len(written)
        elif j >= len(target) or target[j] != char:
            return None
        else:
            j += 1
        i += 1
    if j != len(target) or any(c in _SEPARATORS and c not in mapped for c in new):
        return None
    return "".join(mapped.get(c, c) for c in new)


def _code_words(text: str) -> list[Word]:
    return [
        Word(m.start(), m.end(), m.group(), m.lastgroup or "identifier")
        for m in CODE_WORD.finditer(text)
    ]


def _pairs_by_core(size: int, a: str, b: str) -> bool:
    return size >= MIN_CORE and 2 * size >= max(len(a), len(b))


def _changed(source: list[Word], query: list[Word]) -> list[tuple[int, str]]:
    """(index in `source`, the query's word) for each source code word the query changes: the
    words in a replaced stretch of the two sequences, paired in order where the stretches are
    as long, else the one word of a kind on each side with the other, and each other with the
    one it shares most of its letters with."""
    a, b = [w.text for w in source], [w.text for w in query]
    changed: list[tuple[int, str]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "replace":
            continue
        if i2 - i1 == j2 - j1:
            changed += [
                (i, b[j])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
                if source[i].kind == query[j].kind
            ]
            continue
        free = set(range(j1, j2))
        for i in range(i1, i2):
            # the one word of its kind on both sides of the stretch replaces the other
            # ("SUMIF(Range; ...; SumRange)" -> "AVERAGEIF(Range; ...; Average_Range)")
            ours = [k for k in range(i1, i2) if source[k].kind == source[i].kind]
            theirs = [j for j in range(j1, j2) if query[j].kind == source[i].kind]
            if len(ours) == 1 and len(theirs) == 1 and theirs[0] in free:
                free.discard(theirs[0])
                changed.append((i, b[theirs[0]]))
                continue
            best, best_size = None, 0
            for j in sorted(j for j in free if query[j].kind == source[i].kind):
                size = (
                    SequenceMatcher(None, a[i], b[j], autojunk=False)
                    .find_longest_match(0, len(a[i]), 0, len(b[j]))
                    .size
                )
                if _pairs_by_core(size, a[i], b[j]) and size > best_size:
                    best, best_size = j, size
            if best is not None:
                free.discard(best)
                changed.append((i, b[best]))
    return changed


def _target_of(k: int, source: list[Word], target: list[Word]) -> Word | None:
    """The target code word that translates source code word `k`: the one at the same place
    among the paths, the names or the other code words, where both sides hold as many of
    them, else the same word at the same occurrence where the target holds it as often."""
    place = _PLACES[source[k].kind]
    ours = [w for w in source if _PLACES[w.kind] == place]
    theirs = [w for w in target if _PLACES[w.kind] == place]
    if len(ours) == len(theirs):
        return theirs[ours.index(source[k])]
    text = source[k].text
    occurrence = sum(w.text == text for w in source[:k])
    same = [w for w in target if w.text == text]
    if len(same) != sum(w.text == text for w in source):
        return None
    return same[occurrence]


def _encoded(
    tokens: Sequence[str],
    edits: list[tuple[Word, str]],
    encode: Callable[[str], list[str]],
) -> tuple[list[str], list[set[int]]] | None:
    """The tokens of the joined `tokens` with `edits` applied, and for each new token the old
    tokens whose characters it covers (all of a replaced word's, for a token inside it); None
    where the encoder does not give back the edited characters."""
    old = "".join(tokens)
    owner: list[int] = [i for i, token in enumerate(tokens) for _ in token]
    # each new character's old characters
    origins: list[range] = []
    text: list[str] = []
    at = 0
    for word, new in sorted(edits, key=lambda e: e[0].start):
        if word.start < at:
            return None
        origins += [range(c, c + 1) for c in range(at, word.start)]
        text.append(old[at : word.start])
        origins += [range(word.start, word.end)] * len(new)
        text.append(new)
        at = word.end
    origins += [range(c, c + 1) for c in range(at, len(old))]
    text.append(old[at:])
    edited = "".join(text)
    encoded = encode(edited.replace(SENTENCEPIECE_SPACE, " ").strip())
    if "".join(encoded) != edited:
        return None
    covered: list[set[int]] = []
    c = 0
    for token in encoded:
        covered.append({owner[o] for char in range(c, c + len(token)) for o in origins[char]})
        c += len(token)
    return encoded, covered
