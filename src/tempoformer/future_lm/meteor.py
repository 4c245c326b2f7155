"""METEOR (Banerjee & Lavie 2005) as NLTK's `single_meteor_score` computes it, with exact and
stem matching only.

Stems are NLTK's Porter stemmer (`nltk.stem.porter.PorterStemmer()`, NLTK's default mode: the
stemmer `nltk.translate.meteor_score` uses). WordNet data is not reachable offline, so the
synonym stage is absent: the score equals NLTK's `meteor_score` given a WordNet that knows no
synonyms (tests/test_future_lm_models.py checks both on a hand example and on random pairs), so
scores are comparable across our models, not with METEOR values computed with WordNet.

Alignment as NLTK's: words lower-cased, exact matches first, then stem matches among the words
left; within a stage, hypothesis words are taken from the last to the first, each matched with
the last unmatched reference word equal to it. With m matches, P = m / |hyp|, R = m / |ref|:

    Fmean = P R / (α P + (1 - α) R),  penalty = γ (chunks / m)^β,  score = Fmean (1 - penalty)

(α 0.9, β 3, γ 0.5, NLTK's defaults); chunks are runs of matches adjacent in both sentences
when the matches are ordered by hypothesis position. Ours rather than NLTK's own function for
speed: content METEOR scores every generation against every test abstract, so each reference's
stems are computed once (Matcher) and stems are cached.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache

from nltk.stem.porter import PorterStemmer

_PORTER = PorterStemmer()


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """NLTK's Porter stem of a word (lower-cased, as NLTK's stemmer does)."""
    return _PORTER.stem(word)


class Matcher:
    """A reference sentence prepared once (positions of each word and of each stem)."""

    def __init__(self, words: list[str]):
        self.words = [w.lower() for w in words]
        self.stems = [stem(w) for w in self.words]


def _stage(hyp_items, ref_items):
    """Match (pos, key) items: hypothesis from the last, each to the last unmatched equal ref."""
    ref_positions = defaultdict(list)
    for pos, key in ref_items:
        ref_positions[key].append(pos)
    matches, hyp_left, used = [], [], set()
    for pos, key in reversed(hyp_items):
        candidates = ref_positions.get(key)
        if candidates:
            ref_pos = candidates.pop()
            matches.append((pos, ref_pos))
            used.add(ref_pos)
        else:
            hyp_left.append((pos, key))
    hyp_left.reverse()
    return matches, hyp_left, [(p, k) for p, k in ref_items if p not in used]


def align(hyp: list[str], ref: Matcher | list[str]):
    ref = ref if isinstance(ref, Matcher) else Matcher(ref)
    hyp = [w.lower() for w in hyp]
    exact, hyp_left, ref_left = _stage(list(enumerate(hyp)), list(enumerate(ref.words)))
    stems = [stem(w) for w in hyp]
    stemmed, _, _ = _stage([(p, stems[p]) for p, _ in hyp_left], [(p, ref.stems[p]) for p, _ in ref_left])
    return sorted(exact + stemmed)


def count_chunks(matches) -> int:
    chunks, i = 1, 0
    while i < len(matches) - 1:
        if not (matches[i + 1][0] == matches[i][0] + 1 and matches[i + 1][1] == matches[i][1] + 1):
            chunks += 1
        i += 1
    return chunks


def meteor(hyp: list[str], ref: Matcher | list[str], alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5) -> float:
    ref = ref if isinstance(ref, Matcher) else Matcher(ref)
    if not hyp or not ref.words:
        return 0.0
    matches = align(hyp, ref)
    m = len(matches)
    if m == 0:
        return 0.0
    precision, recall = m / len(hyp), m / len(ref.words)
    fmean = precision * recall / (alpha * precision + (1 - alpha) * recall)
    penalty = gamma * (count_chunks(matches) / m) ** beta
    return fmean * (1 - penalty)
