"""Inline markup of a TMX <seg>: its plain text, its inner XML, and parsing that XML back."""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

from lxml import etree

# Elements whose content is native code (a tag of the original document), not sentence text.
CODE_ELEMENTS = frozenset({"bpt", "ept", "ph", "it", "ut"})

_MARKUP_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False
)


class InlineMarkupError(ValueError):
    """Invalid inline markup; `line` is the line in the parsed file, when known."""

    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def plain_text(seg: Any) -> str:
    """The sentence text of a <seg>: codes (bpt/ept/ph/it/ut and any <sub> in them) left out,
    <hi> text kept."""
    parts = [seg.text or ""]
    for child in seg:
        _collect(child, parts, inside_code=False)
    return "".join(parts)


def inner_xml(seg: Any) -> str | None:
    """The XML inside a <seg>, or None when it has no inline elements (plain text needs no copy)."""
    if not len(seg):
        return None
    return escape(seg.text or "") + "".join(
        etree.tostring(child, encoding="unicode", with_tail=True) for child in seg
    )


def parse_markup(markup: str) -> Any:
    """A <seg> element built from stored inner XML (no entities, no DTD, nothing fetched)."""
    try:
        seg = etree.fromstring(f"<seg>{markup}</seg>", _MARKUP_PARSER)
    except etree.XMLSyntaxError as exc:
        raise InlineMarkupError(
            None, f"stored inline markup is not well-formed: {exc.msg}"
        ) from None
    plain_text(seg)  # validates the elements
    return seg


def _collect(element: Any, parts: list[str], inside_code: bool) -> None:
    if isinstance(element, etree._Entity):
        raise InlineMarkupError(
            element.sourceline,
            f"undefined entity {element.text}; only the five XML entities and numeric "
            "character references are allowed",
        )
    if isinstance(element, etree._Comment | etree._ProcessingInstruction):
        pass
    elif element.tag in CODE_ELEMENTS:
        for child in element:  # native code; nested elements are only checked
            _collect(child, [], inside_code=True)
    elif element.tag == "sub":
        if not inside_code:
            raise InlineMarkupError(element.sourceline, "<sub> outside an inline code element")
        for child in element:
            _collect(child, [], inside_code=False)
    elif element.tag == "hi":
        parts.append(element.text or "")
        for child in element:
            _collect(child, parts, inside_code=False)
    else:
        raise InlineMarkupError(
            element.sourceline, f"unknown inline element <{element.tag}> in <seg>"
        )
    parts.append(element.tail or "")
