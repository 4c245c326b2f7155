"""TempoFormer training-step benchmark: the authors' naive path against the fast path.

Each measured step is one optimiser step as training runs it: collate a batch of 8 consecutive
post rows ("chunk" batching of `training.batches`), forward, focal loss, backward, AdamW step.
The model is all-MiniLM-L6-v2 (6 layers, hidden 384: 4 local layers + 2 TempoFormer layers), trained on real posts: the Topic Shift MI utterances when
/work/shared/data/topic_shift_mi exists, else the chitchat corpus.

  naive  the authors' computation: every post padded/truncated to a fixed --max-tokens (64) and
         every window slot re-encoded through all layers (`TempoFormer.forward_naive`);
  fast   `collate_windows` (each distinct post of the batch once, padded to the batch's longest,
         truncated to the same --max-tokens) + `TempoFormer.forward`.

Every (path, window) configuration runs in a fresh subprocess, so its peak resident memory
(`resource.getrusage(RUSAGE_SELF).ru_maxrss`, which sees torch's CPU allocations) is its own.
Both paths see the same batches in the same order, same seed, torch.set_num_threads(2).

    HF_HUB_OFFLINE=1 python bench/tempoformer.py            # windows 5 and 20, ~4 min on 2 cores
    HF_HUB_OFFLINE=1 python bench/tempoformer.py --steps 3 --warmup 1 --windows 5
    HF_HUB_OFFLINE=1 python bench/tempoformer.py --profile 20   # + torch.profiler op table, fast path
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

# this file is bench/tempoformer.py: keep its directory off sys.path so `import tempoformer` finds the package
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

TOPIC_SHIFT_MI = Path("/work/shared/data/topic_shift_mi")
BATCH_SIZE = 8


def rss_mb() -> float:
    """Current resident set size (MB), from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def load_posts(max_timelines: int):
    from tempoformer.ingest import ingest

    if TOPIC_SHIFT_MI.is_dir():
        return "topic_shift_mi", ingest("topic_shift_mi", TOPIC_SHIFT_MI)
    return "chitchat", ingest("chitchat", None, max_timelines=max_timelines, min_posts_per_timeline=20)


def worker(args) -> dict:
    """One configuration: returns per-step timings, batch shapes and memory."""
    import numpy as np
    import polars as pl
    import torch

    from tempoformer.embed import backbone_path
    from tempoformer.losses import focal_alpha, focal_loss
    from tempoformer.models.tempoformer import TempoFormer, TempoFormerConfig, collate_windows
    from tempoformer.train import time_feature
    from tempoformer.training import TrainSettings, batches
    from tempoformer.windows import build_windows, window_arrays
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    w, naive, T = args.window, args.path == "naive", args.max_tokens

    source, posts = load_posts(args.max_timelines)
    labels = sorted(posts["label"].unique().to_list())
    y = posts["label"].replace_strict({l: i for i, l in enumerate(labels)}, return_dtype=pl.Int64).to_numpy()
    streams = build_windows(posts, w)
    path = backbone_path("minilm")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    token_ids = tokenizer(posts["text"].to_list(), truncation=True, max_length=T)["input_ids"]
    pad_id = tokenizer.pad_token_id

    # the batches training would draw: consecutive rows in chunks of 8, chunks shuffled
    settings = TrainSettings(lr=2e-5, epochs=1, batch_size=BATCH_SIZE, batching="chunk", optimizer="adamw")
    n_steps = args.warmup + args.steps
    chunks = batches(np.arange(posts.height), settings, np.random.default_rng(args.seed))[:n_steps]

    def make_batch(rows):
        window_rows, valid, log_gap = window_arrays(streams, rows)
        batch = collate_windows(token_ids, window_rows, valid, time_feature(window_rows, valid, log_gap), pad_id)
        if naive:  # the authors' fixed-length padding
            ids, mask = batch["input_ids"], batch["attention_mask"]
            batch["input_ids"] = torch.full((ids.shape[0], T), pad_id, dtype=ids.dtype)
            batch["attention_mask"] = torch.zeros((ids.shape[0], T), dtype=mask.dtype)
            batch["input_ids"][:, : ids.shape[1]] = ids
            batch["attention_mask"][:, : ids.shape[1]] = mask
        return batch

    model = TempoFormer(TempoFormerConfig(backbone=path, num_labels=len(labels), window=w))
    model.train()
    forward = model.forward_naive if naive else model.forward
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=settings.lr, weight_decay=0.01)
    alpha = focal_alpha(y, len(labels))
    target = torch.as_tensor(y)

    def step(rows):
        t0 = time.perf_counter()
        batch = make_batch(rows)
        t1 = time.perf_counter()
        loss = focal_loss(forward(**batch), target[rows], alpha)
        t2 = time.perf_counter()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        return batch, (t3 - t0, t1 - t0, t2 - t1, t3 - t2)

    setup_peak, setup_rss = max_rss_mb(), rss_mb()
    times, shapes = [], []
    for i, rows in enumerate(chunks):
        batch, t = step(rows)
        P, L = batch["input_ids"].shape
        shapes.append((P, L, int(batch["window_mask"].sum())))
        if i >= args.warmup:
            times.append(t)
    peak = max_rss_mb()

    out = {
        "source": source, "posts": posts.height, "path": args.path, "window": w, "max_tokens": T,
        "threads": torch.get_num_threads(), "torch": torch.__version__,
        "step_s": [t[0] for t in times], "collate_s": [t[1] for t in times],
        "forward_s": [t[2] for t in times], "backward_step_s": [t[3] for t in times],
        "shapes": shapes, "setup_peak_mb": setup_peak, "setup_rss_mb": setup_rss, "peak_mb": peak,
    }

    if args.check and naive:
        # same logits from both paths in eval mode (no dropout), on the first batch
        model.eval()
        with torch.no_grad():
            b = make_batch(chunks[0])
            fast_batch = collate_windows(token_ids, *window_arrays(streams, chunks[0])[:2],
                                         time_feature(*window_arrays(streams, chunks[0])), pad_id)
            out["check_max_abs_diff"] = float((model.forward_naive(**b) - model.forward(**fast_batch)).abs().max())

    if args.profile and not naive:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for rows in chunks[args.warmup: args.warmup + 2]:
                step(rows)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25), file=sys.stderr)
        print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=15),
              file=sys.stderr)
    return out


