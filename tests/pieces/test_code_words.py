"""Code words a close match takes over (tm_guide.pieces.code_words), with the demo model's own
SentencePiece models: the edited pair, its alignment, and what the repair then keeps."""

from __future__ import annotations

import pytest

from tm_guide.model import Bundle
from tm_guide.pieces.code_words import absorb_code_words, transferred
from tm_guide.pieces.collect import AlignedPair, compare
from tm_guide.pieces.repair import RepairOptions, match_template


@pytest.mark.parametrize(
    ("old", "new", "target", "expected"),
    [
        ("COPY", "MOVE", "COPY", "MOVE"),  # held as it is: the input's
        ("C2", "B2", "C2", "B2"),
        ("dh_installchangelogs", "dh_installdocs", "dh_installchangelogs", "dh_installdocs"),
        ("AVERAGEIFS", "AVERAGEIF", "MITTELWERTWENNS", "MITTELWERTWENN"),  # the same affix lost
        ("WEEKNUM_OOO", "WEEKNUM", "KALENDERWOCHE_OOO", "KALENDERWOCHE"),
        ("OpenType", "OpenPGP", "OpenType", "OpenPGP"),  # a name held as it is
        ("/etc/hosts", "/etc/hostname", "/etc/hosts", "/etc/hostname"),  # a path
        ("/a/package_name.preinst", "/a/package_name.postinst", "/a/paketname.preinst", None),
        ("4.10", "4.16", "4.10", "4.16"),  # a number held as it is
        ("51,000", "57,700", "51000", "57700"),  # ... or written with other separators
        ("4.5", "4.7", "4,5", "4,7"),
        ("51,000", "57,700", "einundfünfzigtausend", None),
        ("12", "COPY", "12", None),  # a number and a word are not one thing changed
        ("COUNT", "COUNTA", "ANZAHL", None),  # an affix added: ANZAHL2, not ANZAHLA
        ("WEEKNUM", "ISOWEEKNUM", "KALENDERWOCHE", None),
        ("AVERAGEIFS", "AVERAGE", "MITTELWERTWENNS", None),  # the target lacks "IFS"
        ("VALUE", "ARABIC", "WERT", None),  # another word
    ],
)
def test_a_code_word_changes_as_a_translator_would_change_it(
    old: str, new: str, target: str, expected: str | None
) -> None:
    assert transferred(old, new, target) == expected


def encoded_pair(
    bundle: Bundle, source: str, target: str, links: list[tuple[str, str]]
) -> AlignedPair:
    """The pair encoded as memories are, each (source piece, target piece) of `links` aligned
    (the first occurrence of each)."""
    src, trg = bundle.encode_source(source), bundle.encode_target(target)
    return AlignedPair.build(7, src, trg, [(src.index(s), trg.index(t)) for s, t in links])


def test_a_changed_function_name_is_changed_in_the_match_and_kept(bundle: Bundle) -> None:
    source = '=AVERAGEIFS(B2:B6;">=20")'
    target = '=MITTELWERTWENNS(B2:B6;">=20")'
    src, trg = bundle.encode_source(source), bundle.encode_target(target)
    # each source piece aligned to the target piece at the same place from the end (the
    # function names have other lengths, the rest is the same)
    links = [(len(src) - k, len(trg) - k) for k in range(1, min(len(src), len(trg)) + 1)]
    pair = AlignedPair.build(7, src, trg, links)
    query = bundle.encode_source('=AVERAGEIF(B2:B6;">=20")')
    [absorbed] = absorb_code_words(query, [pair], bundle.encode_source, bundle.encode_target)
    assert "".join(absorbed.source) == "".join(query)
    assert "".join(absorbed.target).lstrip("\u2581") == '=MITTELWERTWENN(B2:B6;">=20")'
    comparison = compare(query, absorbed.source)
    assert comparison.similarity == 1.0
    # the rest of the match keeps its alignment: the last pieces are linked as before
    assert absorbed.target_links[-3:] == tuple(1 << (len(absorbed.source) - k) for k in (3, 2, 1))
    template = match_template(absorbed, comparison, RepairOptions(0.5))
    assert template is not None
    assert "".join(template.tokens) == "".join(absorbed.target)
    assert not any(template.gaps)


