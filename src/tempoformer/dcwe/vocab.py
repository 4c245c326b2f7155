"""The words that get a dynamic embedding (paper footnote 12; the authors' data_helpers.py:40-52).

Whitespace words are counted per time unit in the training documents and turned into relative
frequencies; a word's score is the sum of its per-time relative frequencies. Of the `top_k`
(100,000) best-scored words, those kept are alphabetic, not an NLTK English stopword, a whole
entry of the WordPiece vocabulary (not a `##` piece), with id >= `min_id` (2100: below it
bert-base-uncased has [PAD], [unused*], [CLS]/[SEP]/[MASK], single characters and its 104 most
frequent words). Every other token id gets offset 0. A word split into pieces gets no dynamic
embedding of its own; a piece that is itself a listed word does, wherever it occurs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable

# NLTK's English stopword list (nltk.corpus.stopwords.words('english'), 179 words), as the
# authors use it; written out so that NLTK is not a dependency.
STOPWORDS = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves
he him his himself she she's her hers herself it it's its itself they them their theirs themselves
what which who whom this that that'll these those am is are was were be been being have has had
having do does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off over
under again further then once here there when where why how all any both each few more most other
some such no nor not only own same so than too very s t can will just don don't should should've
now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn
hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn
shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
""".split())


def word_scores(texts: Iterable[str], times: Iterable[int]) -> dict[str, float]:
    """Sum over time units of each whitespace word's relative frequency in that unit."""
    counts: dict[int, Counter] = defaultdict(Counter)
    for text, time in zip(texts, times):
        counts[time].update(text.strip().split())
    scores: dict[str, float] = defaultdict(float)
    for counter in counts.values():
        total = sum(counter.values())
        for word, n in counter.items():
            scores[word] += n / total
    return dict(scores)


def dynamic_token_ids(texts: Iterable[str], times: Iterable[int], vocab: dict[str, int],
                      top_k: int = 100_000, min_id: int = 2100) -> list[int]:
    """Sorted ids of the tokens with a dynamic embedding. `vocab`: the tokenizer's word -> id."""
    scores = word_scores(texts, times)
    top = sorted(scores, key=lambda w: (-scores[w], w))[:top_k]
    return sorted({vocab[w] for w in top
                   if w.isalpha() and w not in STOPWORDS and w in vocab and vocab[w] >= min_id})
