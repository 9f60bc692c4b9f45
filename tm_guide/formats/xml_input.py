"""Reading an XML import (TMX, XLIFF) safely, and saying where it is broken.

Every XML reader (an `XmlImport`) streams with `safe_iterparse` (no entity expansion, no network,
no DTD, no huge trees), refuses a document whose DTD declares entities (`refuse_entities`), and
turns lxml's and the file system's errors into an ImportFormatError with the file and line
(`import_errors`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lxml import etree

from tm_guide.errors import ImportFormatError
from tm_guide.formats.common import ReadStats, Source, source_name


def safe_iterparse(source: Any, **options: Any) -> Any:
    """lxml's iterparse without what makes XML imports dangerous (billion laughs, external
    entities), and without comments and processing instructions."""
    # libxml2's error log is per thread and iterparse does not reset it: without this, an
    # earlier parse's error would be reported as this file's location.
    etree.clear_error_log()
    return etree.iterparse(
        source,
        resolve_entities=False,
        no_network=True,
        huge_tree=False,
        load_dtd=False,
        dtd_validation=False,
        remove_comments=True,
        remove_pis=True,
        **options,
    )


@contextmanager
def import_errors(name: str) -> Iterator[None]:
    """XML syntax errors and unreadable files as an ImportFormatError naming file and line."""
    try:
        yield
    except etree.XMLSyntaxError as exc:
        line, message = syntax_error_location(exc)
        raise ImportFormatError(name, line, f"XML syntax error: {message}") from None
    except FileNotFoundError:
        raise ImportFormatError(name, None, "no such file") from None
    except OSError as exc:
        raise ImportFormatError(name, None, f"cannot read the file: {exc}") from None


class XmlImport:
    """What the XML readers share: the file, the memory's language pair, the reader's stats, and
    errors that name the file and line."""

    kind = "XML"  # the format's name in messages

    def __init__(
        self, source: Source, source_lang: str, target_lang: str, stats: ReadStats
    ) -> None:
        self.source = source
        self.name = source_name(source)
        self.source_lang = source_lang
        self.target_lang = target_lang
        self.stats = stats

    def error(self, line: int | None, what: str) -> ImportFormatError:
        return ImportFormatError(self.name, line, what)

    def refuse_entities(self, root: Any) -> None:
        names = declared_entities(root)
        if names:
            more = f" and {len(names) - 5} more" if len(names) > 5 else ""
            raise self.error(
                root.sourceline,
                f"the DOCTYPE declares entities ({', '.join(names[:5])}{more}); entity "
                f"declarations are not allowed in {self.kind} imports (entity expansion and "
                "external entities are a security risk)",
            )


def declared_entities(root: Any) -> list[str]:
    """The entities a document's internal DTD declares (imports refuse them: entity expansion and
    external entities are a security risk)."""
    dtd = root.getroottree().docinfo.internalDTD
    return [entity.name for entity in dtd.iterentities()] if dtd is not None else []


def syntax_error_location(exc: etree.XMLSyntaxError) -> tuple[int | None, str]:
    """The first real error libxml2 logged; iterparse's own message can be a generic follow-up."""
    for entry in exc.error_log:
        if entry.level >= etree.ErrorLevels.ERROR:
            return entry.line or None, entry.message
    line = exc.position[0] if exc.position else exc.lineno
    return line or None, exc.msg