def test_an_identifier_held_as_it_is_becomes_the_inputs(bundle: Bundle) -> None:
    pair = encoded_pair(
        bundle,
        "Run the COPY command.",
        "Führen Sie den Befehl COPY aus.",
        [("▁Run", "▁Führ"), ("▁command", "▁Befehl")],
    )
    query = bundle.encode_source("Run the MOVE command.")
    before = compare(query, pair.source).similarity
    [absorbed] = absorb_code_words(query, [pair], bundle.encode_source, bundle.encode_target)
    assert "".join(absorbed.target) == "▁Führen▁Sie▁den▁Befehl▁MOVE▁aus."
    assert compare(query, absorbed.source).similarity > before
    # "Run" and "command" keep their links, moved to where their pieces are now
    run, command = absorbed.source.index("▁Run"), absorbed.source.index("▁command")
    assert absorbed.target_links[absorbed.target.index("▁Führ")] == 1 << run
    assert absorbed.target_links[absorbed.target.index("▁Befehl")] == 1 << command


@pytest.mark.parametrize(
    ("source", "target", "query", "absorbed"),
    [
        (
            "Example 10.12. Excerpt of /etc/bind/named.conf.local",
            "Beispiel 10.12. Auszug aus der Datei /etc/bind/named.conf.local",
            "Example 10.15. Excerpt of /etc/dhcp/dhcpd.conf",
            "Beispiel 10.15. Auszug aus der Datei /etc/dhcp/dhcpd.conf",
        ),
        (
            "Edit /etc/ssh/sshd_config now.",
            "Bearbeiten Sie /etc/ssh/sshd_config jetzt.",
            "Edit /etc/ssh/ssh_config now.",
            "Bearbeiten Sie /etc/ssh/ssh_config jetzt.",
        ),
        (
            "Wikipedia on OpenType",
            "OpenType in Wikipedia",
            "Wikipedia on OpenPGP",
            "OpenPGP in Wikipedia",
        ),
    ],
)
def test_a_path_or_a_name_held_as_it_is_becomes_the_inputs(
    bundle: Bundle, source: str, target: str, query: str, absorbed: str
) -> None:
    """The model garbles paths and names it has not seen ("/etc/dhcp.conf" for
    /etc/dhcp/dhcpd.conf, "Wikipedien" for OpenPGP); a translator copies them."""
    pair = encoded_pair(bundle, source, target, [])
    encoded = bundle.encode_source(query)
    [changed] = absorb_code_words(encoded, [pair], bundle.encode_source, bundle.encode_target)
    assert "".join(changed.source) == "".join(encoded)
    assert "".join(changed.target).replace("\u2581", " ").strip() == absorbed
    comparison = compare(encoded, changed.source)
    assert comparison.similarity == 1.0
    template = match_template(changed, comparison, RepairOptions(0.5))
    assert template is not None and not any(template.gaps)


def test_a_changed_number_is_changed_in_the_match_as_its_target_writes_it(bundle: Bundle) -> None:
    pair = encoded_pair(
        bundle,
        "more than 51,000 packages, built from nearly 25,000 source packages.",
        "mehr als 51000 Pakete, aus ungefähr 25000 Quellpaketen gebaut.",
        [("▁packages", "▁Pakete")],
    )
    query = bundle.encode_source(
        "more than 57,700 packages, built from nearly 25,000 source packages."
    )
    [absorbed] = absorb_code_words(query, [pair], bundle.encode_source, bundle.encode_target)
    assert "".join(absorbed.target).replace("\u2581", " ").strip() == (
        "mehr als 57700 Pakete, aus ungefähr 25000 Quellpaketen gebaut."
    )
    assert compare(query, absorbed.source).similarity == 1.0
    assert absorbed.target_links[absorbed.target.index("▁Pakete")] == 1 << absorbed.source.index(
        "▁packages"
    )


