"""Import and export of translation memories: TMX, gettext PO/MO, TSV and aligned plain text."""

from tm_guide.formats.common import ReadStats, RecordReader
from tm_guide.formats.tmx import read_tmx

__all__ = ["ReadStats", "RecordReader", "read_tmx"]
