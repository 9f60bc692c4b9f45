"""A word of a text is found only as a word of its own."""

from __future__ import annotations

from tm_guide.text.words import occurs_as_word


def test_a_word_is_found_only_whole() -> None:
    assert occurs_as_word("systemd", "the init system systemd")
    assert not occurs_as_word("system", "the systemd timer")
    assert not occurs_as_word("m²", "10 m²s")
    assert occurs_as_word("m²", "10 m² each")
    assert not occurs_as_word("Unstable", "the unstable release")
    assert occurs_as_word("Unstable", "the unstable release", ignore_case=True)
