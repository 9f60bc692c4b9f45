"""The target-vocabulary facts that every step decoder exposes to the search."""

from __future__ import annotations

from collections.abc import Sequence

from tm_guide.errors import ModelError


class TargetVocabulary:
    """Vocabulary size and the ids the search starts and ends hypotheses with.

    A base of the step decoders, so that they agree on how the start token falls back (to the
    end token, as CTranslate2 does for Marian models)."""

    def __init__(self, tokens: Sequence[str], end_token: str, start_token: str | None) -> None:
        self.target_vocabulary = list(tokens)
        self.target_index = {token: i for i, token in enumerate(self.target_vocabulary)}
        if end_token not in self.target_index:
            raise ModelError(f"end token {end_token!r} is not in the target vocabulary")
        self._end_id = self.target_index[end_token]
        self._start_id = self.target_index.get(start_token or end_token, self._end_id)

    @property
    def vocab_size(self) -> int:
        return len(self.target_vocabulary)

    @property
    def start_id(self) -> int:
        return self._start_id

    @property
    def end_id(self) -> int:
        return self._end_id

    @property
    def byte_ids(self) -> list[int]:
        """The id of each byte-fallback piece (<0x00>..<0xFF>), -1 where there is none: what the
        search keeps in valid UTF-8 order (tm_guide.decoding.utf8)."""
        from tm_guide.decoding.utf8 import byte_ids

        return byte_ids(self.target_index)
