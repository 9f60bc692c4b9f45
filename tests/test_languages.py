"""One rule for language tags: every spelling CAT tools use, matched by language and script."""

from __future__ import annotations

import pytest

from tm_guide import languages
from tm_guide.errors import InvalidInput


@pytest.mark.parametrize(
    ("tag", "normalized"),
    [
        ("de_DE", "de-DE"),
        ("EN-gb", "en-GB"),
        ("zh_CN", "zh-CN"),
        ("zh-hant", "zh-Hant"),
        ("sr@latin", "sr-Latn"),
        ("de_DE.UTF-8", "de-DE"),
        ("pt_br", "pt-BR"),
        ("xx", "xx"),
    ],
)
def test_every_common_spelling_normalises(tag: str, normalized: str) -> None:
    assert languages.normalize(tag) == normalized


@pytest.mark.parametrize("tag", ["", "0", "a", "123", "en--US", "de DE", "../etc"])
def test_what_is_no_tag_is_refused_naming_the_field(tag: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        languages.normalize(tag, field="target_lang")
    assert raised.value.field == "target_lang"


@pytest.mark.parametrize(
    ("have", "want", "rank"),
    [
        ("de", "de", languages.EXACT),
        ("de-DE", "de_de", languages.EXACT),
        ("de", "de-AT", languages.SAME_SCRIPT),
        ("pt-PT", "pt_BR", languages.SAME_SCRIPT),
        ("zh-TW", "zh-Hant", languages.SAME_SCRIPT),
        ("zh", "zh_CN", languages.SAME_SCRIPT),
        ("zh-TW", "zh_CN", None),
        ("zh-Hans", "zh-Hant", None),
        ("sr", "sr@latin", None),
        ("sr-Latn", "sr@latin", languages.EXACT),
        ("de", "en", None),
        ("de", "not a tag", None),
    ],
)
def test_tags_match_by_language_and_script_never_across_scripts(have, want, rank) -> None:
    assert languages.match_rank(have, want) == rank
    assert languages.matches(have, want) is (rank is not None)
