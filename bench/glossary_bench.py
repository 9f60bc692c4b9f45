r"""Glossary terms in the translations, and BLEU with and without the glossary.

Builds a glossary and a test set from the German gettext catalogues installed under
/usr/share/locale/de/LC_MESSAGES (Debian packages' .mo files):

  glossary   one- and two-word msgids whose msgstr is a capitalised word or two (a UI term and
             the catalogue's own German noun for it), kept when at least --min-uses other
             msgids hold the term and their msgstr hold its translation, and these are at
             least --min-consistency of the msgids holding the term (the catalogues'
             terminology: "when" -> "Wann", a column header, is not)
  test set   single-line msgids (up to 200 characters) holding a glossary term whose msgstr
             holds the term's translation, at most --sentences, the term entries held out

Starts `tm-guide serve` (SQLite, the bundled demo model) with the glossary as a memory, asks
/v1/suggest for each test msgid with `glossaries` and without, and prints the share of the
(sentence, term) pairs whose target term the translation holds, and sacreBLEU against the
msgstr, both ways. Example:

  python bench/glossary_bench.py --sentences 300
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

import requests
import sacrebleu

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from local_server import LocalServer, catalogue_pairs, installed_catalogues  # noqa: E402

from tm_guide.text.glossary import Glossary, Term, applied  # noqa: E402


def in_reference(term: Term, target: str) -> bool:
    """Whether a catalogue's msgstr holds the term's target as words of their own or opening or
    closing a compound: the rule that picks the glossary and the test set, fixed here so that a
    change to how the server reads a translation (applied) does not change the set."""
    escaped = re.escape(term.target)
    pattern = rf"(?<!\w){escaped}|{escaped}(?!\w)"
    return re.search(pattern, target, flags=re.IGNORECASE) is not None


def build(
    pairs: list[tuple[str, str]],
    min_uses: int,
    min_consistency: float,
    sentences: int,
    seed: int,
) -> tuple[dict[str, str], list[tuple[str, str, list]]]:
    word = re.compile(r"^[A-Za-z][a-z]+(?: [a-z]+)?$")
    candidates = {  # terminology: a German noun (capitalised) for an English word or two
        source.lower(): target
        for source, target in pairs
        if word.match(source) and re.match(r"^[A-ZÄÖÜ]\w+(?: \w+)?$", target) and len(source) > 3
    }
    lines = [
        (s, t)
        for s, t in pairs
        if "\n" not in s and 20 <= len(s) <= 200 and s.lower() not in candidates
    ]
    uses: Counter[str] = Counter()
    occurs: Counter[str] = Counter()
    every = Glossary(list(candidates.items()))
    for source, target in lines:
        for term in every.terms_in(source):
            occurs[term.source] += 1
            if in_reference(term, target):
                uses[term.source] += 1
    chosen = {
        s: candidates[s]
        for s, n in uses.items()
        if n >= min_uses and n >= min_consistency * occurs[s]
    }
    glossary = Glossary(list(chosen.items()))
    tests = []
    for source, target in lines:
        terms = [t for t in glossary.terms_in(source) if in_reference(t, target)]
        if terms:
            tests.append((source, target, terms))
    random.Random(seed).shuffle(tests)
    return chosen, tests[:sentences]


def translate(server: LocalServer, source: str, glossaries: list[str]) -> str:
    body = {"source": source, "memories": ["tm"], "glossaries": glossaries}
    reply = requests.post(
        server.base + "/v1/suggest",
        json=body,
        headers={"Authorization": f"Bearer {server.key}"},
        timeout=120,
    )
    reply.raise_for_status()
    return str(reply.json()["results"][0]["translation"]["text"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalogues", type=Path, nargs="*", default=installed_catalogues())
    parser.add_argument("--min-uses", type=int, default=3)
    parser.add_argument(
        "--min-consistency",
        type=float,
        default=0.5,
        help="keep a term whose translation the catalogues' msgstrs hold in at least this share "
        "of the msgids holding the term (0: any)",
    )
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--outputs", type=Path, help="write every translation here (JSON lines)")
    parser.add_argument(
        "--show-missing", type=int, default=0, help="print this many translations missing a term"
    )
    args = parser.parse_args()

    chosen, tests = build(
        catalogue_pairs(args.catalogues),
        args.min_uses,
        args.min_consistency,
        args.sentences,
        args.seed,
    )
    pairs_total = sum(len(terms) for _, _, terms in tests)
    print(
        f"{len(args.catalogues)} catalogues: glossary of {len(chosen)} terms, "
        f"{len(tests)} test msgids holding {pairs_total} (msgid, term) pairs\n"
    )
    rows = []
    translations: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = LocalServer(Path(tmp), threads=40)
        try:
            headers = {"Authorization": f"Bearer {server.key}"}
            for name in ("tm", "terms"):
                server.create_memory(name)
            for source, target in chosen.items():
                requests.post(
                    server.base + "/v1/memories/terms/segments",
                    json={"source": source, "target": target},
                    headers=headers,
                    timeout=30,
                ).raise_for_status()
            for label, glossaries in (("without glossary", []), ("with glossary", ["terms"])):
                outputs = [translate(server, source, glossaries) for source, _, _ in tests]
                translations[label] = outputs
                held = sum(
                    applied(term, output)
                    for output, (_, _, terms) in zip(outputs, tests, strict=True)
                    for term in terms
                )
                bleu = sacrebleu.corpus_bleu(outputs, [[target for _, target, _ in tests]])
                rows.append((label, held / pairs_total, bleu.score))
                if glossaries:
                    missing = [
                        (source, output, [t for t in terms if not applied(t, output)])
                        for output, (source, _, terms) in zip(outputs, tests, strict=True)
                        if not all(applied(t, output) for t in terms)
                    ]
                    for source, output, lacking in missing[: args.show_missing]:
                        wanted = ", ".join(f"{t.source} -> {t.target}" for t in lacking)
                        print(f"missing {wanted}\n  {source}\n  {output}")
        finally:
            server.stop()
    if args.outputs:
        with args.outputs.open("w", encoding="utf-8") as out:
            for i, (source, target, terms) in enumerate(tests):
                line = {"source": source, "reference": target, "terms": [t.source for t in terms]}
                line.update({label: texts[i] for label, texts in translations.items()})
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
    print("| | terms held | BLEU |")
    print("|---|---|---|")
    for label, share, bleu in rows:
        print(f"| {label} | {share:.1%} | {bleu:.2f} |")


if __name__ == "__main__":
    main()
