"""The system-dependent messages of a GNU MO file, which polib does not read.

msgfmt stores a c-format message that uses an <inttypes.h> macro (`%<PRIu64>`, `%<PRIdMAX>`)
apart from the other messages (MO revision 1, gettext's gmo.h): as static pieces with references
to named segments, so that the C library can put in the right conversion at run time. Debian's
git.mo holds 56 such messages and coreutils.mo 21. They are read back here as msgunfmt writes them:
each segment as `<NAME>` inside its message ("%<PRIdMAX> bytes copied").
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_MAGIC = 0x950412DE
_SEGMENTS_END = 0xFFFFFFFF


@dataclass(frozen=True)
class SystemDependentMessage:
    context: str | None
    msgid: str
    msgid_plural: str | None
    msgstrs: tuple[str, ...]  # one, or one per plural form


def system_dependent_messages(data: bytes, encoding: str) -> list[SystemDependentMessage]:
    """The system-dependent messages of an MO file's bytes; [] for a file without them.

    Raises ValueError for a file whose tables point outside it."""
    if len(data) < 28:
        return []
    for order in ("<", ">"):
        if struct.unpack_from(order + "I", data, 0)[0] == _MAGIC:
            break
    else:
        raise ValueError("not an MO file (bad magic number)")
    revision = struct.unpack_from(order + "I", data, 4)[0]
    if revision >> 16 != 0 or revision & 0xFFFF < 1 or len(data) < 48:
        return []  # revision 0 has no system-dependent messages

    def u32(offset: int) -> int:
        if offset < 0 or offset + 4 > len(data):
            raise ValueError(f"table entry at byte {offset} lies outside the file")
        return int(struct.unpack_from(order + "I", data, offset)[0])

    n_segments, segments_at, n_strings, originals_at, translations_at = (
        u32(28 + 4 * i) for i in range(5)
    )
    segments = [
        _piece(data, u32(segments_at + 8 * i + 4), u32(segments_at + 8 * i))
        for i in range(n_segments)
    ]

    def message(table: int, index: int) -> str:
        at = u32(table + 4 * index)
        pieces, position, pair = [], u32(at), at + 4
        while True:
            size, reference = u32(pair), u32(pair + 4)
            pieces.append(_piece(data, position, size))
            position += size
            if reference == _SEGMENTS_END:
                break
            if reference >= n_segments:
                raise ValueError(f"message {index} names segment {reference} of {n_segments}")
            pieces.append(b"<" + segments[reference].rstrip(b"\0") + b">")
            pair += 8
        return b"".join(pieces).rstrip(b"\0").decode(encoding)

    found = []
    for index in range(n_strings):
        original = message(originals_at, index)
        translation = message(translations_at, index)
        context, _, original = original.rpartition("\x04")
        msgid, _, plural = original.partition("\0")
        found.append(
            SystemDependentMessage(
                context or None, msgid, plural or None, tuple(translation.split("\0"))
            )
        )
    return found


def _piece(data: bytes, offset: int, length: int) -> bytes:
    if offset < 0 or offset + length > len(data):
        raise ValueError(f"a string at byte {offset} runs past the end of the file")
    return data[offset : offset + length]
