"""The language model's tokenizer, its output vocabulary, and each document's token ids.

Tokenizer: `minilm` (the uncased WordPiece of the offline all-MiniLM-L6-v2, 30,522 pieces), a
registered GGUF model's (`smollm2-135m`: SmolLM2's byte-level BPE, 49,152 pieces, read from the
.gguf file; tempoformer/causal_lms.py), or a Hugging Face tokenizer folder/name (a GPT-2 user
gives `gpt2`). Abstracts are tokenised without special tokens; the model input is BOS + pieces +
EOS (WordPiece: [CLS] and [SEP]; GPT-2 and SmolLM2: <|endoftext|> for both), and EOS is
predicted, so abstract ends are modelled (the authors mask EOS out of the loss).

A vocabulary with `<|endoftext|>` uses it as BOS and EOS: it is the document separator of
byte-level BPE pretraining (GPT-2's own BOS and EOS). SmolLM2-Instruct declares the chat-turn
markers <|im_start|> / <|im_end|> as BOS / EOS instead; an abstract is a document, not a chat
turn (on 12 ACL 2020 abstracts the 4-bit SmolLM2-135M-Instruct has perplexity 38.9 between
<|endoftext|> and 42.7 between the turn markers).

Output vocabulary (`restrict: true`, the small model trained here): the special tokens
(PAD, UNK, BOS, EOS), then every piece seen at least `min_count` times in the training years'
abstracts; any other piece becomes UNK (its rate is reported per split). With min_count 2 the
training years have UNK too, so UNK is not a token that only later years contain. With a
pretrained base model (`restrict: false`) the vocabulary is the tokenizer's, unchanged.

Words and content words. Words are WORD tokens of data.py (an approximation of NLTK's
word_tokenize); each piece belongs to the word its first character is in. A content word has
more than 4 characters and is not in the authors' stopword list (authors_stopwords.txt, 1,372
entries, Apache-2.0, authors_LICENSE.txt): decided per word, and all pieces of a content word
are content pieces. The authors decide per BPE piece (compute_perplexity.py:178-187): that
reading is kept as `content_piece` (a piece, without its "##"/"Ġ" marker, of more than 4
characters not in the list).
"""

from __future__ import annotations

import bisect
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..artefacts import read_json, read_parquet
from .data import WORD

STOPWORDS = Path(__file__).with_name("authors_stopwords.txt")
SPECIALS = ("pad", "unk", "bos", "eos")  # LM ids 0..3 in a restricted vocabulary


def load_stopwords(path: str | os.PathLike | None = None) -> frozenset[str]:
    """The stopword list: lines `rank<TAB>word<TAB>count` (the authors') or one word a line."""
    path = Path(path) if path else STOPWORDS
    out = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        word = parts[1] if len(parts) >= 3 else parts[0]
        if word.strip():
            out.add(word.strip().lower())
    return frozenset(out)


def is_content(word: str, stopwords: frozenset[str]) -> bool:
    return len(word) > 4 and word.lower() not in stopwords


@dataclass
class TokenizerInfo:
    name: str
    tokenizer: object            # tokenizers.Tokenizer, padding and truncation off
    bos: int
    eos: int
    unk: int
    pad: int

    def piece(self, tid: int) -> str:
        return self.tokenizer.id_to_token(int(tid))

    def decode(self, ids) -> str:
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=True)


DOCUMENT_SEPARATOR = "<|endoftext|>"


def tokenizer_path(name: str) -> str:
    """A folder, hub id or (a registered GGUF model) .gguf file."""
    from ..causal_lms import weights_path

    return weights_path(name)


def load_tokenizer(name: str = "minilm") -> TokenizerInfo:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    path = tokenizer_path(name)
    file = Path(path) / "tokenizer.json"
    if path.endswith(".gguf"):  # the tokenizer the GGUF metadata describes
        from transformers import AutoTokenizer

        from ..causal_lms import pretrained_source

        folder, kwargs = pretrained_source(path)
        auto = AutoTokenizer.from_pretrained(folder, local_files_only=True, **kwargs)
        tok = auto.backend_tokenizer
        special = {k: getattr(auto, f"{k}_token", None) for k in ("bos", "eos", "unk", "pad", "cls", "sep")}
    elif file.is_file():
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(file))
        config = json.loads((Path(path) / "tokenizer_config.json").read_text()) \
            if (Path(path) / "tokenizer_config.json").is_file() else {}
        special = {k: config.get(f"{k}_token") for k in ("bos", "eos", "unk", "pad", "cls", "sep")}
    else:  # a hub name or a folder without tokenizer.json
        from transformers import AutoTokenizer

        auto = AutoTokenizer.from_pretrained(path, local_files_only=True)
        tok = auto.backend_tokenizer
        special = {k: getattr(auto, f"{k}_token", None) for k in ("bos", "eos", "unk", "pad", "cls", "sep")}
    tok.no_padding()
    tok.no_truncation()

    def tid(*names):
        for n in names:
            token = special.get(n)
            if isinstance(token, dict):
                token = token.get("content")
            if token is not None and tok.token_to_id(token) is not None:
                return tok.token_to_id(token)
        return None

    bos, eos = tid("bos", "cls"), tid("eos", "sep")
    if tok.token_to_id(DOCUMENT_SEPARATOR) is not None:  # a byte-level BPE LM's document boundary
        bos = eos = tok.token_to_id(DOCUMENT_SEPARATOR)
    if bos is None or eos is None:
        raise ValueError(f"tokenizer {name}: no BOS/EOS (or CLS/SEP) token")
    unk = tid("unk")
    pad = tid("pad")
    return TokenizerInfo(name, tok, bos, eos, eos if unk is None else unk, eos if pad is None else pad)