def run_config(args, path: str, window: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", "--path", path, "--window", str(window),
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--seed", str(args.seed),
           "--threads", str(args.threads), "--max-tokens", str(args.max_tokens),
           "--max-timelines", str(args.max_timelines)]
    if args.check:
        cmd.append("--check")
    if args.profile == window:
        cmd += ["--profile", str(window)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, env=env, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--windows", type=int, nargs="+", default=[5, 20])
    ap.add_argument("--steps", type=int, default=5, help="measured steps per configuration")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=64, help="truncation of both paths; naive pads to it")
    ap.add_argument("--max-timelines", type=int, default=50, help="chitchat fallback only")
    ap.add_argument("--check", action="store_true", help="compare naive and fast logits (eval mode)")
    ap.add_argument("--profile", type=int, default=0, metavar="W", help="torch.profiler table of the fast path at window W (stderr)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--path", choices=["naive", "fast"], help=argparse.SUPPRESS)
    ap.add_argument("--window", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return

    started = time.perf_counter()
    results = {(p, w): run_config(args, p, w) for w in args.windows for p in ("naive", "fast")}
    first = next(iter(results.values()))
    print(f"TempoFormer training step (fwd + focal loss + bwd + AdamW), MiniLM-L6 (4 local + 2 TempoFormer "
          f"layers), batch {BATCH_SIZE} consecutive posts (chunk batching), {first['source']} "
          f"({first['posts']} posts), torch {first['torch']}, {first['threads']} threads, seed {args.seed}")
    print(f"max tokens per post: {args.max_tokens} for both paths (naive pads every post to "
          f"{args.max_tokens}; fast pads to the batch's longest); median over {args.steps} steps after "
          f"{args.warmup} warm-up")
    print("peak memory: ru_maxrss of a fresh subprocess per configuration (includes model, data, "
          "tokenizer); 'train' = ru_maxrss at the end minus ru_maxrss before the first step")
    print()
    head = (f"{'window':>6} {'path':>5} {'s/step':>7} {'fwd s':>6} {'bwd+opt':>7} {'posts×tok':>11} "
            f"{'peak MB':>8} {'train MB':>8} {'naive/fast':>10}")
    print(head)
    print("-" * len(head))
    for w in args.windows:
        med = {p: statistics.median(results[p, w]["step_s"]) for p in ("naive", "fast")}
        for p in ("naive", "fast"):
            r = results[p, w]
            P = statistics.mean(s[0] for s in r["shapes"][args.warmup:])
            L = statistics.mean(s[1] for s in r["shapes"][args.warmup:])
            ratio = f"{med['naive'] / med['fast']:.2f}x" if p == "fast" else ""
            print(f"{w:>6} {p:>5} {med[p]:>7.3f} {statistics.median(r['forward_s']):>6.3f} "
                  f"{statistics.median(r['backward_step_s']):>7.3f} {P:>5.1f}×{L:<5.1f} "
                  f"{r['peak_mb']:>8.0f} {r['peak_mb'] - r['setup_peak_mb']:>8.0f} {ratio:>10}")
    print()
    for w in args.windows:
        r = results["fast", w]
        real = statistics.mean(s[2] for s in r["shapes"][args.warmup:])
        print(f"window {w}: naive encodes {BATCH_SIZE * w} rows × {args.max_tokens} tokens in all 6 layers; fast "
              f"encodes the distinct posts in 4 local layers and {real:.1f} real window slots in the 2 TempoFormer layers")
        if "check_max_abs_diff" in results["naive", w]:
            print(f"window {w}: max |logits naive - fast| (eval, first batch) = "
                  f"{results['naive', w]['check_max_abs_diff']:.2e}")
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
