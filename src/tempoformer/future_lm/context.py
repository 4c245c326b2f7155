"""Per-year mean contextual embeddings V_iw (Eq. 7) from a frozen encoder, computed once.

    V_iw = sum over the occurrences k of w in the year's abstracts of E_ijk / their number.

E_ijk is the encoder's last hidden state (`layer`, default -1) for the piece, with the abstract
read as [CLS] pieces [SEP] in chunks of at most `max_length` tokens (no chunk crosses two
abstracts). The encoder is the frozen offline all-MiniLM-L6-v2, in the language model's own
WordPiece vocabulary, so no string mapping is needed (the authors map RoBERTa's BPE pieces to
GPT-2's by string and fine-tune one RoBERTa per year for 300 epochs; we do not fine-tune). The
encoder must use the language model's tokenizer: a different one stops with an error.

Unseen words: an entry w with no occurrence in year i gets the zero vector and `present = 0`
(the models read the flag as an extra input), not an embedding from another space (the authors
fall back to RoBERTa's static input embedding, generate_year_vocab_representation.py:85-94).
Pieces outside the restricted vocabulary are pooled into UNK's row. `cap_per_year` abstracts of
a year at most (a seeded sample: a CPU budget); the counts are stored with the vectors.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from ..artefacts import load_npz

log = logging.getLogger(__name__)


def load_encoder(name: str, device: str = "cpu"):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from ..causal_lms import pretrained_source

    hf_logging.disable_progress_bar()
    folder, extra = pretrained_source(name)  # a registered GGUF model opens as (folder, gguf_file)
    model = AutoModel.from_pretrained(folder, local_files_only=True, **extra)
    return model.eval().to(device)


def mean_embeddings(encoder, docs_tokenizer_ids, vocab, bos: int, eos: int, max_length: int = 256,
                    batch_size: int = 16, layer: int = -1, device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """(sum / count as float32 [V, D], counts [V]) over documents given as tokenizer ids."""
    import torch

    chunks = []
    step = max_length - 2
    for ids in docs_tokenizer_ids:
        for start in range(0, len(ids), step):
            chunks.append([bos, *ids[start:start + step], eos])
    dim = encoder.config.hidden_size
    sums = torch.zeros(len(vocab), dim, dtype=torch.float64)
    counts = torch.zeros(len(vocab), dtype=torch.int64)
    order = sorted(range(len(chunks)), key=lambda i: len(chunks[i]))
    with torch.inference_mode():
        for b in range(0, len(order), batch_size):
            batch = [chunks[i] for i in order[b:b + batch_size]]
            width = max(len(c) for c in batch)
            ids = torch.zeros(len(batch), width, dtype=torch.long)
            mask = torch.zeros(len(batch), width, dtype=torch.long)
            for i, c in enumerate(batch):
                ids[i, :len(c)] = torch.tensor(c)
                mask[i, :len(c)] = 1
            out = encoder(input_ids=ids.to(device), attention_mask=mask.to(device), output_hidden_states=layer != -1)
            hidden = (out.last_hidden_state if layer == -1 else out.hidden_states[layer]).float().cpu()
            for i, c in enumerate(batch):
                inner = torch.tensor(vocab.encode(c[1:-1]), dtype=torch.long)
                sums.index_add_(0, inner, hidden[i, 1:len(c) - 1].double())
                counts.index_add_(0, inner, torch.ones_like(inner))
    means = (sums / counts.clamp(min=1).unsqueeze(1).double()).float()
    return means.numpy(), counts.numpy()


def compute_context(corpus, vocab, tokenizer_name: str, encoder_name: str, years, cap_per_year: int | None = None,
                    seed: int = 0, max_length: int = 256, batch_size: int = 16, layer: int = -1,
                    device: str = "cpu") -> dict:
    """{years, vectors [Y, V, D] float16, counts [Y, V], docs [Y]} for the given years."""
    from .tokens import load_tokenizer

    if encoder_name != tokenizer_name:
        raise ValueError(f"context encoder {encoder_name!r} does not use the language model's tokenizer "
                         f"{tokenizer_name!r}: V_iw must be in the LM's vocabulary")
    info = load_tokenizer(tokenizer_name)
    encoder = load_encoder(encoder_name, device)
    vectors, counts, docs = [], [], []
    for year in years:
        texts = corpus.filter(corpus["year"] == year)["text"].to_list()
        if cap_per_year is not None and len(texts) > cap_per_year:
            rng = np.random.default_rng([seed, int(year)])
            texts = [texts[i] for i in sorted(rng.choice(len(texts), size=cap_per_year, replace=False))]
        ids = [info.tokenizer.encode(t, add_special_tokens=False).ids for t in texts]
        mean, count = mean_embeddings(encoder, ids, vocab, info.bos, info.eos, max_length, batch_size, layer, device)
        vectors.append(mean.astype(np.float16))
        counts.append(count)
        docs.append(len(texts))
        log.info("V_iw %d: %d abstracts, %d pieces, %d entries seen", year, len(texts), int(count.sum()),
                 int((count > 0).sum()))
    return {"years": np.asarray(list(years), dtype=np.int64), "vectors": np.stack(vectors),
            "counts": np.stack(counts).astype(np.int64), "docs": np.asarray(docs, dtype=np.int64)}


def write_context(ctx: dict, path: str | os.PathLike) -> Path:
    from ..atomic import write_with

    return write_with(path, lambda tmp: np.savez(tmp, **ctx), suffix=".npz")


def read_context(path: str | os.PathLike) -> dict:
    return load_npz(path)
