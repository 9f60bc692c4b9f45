"""Masking every non-translatable for a second translation."""

from __future__ import annotations

from tm_guide.text.placeholders import mask_all


def test_every_non_translatable_and_option_stands_in_and_comes_back() -> None:
    text = "Could not run 'git rev-list <commits> --not -n 1' in %s"
    masked = mask_all(text)
    assert masked is not None
    assert masked.text == "Could not run 'git rev-list {0} {1} {2} 1' in {3}"
    assert masked.unmask("Konnte 'git rev-list {0} {1} {2} 1' in {3} nicht ausführen") == (
        "Konnte 'git rev-list <commits> --not -n 1' in %s nicht ausführen"
    )
    assert masked.unmask("Konnte {0} {1} {2} nicht ausführen") is None  # {3} lost
    assert masked.unmask("{0} {1} {2} {3} {3}") is None  # repeated


def test_items_joined_by_punctuation_alone_are_one_stand_in() -> None:
    masked = mask_all("write [--pack=<pack>][--refs=<path>] now")
    assert masked is not None
    assert masked.text == "write [{0}] now"
    assert masked.originals == ("--pack=<pack>][--refs=<path>",)


def test_nothing_to_mask_or_braces_of_its_own() -> None:
    assert mask_all("Use --all to see all.") is None  # an option alone is no non-translatable
    assert mask_all("Print %s in --term-{new,bad}") is None  # braces the stand-ins would meet
    masked = mask_all("Delete {0} of %d")  # a brace placeholder is itself masked
    assert masked is not None and masked.originals == ("{0}", "%d")