@pytest.mark.parametrize(
    ("source", "target", "query", "other", "copied", "taken"),
    [
        # COUNTA -> AVERAGEA: no rule derives the German name
        (
            "COUNTA(Value 1)",
            "ANZAHL2(Wert 1)",
            "AVERAGEA(Value 1)",
            ("AVERAGEA", "MITTELWERTA"),
            "AVERAGEA(Wert 1)",
            "MITTELWERTA(Wert 1)",
        ),
        # an affix added: the match cannot say what the new name is in German
        (
            "Use WEEKNUM here.",
            "Verwenden Sie hier KALENDERWOCHE.",
            "Use ISOWEEKNUM here.",
            ("ISOWEEKNUM", "ISOKALENDERWOCHE"),
            "Verwenden Sie hier ISOWEEKNUM.",
            "Verwenden Sie hier ISOKALENDERWOCHE.",
        ),
    ],
)
def test_a_new_name_is_taken_from_the_pair_that_holds_it_or_copied_whole(
    bundle: Bundle,
    source: str,
    target: str,
    query: str,
    other: tuple[str, str],
    copied: str,
    taken: str,
) -> None:
    """Where no retrieved source holds the input's new name, it is copied into the match;
    where another one does, its target's word at that place is taken; where two say
    different things, the model is left to write it from their pieces."""
    pair = encoded_pair(bundle, source, target, [])
    encoded = bundle.encode_source(query)
    encode = bundle.encode_source, bundle.encode_target

    def absorbed(*others: tuple[str, str]) -> AlignedPair:
        holders = [encoded_pair(bundle, *o, []) for o in others]
        return absorb_code_words(encoded, [pair, *holders], *encode)[0]

    def text(found: AlignedPair) -> str:
        return "".join(found.target).replace("\u2581", " ").strip()

    assert text(absorbed()) == copied
    assert text(absorbed(other)) == taken
    assert text(absorbed(other, other)) == taken  # two that agree
    assert absorbed(other, (other[0], "ANDERS")) is pair
    # pairs looked up for the word alone only say what it is called: where they disagree,
    # nothing retrieved holds it, and it is copied as before
    looked_up = [encoded_pair(bundle, *o, []) for o in (other, (other[0], "ANDERS"))]
    asked: list[list[str]] = []

    def look_up(missing: list[str], found: list[AlignedPair]) -> list[AlignedPair]:
        asked.append(missing)
        return found

    assert text(
        absorb_code_words(encoded, [pair], *encode, lambda m: look_up(m, looked_up))[0]
    ) == (copied)
    assert text(
        absorb_code_words(encoded, [pair], *encode, lambda m: look_up(m, looked_up[:1]))[0]
    ) == (taken)
    assert asked == [[other[0]], [other[0]]]  # asked once, for the word no retrieved pair holds


@pytest.mark.parametrize(
    ("source", "target", "query"),
    [
        ("Run the COPY command.", "Führen Sie den Befehl COPY aus.", "Run the COPY command now."),
        ("Open the file.", "Öffnen Sie die Datei.", "Open the PDF file."),  # no code word
        # the input's word matches none of the match's: nothing pairs them
        ("Use SUMIF here.", "Verwenden Sie hier SUMMEWENN.", "Use the FOO and BAR here."),
        # a path the target translates is the translator's to change
        (
            "/var/lib/dpkg/info/package_name.preinst",
            "/var/lib/dpkg/info/paketname.preinst",
            '"/var/lib/dpkg/info/package_name.postinst"',
        ),
        # a byte piece ("¶" is two) is no text to edit
        ("5.6.3. Delayed uploads¶", "5.6.3. Verzögerte Uploads¶", "5.6.4. Security uploads¶"),
    ],
)
def test_a_match_without_a_changed_code_word_is_left_as_it_is(
    bundle: Bundle, source: str, target: str, query: str
) -> None:
    pair = encoded_pair(bundle, source, target, [])
    encoded = bundle.encode_source(query)
    [absorbed] = absorb_code_words(encoded, [pair], bundle.encode_source, bundle.encode_target)
    assert absorbed is pair


def test_the_one_function_name_replaced_takes_what_another_pair_calls_the_new_one(
    bundle: Bundle,
) -> None:
    # the stretches differ in length ("SumRange" is a name, "Average_Range" none), and SUMIF
    # shares too few letters with AVERAGEIF to pair by them: each is the only identifier of
    # its stretch, so the one replaces the other, and another pair says MITTELWERTWENN
    match = encoded_pair(
        bundle,
        "SUMIF(Range; Criterion [; SumRange])",
        "SUMMEWENN(Bereich; Bedingung [; Summenbereich])",
        [("▁S", "▁S"), ("▁C", "▁Bedingung")],
    )
    other = encoded_pair(
        bundle,
        "AVERAGE, AVERAGEIF",
        "MITTELWERT, MITTELWERTWENN",
        [("▁A", "▁"), (",", ",")],
    )
    query = bundle.encode_source("AVERAGEIF(Range; Criterion [; Average_Range ])")
    absorbed, _ = absorb_code_words(
        query, [match, other], bundle.encode_source, bundle.encode_target
    )
    assert "".join(absorbed.target).startswith("▁MITTELWERTWENN(Bereich;")
    assert "".join(absorbed.source).startswith("▁AVERAGEIF(Range;")
