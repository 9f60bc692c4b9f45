"""The translation unit: the record importers yield and the store and the API accept, and the
fields a stored segment shares with it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# what XML 1.0, and so a TMX, cannot hold (control characters, lone surrogates, U+FFFE/U+FFFF)
NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def text_xml_cannot_hold(unit: Any) -> tuple[str, int, str] | None:
    """The first text of a record or stored segment holding a character XML 1.0 forbids, as
    (field, position, character); None when a TMX can carry all of it. A prop's name and value
    are looked at together, as `props.NAME`."""
    texts = {
        "source": unit.source,
        "target": unit.target,
        "tuid": unit.tuid,
        "context": unit.context,
        "created_by": getattr(unit, "created_by", None),
        "changed_by": getattr(unit, "changed_by", None),
        **{f"props.{k}": f"{k}{v}" for k, v in (getattr(unit, "props", None) or {}).items()},
    }
    for name, text in texts.items():
        bad = NOT_XML.search(text) if isinstance(text, str) else None
        if bad is not None:
            return name, bad.start(), bad.group()
    return None


@dataclass
class TranslationUnit:
    """A source/target pair and the metadata a TM keeps with it: what an imported record and a
    stored segment have in common.

    `source` and `target` are plain text (inline markup removed) and are what gets indexed and
    translated; `source_markup`/`target_markup` keep the original inner XML of a TMX <seg> when it
    had inline tags, so that export restores it.
    """

    source: str
    target: str
    tuid: str | None = None
    context: str | None = None
    source_markup: str | None = None
    target_markup: str | None = None
    created_at: datetime | None = None
    created_by: str | None = None
    changed_at: datetime | None = None
    changed_by: str | None = None
    usage_count: int = 0
    props: dict[str, str] = field(default_factory=dict)
    # the tags the unit came with where they differ from its memory's (de-AT text in a de
    # memory), in BCP 47 form; None: the memory's. Export writes them back.
    source_lang: str | None = None
    target_lang: str | None = None


@dataclass
class SegmentRecord(TranslationUnit):
    """A unit on its way into the store, independent of where it came from."""

    line: int | None = None  # line in the import file, for error messages; never stored
