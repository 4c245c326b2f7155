"""Sentences (lists of words) to BERT input ids, keeping where each word's pieces are.

Each distinct word is split into WordPieces once (cached); a sequence is assembled by hand as
`[CLS] (<time>) pieces... [SEP]`, so the span of every word is known exactly. This is what
makes subword pooling correct: the target's vector is the mean over exactly its own pieces.
A sentence longer than `max_length` is cut to a window of whole words around a focus word (the
target occurrence being embedded), or to its first words when there is no focus (training).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass
class Encoded:
    ids: list[int]
    spans: dict[int, tuple[int, int]]  # word index in the sentence -> [start, end) piece positions
    first_word: int                    # first word of the sentence inside the window
    last_word: int                     # one past the last word inside the window


class WordPieceEncoder:
    def __init__(self, tokenizer, max_length: int = 128, time_token_ids: Sequence[int] | None = None):
        if max_length < 4:
            raise ValueError(f"max_length must be at least 4, got {max_length}")
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.cls_id = tokenizer.cls_token_id
        self.sep_id = tokenizer.sep_token_id
        self.pad_id = tokenizer.pad_token_id
        self.mask_id = tokenizer.mask_token_id
        self.time_token_ids = list(time_token_ids) if time_token_ids is not None else None
        self._pieces: dict[str, tuple[int, ...]] = {}

    def pieces(self, words: Sequence[str]) -> list[tuple[int, ...]]:
        missing = sorted({w for w in words if w not in self._pieces})
        if missing:
            encoded = self.tokenizer(missing, add_special_tokens=False)["input_ids"]
            self._pieces.update((w, tuple(ids)) for w, ids in zip(missing, encoded))
        return [self._pieces[w] for w in words]

    def encode(self, words: Sequence[str], period: int | None = None, focus: int | None = None) -> Encoded:
        """Ids of one sentence; `period` adds that period's time token after [CLS]."""
        pieces = self.pieces(words)
        prefix = [self.cls_id]
        if self.time_token_ids is not None:
            if period is None:
                raise ValueError("this encoder prepends time tokens: give the period")
            prefix.append(self.time_token_ids[period])
        budget = self.max_length - len(prefix) - 1
        lo, hi = _window([len(p) for p in pieces], budget, focus)
        ids, spans = list(prefix), {}
        for j in range(lo, hi):
            if pieces[j]:
                spans[j] = (len(ids), len(ids) + len(pieces[j]))
                ids.extend(pieces[j])
        ids.append(self.sep_id)
        return Encoded(ids, spans, lo, hi)


def _window(lengths: Sequence[int], budget: int, focus: int | None) -> tuple[int, int]:
    """Whole words [lo, hi) with at most `budget` pieces; around `focus` when one is given."""
    if sum(lengths) <= budget:
        return 0, len(lengths)
    if focus is None:
        total, hi = 0, 0
        while hi < len(lengths) and total + lengths[hi] <= budget:
            total += lengths[hi]
            hi += 1
        return 0, hi
    if lengths[focus] > budget:
        return focus, focus  # the word alone does not fit: nothing of it can be embedded
    lo, hi, total = focus, focus + 1, lengths[focus]
    grew = True
    while grew:  # alternate right and left, one word at a time
        grew = False
        if hi < len(lengths) and total + lengths[hi] <= budget:
            total += lengths[hi]
            hi += 1
            grew = True
        if lo > 0 and total + lengths[lo - 1] <= budget:
            lo -= 1
            total += lengths[lo]
            grew = True
    return lo, hi
