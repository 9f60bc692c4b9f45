"""KDE handbooks paired by section and position (bench/corpus/kde_docs.py)."""

from __future__ import annotations

from kde_docs import collect, declarations, entity_tables, expand, pair_all, pair_document

EN = """<?xml version="1.0" ?>
<!DOCTYPE book PUBLIC "-//KDE//DTD DocBook XML V4.5-Based Variant V1.1//EN" "dtd/kdedbx45.dtd" [
  <!ENTITY kappname "&viewer;">
  <!ENTITY % addindex "IGNORE">
]>
<book id="viewer" lang="&language;">
<bookinfo><title>The &kappname; Handbook</title>
<authorgroup><author><firstname>Ada</firstname></author></authorgroup></bookinfo>
<chapter id="introduction"><title>Introduction</title>
<para>&kappname; shows documents of &kde;.</para>
<para>Choose <menuchoice><shortcut><keycombo>&Ctrl;<keycap>O</keycap></keycombo></shortcut>
<guimenu>File</guimenu><guimenuitem>Open...</guimenuitem></menuchoice> to open one.</para>
<screen>viewer --help</screen>
<para>It reads <itemizedlist><listitem><para>PDF files</para></listitem></itemizedlist></para>
</chapter>
<chapter id="credits"><title>Credits</title><para>Written by Ada.</para></chapter>
<chapter id="unknown"><title>Plugins</title><para>See &undeclared;.</para></chapter>
</book>"""

DE = """<?xml version="1.0" ?>
<!DOCTYPE book PUBLIC "-//KDE//DTD DocBook XML V4.5-Based Variant V1.1//EN" "dtd/kdedbx45.dtd" [
  <!ENTITY kappname "&viewer;">
  <!ENTITY % German "INCLUDE">
]>
<book id="viewer" lang="&language;">
<bookinfo><title
>Das Handbuch zu &kappname;</title></bookinfo>
<chapter id="introduction"><title
>Einleitung</title>
<para
>&kappname; zeigt Dokumente von &kde; an.</para>
<para
>Wählen Sie <menuchoice
><shortcut
><keycombo
>&Ctrl;<keycap
>O</keycap
></keycombo
></shortcut
><guimenu
>Datei</guimenu
><guimenuitem
>Öffnen ...</guimenuitem
></menuchoice
>, um eines zu öffnen.</para>
<screen>viewer --help</screen>
<para
>Es liest <itemizedlist><listitem><para>PDF-Dateien</para></listitem></itemizedlist></para>
</chapter>
<chapter id="credits"><title>Danksagungen</title><para>Geschrieben von Ada.</para>
<para>Übersetzung: Bert</para></chapter>
<chapter id="unknown"><title>Module</title><para>Siehe &undeclared;.</para></chapter>
</book>"""

ENTITIES = {
    "general": declarations('<!ENTITY viewer "<application>Viewer</application>">'),
    "en": declarations('<!ENTITY kde "<acronym>KDE</acronym>"> <!ENTITY Ctrl "Ctrl">'),
    "de": declarations("<!ENTITY kde 'K-Arbeitsumgebung'> <!ENTITY Ctrl 'Strg'>"),
}


def test_entities_expand_recursively_and_unknown_ones_stay() -> None:
    table = declarations('<!ENTITY a "&b; and &b;"> <!ENTITY b "B"> <!ENTITY % p "x">')
    assert table == {"a": "&b; and &b;", "b": "B"}
    assert expand("&a; &amp; &eacute; &nope;", table) == "B and B &amp; é &nope;"


def test_sections_pair_by_position_with_menu_paths_as_rendered() -> None:
    pairs, skipped = pair_document(EN.encode(), DE.encode(), ENTITIES)
    assert pairs == [
        ("Introduction", "Einleitung"),
        ("Viewer shows documents of KDE.", "Viewer zeigt Dokumente von K-Arbeitsumgebung an."),
        (
            "Choose File → Open... (Ctrl+O) to open one.",
            "Wählen Sie Datei → Öffnen ... (Strg+O), um eines zu öffnen.",
        ),
        ("It reads", "Es liest"),
        ("PDF files", "PDF-Dateien"),
        ("Plugins", "Module"),
    ]
    # the book title lies in bookinfo (metadata); "credits" holds one block more in German and
    # is skipped whole; "See &undeclared;." holds an entity nothing declares and is dropped
    assert skipped == 1


def test_pages_pair_only_when_both_languages_hold_them() -> None:
    members = [
        ("./usr/share/doc/HTML/en/viewer/index.docbook", EN.encode()),
        ("./usr/share/doc/HTML/de/viewer/index.docbook", DE.encode()),
        ("./usr/share/doc/HTML/en/other/index.docbook", EN.encode()),
        ("./usr/share/doc/HTML/fr/viewer/index.docbook", EN.encode()),
        ("./usr/share/doc/HTML/de/viewer/image.png", b"\x89PNG"),
    ]
    docbooks = collect(members)
    assert sorted(docbooks["en"]) == ["other/index.docbook", "viewer/index.docbook"]
    pages = list(pair_all(docbooks, ENTITIES))
    assert [page for page, _, _ in pages] == ["viewer/index.docbook"]


def test_entity_tables_come_from_kdoctools_paths() -> None:
    members = [
        (
            "./usr/share/kf5/kdoctools/customization/entities/general.entities",
            b'<!ENTITY kde "KDE">',
        ),
        ("./usr/share/kf5/kdoctools/customization/de/user.entities", b"<!ENTITY Ctrl 'Strg'>"),
    ]
    tables = entity_tables(members)
    assert tables == {"general": {"kde": "KDE"}, "en": {}, "de": {"Ctrl": "Strg"}}
