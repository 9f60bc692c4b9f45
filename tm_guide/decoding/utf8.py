"""Valid UTF-8 by construction: a rule of the beam search over byte-fallback pieces.

A SentencePiece model with byte fallback writes a character it has no piece for as its UTF-8
bytes, one piece each (`<0xC3>` `<0xA9>` for "é"). Nothing in the model keeps those pieces in
order: a lead byte followed by anything but its continuation bytes detokenizes to U+FFFD, which
a translator sees as a broken character ("séjéjéj\ufffd×p"). The rule lets a hypothesis be
extended only as UTF-8 allows: after a lead byte, only the continuation bytes it admits (the
second byte of E0, ED, F0 and F4 narrower, so that no overlong form or surrogate is written),
and nothing else, end of sentence included; otherwise no stray continuation byte and no byte
that never starts a character (C0, C1, F5-FF); and at a sentence's last step, no lead byte that
could not be finished.

The state of a hypothesis is read off its last pieces, so the search keeps nothing beside its
sequences. search.py applies the rule and the compiled search (csrc/search.h) applies the same
rule to the same rows. CTranslate2's own search (sentences without TM pieces, the unguided
alternative) takes no per-step rule: an output of it that is not valid (`valid`) is searched
again by the engine's own search at lambda 0, under the rule (GuidedTranslator.search).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]
_NEG = np.float32(-np.inf)
# the modes of Utf8Rule.row_rule
PLAIN, LAST, OWED = 1, 2, 3


def byte_ids(token_index: dict[str, int]) -> list[int]:
    """The id of each byte's piece (`<0x00>`..`<0xFF>`), -1 where the vocabulary has none."""
    return [token_index.get(token, -1) for token in BYTE_TOKENS]


def _need(lead: int) -> int:
    """Continuation bytes a lead byte asks for (0: not a lead byte)."""
    if 0xC2 <= lead <= 0xDF:
        return 1
    if 0xE0 <= lead <= 0xEF:
        return 2
    if 0xF0 <= lead <= 0xF4:
        return 3
    return 0


def _second_range(lead: int) -> tuple[int, int]:
    """The bytes allowed right after `lead` (RFC 3629's table)."""
    return {0xE0: (0xA0, 0xBF), 0xED: (0x80, 0x9F), 0xF0: (0x90, 0xBF), 0xF4: (0x80, 0x8F)}.get(
        lead, (0x80, 0xBF)
    )


class Utf8Rule:
    """The rule for one vocabulary; `byte_of_id[id]` is the byte a piece stands for, or -1."""

    def __init__(self, ids: Sequence[int], vocab_size: int) -> None:
        self.id_of_byte = np.asarray(ids, dtype=np.int64)
        self.byte_of_id = np.full(vocab_size, -1, dtype=np.int64)
        for byte, token in enumerate(ids):
            if 0 <= token < vocab_size:
                self.byte_of_id[token] = byte
        present = self.id_of_byte >= 0
        bytes_ = np.arange(256)
        self._continuation = self.id_of_byte[present & (bytes_ >= 0x80) & (bytes_ <= 0xBF)]
        never = (bytes_ == 0xC0) | (bytes_ == 0xC1) | (bytes_ >= 0xF5)
        self._never = self.id_of_byte[present & never]
        self._leads = self.id_of_byte[present & (bytes_ >= 0xC2) & (bytes_ <= 0xF4)]
        self._denied = np.concatenate([self._continuation, self._never])
        self._denied_last = np.concatenate([self._denied, self._leads])

    @classmethod
    def for_vocabulary(cls, ids: Sequence[int] | None, vocab_size: int) -> Utf8Rule | None:
        """The rule, or None for a vocabulary without byte pieces (nothing to keep in order)."""
        if ids is None or not any(0 <= token < vocab_size for token in ids):
            return None
        return cls(ids, vocab_size)

    def valid(self, token_ids: Sequence[int]) -> bool:
        """Whether the byte pieces of `token_ids` form valid UTF-8 (another piece counts as a
        character of its own, which a pending lead byte does not admit either)."""
        data = bytes(int(b) if b >= 0 else 0x61 for b in self.byte_of_id[list(token_ids)])
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    def pending(self, sequence: Sequence[int]) -> tuple[int, int, int]:
        """(continuation bytes still owed, lowest and highest byte allowed next) at the end
        of `sequence`; (0, 0, 0) when it ends on a whole character."""
        trailing = 0
        i = len(sequence) - 1
        while i >= 0 and trailing < 3 and 0x80 <= self.byte_of_id[sequence[i]] <= 0xBF:
            trailing += 1
            i -= 1
        if i < 0:
            return 0, 0, 0
        lead = int(self.byte_of_id[sequence[i]])
        need = _need(lead)
        if need <= trailing:
            return 0, 0, 0
        low, high = _second_range(lead) if trailing == 0 else (0x80, 0xBF)
        return need - trailing, low, high

    def row_rule(self, sequence: Sequence[int], last_step: bool) -> tuple[int, int, int]:
        """The rule for the row that ends `sequence`, as (mode, lowest, highest byte): OWED (only
        the byte pieces lowest..highest), LAST (no continuation, never-used or lead byte),
        else PLAIN (no continuation or never-used byte). The host applies it to a row (`mask`),
        an engine that ranks on its device applies it there (tm_guide.decoding.candidates)."""
        owed, low, high = self.pending(sequence)
        if owed:
            return OWED, low, high
        return (LAST if last_step else PLAIN), 0, 0

    def mask(self, sequence: Sequence[int], log_probs: np.ndarray, last_step: bool) -> None:
        """Set to -inf, in place, every piece that would make `sequence` invalid UTF-8."""
        mode, low, high = self.row_rule(sequence, last_step)
        if mode == OWED:
            allowed = self.id_of_byte[low : high + 1]
            allowed = allowed[allowed >= 0]
            kept = log_probs[allowed].copy()
            log_probs[:] = _NEG
            log_probs[allowed] = kept
            return
        log_probs[self.denied(mode == LAST)] = _NEG

    def denied(self, last_step: bool) -> np.ndarray:
        """The pieces a row that owes no byte may not produce (with `last_step`: no lead byte
        either, it could not be finished)."""
        return self._denied_last if last_step else self._denied
