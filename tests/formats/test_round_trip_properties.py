"""Round trips as properties (hypothesis): plural entries through PO import and export, and the
language tags a unit came with through TMX export and import."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import polib
from hypothesis import given, settings
from hypothesis import strategies as st

from tm_guide.formats import read_po, read_tmx, write_po, write_tmx
from tm_guide.records import SegmentRecord

# Plural-Forms of languages with 1, 2, 3 and 6 forms (Japanese, German, Polish, Arabic)
PLURAL_FORMS = {
    1: "nplurals=1; plural=0;",
    2: "nplurals=2; plural=(n != 1);",
    3: "nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);",
    6: "nplurals=6; plural=n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 && n%100<=10 ? 3 "
    ": n%100>=11 ? 4 : 5;",
}
text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp")),
    min_size=1,
    max_size=30,
).filter(lambda s: s.strip() and s == s.strip())


@settings(max_examples=60, deadline=None)
@given(
    nplurals=st.sampled_from(sorted(PLURAL_FORMS)),
    msgid=text,
    msgid_plural=text,
    forms=st.lists(text, min_size=6, max_size=6),
    context=st.none() | text,
)
def test_a_plural_entry_comes_back_whole(
    nplurals: int, msgid: str, msgid_plural: str, forms: list[str], context: str | None
) -> None:
    if msgid == msgid_plural:
        return
    catalogue = polib.POFile(wrapwidth=0)
    catalogue.metadata = {
        "Language": "xx",
        "Content-Type": "text/plain; charset=UTF-8",
        "Plural-Forms": PLURAL_FORMS[nplurals],
    }
    catalogue.append(
        polib.POEntry(
            msgid=msgid,
            msgid_plural=msgid_plural,
            msgctxt=context,
            msgstr_plural=dict(enumerate(forms[:nplurals])),
            flags=["c-format"],
        )
    )
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "in.po"
        source.write_text(catalogue.__unicode__(), encoding="utf-8")
        records = list(read_po(source, "en", "xx"))
        out = Path(work) / "out.po"
        assert write_po(out, source_lang="en", target_lang="xx", segments=records) == 1
        [entry] = polib.pofile(str(out))
    assert (entry.msgid, entry.msgid_plural, entry.msgctxt) == (msgid, msgid_plural, context)
    assert [entry.msgstr_plural[i] for i in range(nplurals)] == forms[:nplurals]
    assert entry.flags == ["c-format"]


TAGS = {
    "en": ["en-US", "en-GB", "en-AU", None],
    "de": ["de-AT", "de-CH", "de-DE", None],
}


@settings(max_examples=40, deadline=None)
@given(
    units=st.lists(
        st.tuples(st.sampled_from(TAGS["en"]), st.sampled_from(TAGS["de"]), text, text),
        min_size=1,
        max_size=8,
    )
)
def test_the_tags_a_unit_came_with_survive_tmx_export_and_import(units) -> None:
    records = [
        SegmentRecord(source=source, target=target, source_lang=s_tag, target_lang=t_tag)
        for s_tag, t_tag, source, target in units
    ]
    out = io.BytesIO()
    write_tmx(out, source_lang="en", target_lang="de", segments=records)
    out.seek(0)
    back = list(read_tmx(out, "en", "de"))
    assert [(r.source_lang, r.target_lang) for r in back] == [
        (r.source_lang, r.target_lang) for r in records
    ]