@dataclass
class Vocab:
    """LM ids <-> tokenizer ids. `to_tokenizer[lm_id]` is a tokenizer id."""
    to_tokenizer: list[int]
    restrict: bool
    pad: int
    unk: int
    bos: int
    eos: int

    def __post_init__(self):
        self._from = {t: i for i, t in enumerate(self.to_tokenizer)}

    def __len__(self):
        return len(self.to_tokenizer)

    def encode(self, tokenizer_ids) -> list[int]:
        return [self._from.get(int(t), self.unk) for t in tokenizer_ids]

    def decode_ids(self, lm_ids) -> list[int]:
        return [self.to_tokenizer[int(i)] for i in lm_ids]

    def to_json(self) -> dict:
        return {"to_tokenizer": self.to_tokenizer, "restrict": self.restrict,
                **{k: getattr(self, k) for k in SPECIALS}}

    @classmethod
    def from_json(cls, d: dict) -> "Vocab":
        return cls(list(d["to_tokenizer"]), bool(d["restrict"]), *(int(d[k]) for k in SPECIALS))


def build_vocab(info: TokenizerInfo, train_ids: list[list[int]], restrict: bool = True, min_count: int = 1) -> Vocab:
    if not restrict:
        n = info.tokenizer.get_vocab_size()
        return Vocab(list(range(n)), False, info.pad, info.unk, info.bos, info.eos)
    specials = [info.pad, info.unk, info.bos, info.eos]
    counts: dict[int, int] = {}
    for ids in train_ids:
        for t in ids:
            counts[t] = counts.get(t, 0) + 1
    seen = sorted(t for t, c in counts.items() if c >= min_count and t not in specials)
    return Vocab(specials + seen, True, 0, 1, 2, 3)


@dataclass
class Encoded:
    tokenizer_ids: list[int]
    piece_word: list[int]          # word index of each piece
    content: list[bool]            # the piece belongs to a content word
    content_piece: list[bool]      # the authors' per-piece rule
    n_words: int
    n_content_words: int


def encode_text(text: str, info: TokenizerInfo, stopwords: frozenset[str]) -> Encoded:
    enc = info.tokenizer.encode(text, add_special_tokens=False)
    spans = [(m.start(), m.end()) for m in WORD.finditer(text)]
    starts = [s for s, _ in spans]
    content_word = [is_content(text[s:e], stopwords) for s, e in spans]
    piece_word, content, content_piece = [], [], []
    for tid, (start, end) in zip(enc.ids, enc.offsets):
        w = bisect.bisect_right(starts, start) - 1
        if w < 0 or start >= spans[w][1]:
            w = -1  # no word (cannot happen with WORD, which covers every non-space character)
        piece_word.append(w)
        content.append(bool(w >= 0 and content_word[w]))
        piece = info.piece(tid).lstrip("#").lstrip("Ġ")
        content_piece.append(is_content(piece, stopwords))
    covered = {w for w in piece_word if w >= 0}
    return Encoded(list(enc.ids), piece_word, content, content_piece, len(spans),
                   sum(1 for w in covered if content_word[w]))


def tokenize_corpus(corpus, info: TokenizerInfo, stopwords: frozenset[str], restrict: bool = True,
                    min_count: int = 1):
    """(tokens frame, vocab, summary) for a corpus frame (data.write_corpus)."""
    import polars as pl

    encoded = [encode_text(t, info, stopwords) for t in corpus["text"].to_list()]
    splits = corpus["split"].to_list()
    vocab = build_vocab(info, [e.tokenizer_ids for e, s in zip(encoded, splits) if s == "train"], restrict,
                        min_count)
    ids = [vocab.encode(e.tokenizer_ids) for e in encoded]
    frame = pl.DataFrame({
        "doc_id": corpus["doc_id"], "year": corpus["year"], "split": corpus["split"],
        "ids": ids, "piece_word": [e.piece_word for e in encoded], "content": [e.content for e in encoded],
        "content_piece": [e.content_piece for e in encoded],
        "n_words": [e.n_words for e in encoded], "n_ws_words": [len(t.split()) for t in corpus["text"].to_list()],
        "n_content_words": [e.n_content_words for e in encoded],
    }, schema={"doc_id": pl.String, "year": pl.Int64, "split": pl.String, "ids": pl.List(pl.Int32),
               "piece_word": pl.List(pl.Int32), "content": pl.List(pl.Boolean),
               "content_piece": pl.List(pl.Boolean), "n_words": pl.Int64, "n_ws_words": pl.Int64,
               "n_content_words": pl.Int64})
    summary = {}
    for split in sorted(set(splits)):
        flat = np.concatenate([np.asarray(i, dtype=np.int64) for i, s in zip(ids, splits) if s == split] or
                              [np.zeros(0, dtype=np.int64)])
        summary[split] = {"pieces": int(flat.size), "unk_rate": float((flat == vocab.unk).mean()) if flat.size else 0.0}
    return frame, vocab, summary


def read_tokens(path: str | os.PathLike):
    import polars as pl

    return read_parquet(path)


def read_vocab(path: str | os.PathLike) -> Vocab:
    return Vocab.from_json(read_json(path)["vocab"])
