"""grow-diag-final-and (Koehn et al. 2003, as in Moses): merge two directional alignments into one.

eflomal's Python package gives the two directions only; the paper symmetrizes GIZA++ output with
this heuristic, so we do the same. Links are (source position, target position) pairs, 0-based.
"""

from __future__ import annotations

from collections.abc import Iterable

Link = tuple[int, int]

_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def grow_diag_final_and(
    forward: Iterable[Link], reverse: Iterable[Link], source_len: int, target_len: int
) -> list[Link]:
    """Start from the intersection, grow into diagonal neighbours from the union, then add union
    links (forward ones first, then reverse ones) whose two words are both still unaligned."""
    fwd = {link for link in forward if _inside(link, source_len, target_len)}
    rev = {link for link in reverse if _inside(link, source_len, target_len)}
    union = fwd | rev
    alignment = fwd & rev
    aligned_source = {s for s, _ in alignment}
    aligned_target = {t for _, t in alignment}

    def add(link: Link) -> None:
        alignment.add(link)
        aligned_source.add(link[0])
        aligned_target.add(link[1])

    grew = True
    while grew:
        grew = False
        for s in range(source_len):
            for t in range(target_len):
                if (s, t) not in alignment:
                    continue
                for ds, dt in _NEIGHBOURS:
                    candidate = (s + ds, t + dt)
                    if candidate in alignment or candidate not in union:
                        continue
                    if candidate[0] not in aligned_source or candidate[1] not in aligned_target:
                        add(candidate)
                        grew = True

    for direction in (fwd, rev):
        for link in sorted(direction):
            if link[0] not in aligned_source and link[1] not in aligned_target:
                add(link)
    return sorted(alignment)


def _inside(link: Link, source_len: int, target_len: int) -> bool:
    return 0 <= link[0] < source_len and 0 <= link[1] < target_len


def parse_links(line: str) -> list[Link]:
    """'0-0 1-2' (Pharaoh format, source-target) -> [(0, 0), (1, 2)]."""
    links = []
    for item in line.split():
        source, _, target = item.partition("-")
        links.append((int(source), int(target)))
    return links


def format_links(links: Iterable[Link]) -> str:
    return " ".join(f"{s}-{t}" for s, t in links)
