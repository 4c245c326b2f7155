"""How many word pieces the posts have under each backbone's tokenizer: does `max_tokens` cut any?

Issue 68 lists max tokens (ours 128, the paper's 512) among the possible causes of TempoFormer's
gap. A batch is padded to its own longest post, so when no post is longer than `max_tokens`
the setting changes no token a model reads, and runs at 128 and 512 are the same computation.

    .venv/bin/python scripts/token_lengths.py results/lrs/posts.parquet results/topic_shift_mi/posts.parquet

Prints, per posts file and backbone (every registered backbone that is set up here), the number
of posts, the median, 95th percentile and longest length ([CLS] and [SEP] included), and how
many posts and word pieces a cut at 128 and at 512 would drop.
"""
from __future__ import annotations

import argparse

import numpy as np
import polars as pl
from transformers import AutoTokenizer

from tempoformer.backbones import BACKBONES, BackboneMissing, backbone_path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("posts", nargs="+")
    a = p.parse_args()
    print("| posts | backbone | posts | median | p95 | longest | posts > 128 | pieces cut at 128 | posts > 512 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for posts in a.posts:
        texts = pl.read_parquet(posts, columns=["text"])["text"].to_list()
        for name in BACKBONES:
            try:
                path = backbone_path(name)
            except BackboneMissing:
                continue
            n = np.array([len(ids) for ids in AutoTokenizer.from_pretrained(path)(texts)["input_ids"]])
            cut = np.clip(n - 128, 0, None).sum()
            print(f"| {posts} | {name} | {len(n)} | {np.median(n):.0f} | {np.percentile(n, 95):.0f} | {n.max()} | "
                  f"{(n > 128).sum()} | {cut} of {n.sum()} | {(n > 512).sum()} |")


if __name__ == "__main__":
    main()
