"""TempoFormer training-step benchmark: the authors' naive path against the fast path.

One step = what training does per optimiser step: collate a batch of 8 consecutive post rows
("chunk" batching of `training.batches`, chunks shuffled), forward, focal loss, backward, and the
optimiser step training uses (`training.loop._optimizer`: fused AdamW). Model: all-MiniLM-L6-v2
(6 layers, hidden 384) = 4 local layers + 2 TempoFormer layers, on real posts: the Topic Shift MI
utterances when /work/shared/data/topic_shift_mi exists, else the chitchat corpus. Each
--post-pooling value (default: auto, i.e. mean for MiniLM) is measured in its own subprocesses.

  naive  the authors' computation: every post padded/truncated to a fixed --max-tokens (64) and
         every window slot re-encoded through all layers (`TempoFormer.forward_naive`);
  fast   `collate_windows` (each distinct post of the batch once, padded to the batch's longest,
         truncated to the same --max-tokens) + `TempoFormer.forward`.

Per window, two fresh subprocesses:
  mem    the naive path alone: its peak resident memory, resource.getrusage(RUSAGE_SELF).ru_maxrss
         (sees torch's CPU allocations, unlike tracemalloc), over its first 1 + --mem-steps steps
         (AdamW state exists from step 2), and the matmul FLOPs of step 1 (torch.utils.flop_counter,
         independent of machine load);
  time   first the fast path alone, measured the same way (its peak is below the naive path's, so
         ru_maxrss is still its own); then a naive model from the same seed joins, and the two paths
         alternate step by step over the same batches, so other jobs on a shared machine slow both
         alike; median wall-clock and process-CPU seconds per step after --warmup steps.
  --check (default on) compares naive and fast logits, and the gradients of the focal loss, with
         the same weights in eval mode (no dropout) on the first batch.

    HF_HUB_OFFLINE=1 python bench/tempoformer.py                 # windows 5 and 20, 3 steps: 4.7 min
                                                                 # measured on 2 cores busy with other jobs
    HF_HUB_OFFLINE=1 python bench/tempoformer.py --steps 5 --windows 20
    HF_HUB_OFFLINE=1 python bench/tempoformer.py --threads 1     # on a busy machine: 2 OpenMP threads
                                                                 # stall on every op (2.2 min here)
    HF_HUB_OFFLINE=1 python bench/tempoformer.py --profile 20    # + torch.profiler tables, fast path (stderr)
    HF_HUB_OFFLINE=1 python bench/tempoformer.py --windows 20 --post-pooling cls_pooler mean
    HF_HUB_OFFLINE=1 python bench/tempoformer.py --backbone mpnet --steps 2   # after scripts/setup_backbone.sh mpnet
    HF_HUB_OFFLINE=1 python bench/tempoformer.py --kernels default           # torch's own kernels (AVX-512 here)

Each timing process also measures the machine's fp32 GEMM rate (class Gemm) between the steps and
prints each path's share of it; --kernels portable (the default) runs both with the kernels the
workflow's jobs use. Figures: bench/README.md.
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

# this file is bench/tempoformer.py: keep its directory off sys.path so `import tempoformer` is the package
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

TOPIC_SHIFT_MI = Path("/work/shared/data/topic_shift_mi")
BATCH_SIZE = 8
PATHS = ("naive", "fast")

from tempoformer.backbones import BACKBONES  # noqa: E402 (torch-free; sys.path fixed above)
from tempoformer.fingerprint import KERNEL_SETTINGS  # noqa: E402


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


class Bench:
    """Data, batches and models of one window size."""

    def __init__(self, args):
        import numpy as np
        import polars as pl
        import torch
        from transformers import AutoTokenizer

        from tempoformer.backbones import backbone_path
        from tempoformer.data.ingest import ingest
        from tempoformer.training.losses import focal_alpha
        from tempoformer.training.loop import TrainSettings, batches
        from tempoformer.data.windows import build_windows

        torch.set_num_threads(args.threads)
        self.args, self.w, self.T = args, args.window, args.max_tokens
        if TOPIC_SHIFT_MI.is_dir():
            self.source, posts = "topic_shift_mi", ingest("topic_shift_mi", TOPIC_SHIFT_MI)
        else:
            self.source, posts = "chitchat", ingest(
                "chitchat", None, max_timelines=args.max_timelines, min_posts_per_timeline=20)
        self.n_posts = posts.height
        self.labels = sorted(posts["label"].unique().to_list())
        index = {label: i for i, label in enumerate(self.labels)}
        y = posts["label"].replace_strict(index, return_dtype=pl.Int64).to_numpy().copy()
        self.target = torch.from_numpy(y)
        self.alpha = focal_alpha(y, len(self.labels))
        self.streams = build_windows(posts, self.w)
        self.backbone = backbone_path(args.backbone)
        tokenizer = AutoTokenizer.from_pretrained(self.backbone, local_files_only=True)
        self.token_ids = tokenizer(posts["text"].to_list(), truncation=True, max_length=self.T)["input_ids"]
        self.pad_id = tokenizer.pad_token_id
        # the batches training draws: consecutive rows in chunks of 8, chunks shuffled
        self.settings = TrainSettings(lr=2e-5, epochs=1, batch_size=BATCH_SIZE, batching="chunk",
                                      optimizer="adamw")
        self.chunks = batches(np.arange(posts.height), self.settings, np.random.default_rng(args.seed))

    def make_batch(self, rows, naive: bool) -> dict:
        import torch

        from tempoformer.models.tempoformer import collate_windows
        from tempoformer.training.run import time_feature
        from tempoformer.data.windows import window_arrays

        window_rows, valid, log_gap = window_arrays(self.streams, rows)
        batch = collate_windows(self.token_ids, window_rows, valid,
                                time_feature(window_rows, valid, log_gap), self.pad_id)
        if naive:  # the authors' fixed-length padding of every post
            ids, mask = batch["input_ids"], batch["attention_mask"]
            batch["input_ids"] = torch.full((ids.shape[0], self.T), self.pad_id, dtype=ids.dtype)
            batch["attention_mask"] = torch.zeros((ids.shape[0], self.T), dtype=mask.dtype)
            batch["input_ids"][:, : ids.shape[1]] = ids
            batch["attention_mask"][:, : ids.shape[1]] = mask
        return batch

    def trainer(self, naive: bool):
        """A fresh model (seeded: every trainer starts from the same weights) and its step(rows)."""
        import torch

        from tempoformer.models.tempoformer import TempoFormer, TempoFormerConfig
        from tempoformer.training.loop import _optimizer
        from tempoformer.training.losses import focal_loss

        torch.manual_seed(self.args.seed)
        model = TempoFormer(TempoFormerConfig(backbone=self.backbone, num_labels=len(self.labels),
                                              window=self.w, post_pooling=self.args.post_pooling))
        model.train()
        forward = model.forward_naive if naive else model.forward
        optimizer = _optimizer(model, self.settings)  # exactly what training steps with

        def step(rows) -> dict:
            c0, t0 = time.process_time(), time.perf_counter()
            batch = self.make_batch(rows, naive)
            t1 = time.perf_counter()
            loss = focal_loss(forward(**batch), self.target[rows], self.alpha)
            t2 = time.perf_counter()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            t3 = time.perf_counter()
            return {"step_s": t3 - t0, "collate_s": t1 - t0, "forward_s": t2 - t1,
                    "backward_opt_s": t3 - t2, "cpu_s": time.process_time() - c0,
                    "posts": batch["window_index"].numel() if naive else batch["input_ids"].shape[0], "tokens": batch["input_ids"].shape[1],
                    "slots": int(batch["window_mask"].sum())}

        return model, step


def memory_and_flops(bench: Bench, naive: bool):
    """A fresh trainer of one path: the matmul FLOPs of its first step, then its peak RSS after
    --mem-steps more (the AdamW state exists from the second step on). Returns (trainer, result)."""
    from torch.utils.flop_counter import FlopCounterMode

    trainer = bench.trainer(naive)
    before = max_rss_mb()
    with FlopCounterMode(display=False) as counter:
        trainer[1](bench.chunks[0])
    for rows in bench.chunks[1: 1 + bench.args.mem_steps]:
        trainer[1](rows)
    return trainer, {"peak_mb": max_rss_mb(), "setup_mb": before, "gflop": counter.get_total_flops() / 1e9}


def worker_time(args) -> dict:
    """Fast-path memory first (its peak is below the naive path's, so ru_maxrss still shows it), then
    both paths in this process, alternating step by step over the same batches."""
    import torch

    load_start = os.getloadavg()[0]
    bench = Bench(args)
    trainers, memory = {}, {}
    trainers["fast"], memory["fast"] = memory_and_flops(bench, naive=False)  # also warms the fast path up
    trainers["naive"] = bench.trainer(naive=True)
    for rows in bench.chunks[: args.warmup]:
        trainers["naive"][1](rows)
    measured = bench.chunks[args.warmup: args.warmup + args.steps]
    tokens = statistics.median(bench.make_batch(rows, naive=False)["input_ids"].numel() for rows in measured)
    gemm = Gemm(bench.backbone, int(tokens))
    steps, gemm_rates = {p: [] for p in PATHS}, []
    for i, rows in enumerate(measured):
        for p in (PATHS if i % 2 == 0 else PATHS[::-1]):  # alternate which path goes first
            steps[p].append(trainers[p][1](rows))
        gemm_rates.append(gemm.gflop_s())
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:  # the measured batches again, untimed
        for rows in measured:
            trainers["fast"][1](rows)
    memory["fast"]["gflop"] = counter.get_total_flops() / 1e9 / len(measured)
    out = {"source": bench.source, "posts": bench.n_posts, "threads": torch.get_num_threads(),
           "torch": torch.__version__, "steps": steps, "memory": memory,
           "pooling": trainers["fast"][0].config.post_pooling,
           "gemm": {"gflop_s": statistics.median(gemm_rates), "shape": gemm.shape}}

    if args.check:  # same logits and gradients from both paths, same weights, eval mode (no dropout)
        from tempoformer.training.losses import focal_loss

        model = trainers["naive"][0]
        model.eval()
        rows = bench.chunks[0]
        logits, grads = {}, {}
        for p in PATHS:
            model.zero_grad(set_to_none=True)
            forward = model.forward_naive if p == "naive" else model.forward
            logits[p] = forward(**bench.make_batch(rows, p == "naive"))
            focal_loss(logits[p], bench.target[rows], bench.alpha).backward()
            grads[p] = {n: q.grad.clone() for n, q in model.named_parameters() if q.grad is not None}
        out["check_max_abs_diff"] = float((logits["naive"] - logits["fast"]).detach().abs().max())
        assert grads["naive"].keys() == grads["fast"].keys()
        # absolute, and relative to the largest gradient entry of the model (per tensor would divide
        # by the ~1e-10 float noise of the attention key biases, whose true gradient is 0)
        out["check_max_grad_abs_diff"] = max(float((grads["naive"][n] - grads["fast"][n]).abs().max())
                                             for n in grads["naive"])
        out["check_max_grad"] = max(float(g.abs().max()) for g in grads["naive"].values())

    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for rows in measured[:2]:
                trainers["fast"][1](rows)
        print(f"fast path, window {bench.w}, 2 steps:", file=sys.stderr)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20), file=sys.stderr)
        print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=15),
              file=sys.stderr)
    out["load"] = (load_start, os.getloadavg()[0])
    return out


class Gemm:
    """The machine's fp32 GEMM rate on this process's threads: the shape of the local layers'
    feed-forward up-projection on a batch's tokens, (posts*tokens x hidden) @ (hidden x
    intermediate), the largest GEMM of a step, repeated to about 6 GFLOP per timing after one
    untimed call. Timed between the steps of the two paths, so load on a shared machine slows all
    three alike."""

    def __init__(self, backbone: str, tokens: int):
        import torch
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(backbone, local_files_only=True)
        g = torch.Generator().manual_seed(0)
        self.shape = (tokens, config.hidden_size, config.intermediate_size)
        self.a = torch.randn(tokens, config.hidden_size, generator=g)
        self.b = torch.randn(config.hidden_size, config.intermediate_size, generator=g)
        self.flop = 2 * tokens * config.hidden_size * config.intermediate_size
        self.reps = max(3, round(6e9 / self.flop))

    def gflop_s(self) -> float:
        self.a @ self.b  # untimed: brings the operands back into cache after a step
        t0 = time.perf_counter()
        for _ in range(self.reps):
            self.a @ self.b
        return self.flop * self.reps / (time.perf_counter() - t0) / 1e9


def worker_mem(args) -> dict:
    """The naive path alone, for its peak memory and FLOPs."""
    return memory_and_flops(Bench(args), naive=True)[1]


def run(args, mode: str, window: int, pooling: str) -> dict:
    cmd = [sys.executable, __file__, "--worker", mode, "--window", str(window), "--post-pooling", pooling,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--mem-steps", str(args.mem_steps),
           "--seed", str(args.seed), "--threads", str(args.threads), "--max-tokens", str(args.max_tokens),
           "--max-timelines", str(args.max_timelines), "--backbone", args.backbone]
    if not args.check:
        cmd.append("--no-check")
    if mode == "time" and args.profile == window:
        cmd += ["--profile", str(window)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if args.kernels == "portable":  # what the workflow's jobs run with (portable_kernels: true)
        env.update(pair.split("=") for pair in KERNEL_SETTINGS.split())
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, env=env, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backbone", default="minilm", choices=sorted(BACKBONES),
                    help="a registered backbone (default minilm; mpnet once set up: scripts/setup_backbone.sh mpnet)")
    ap.add_argument("--kernels", choices=["portable", "default"], default="portable",
                    help="portable (default): the AVX2 kernels the workflow's jobs run with (portable_kernels: "
                         f"true, {KERNEL_SETTINGS}); default: torch's and MKL's own choice for this CPU")
    ap.add_argument("--windows", type=int, nargs="+", default=[5, 20])
    ap.add_argument("--steps", type=int, default=3, help="measured steps per path and window (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured steps per path first (default 1)")
    ap.add_argument("--mem-steps", type=int, default=1, help="steps after warm-up in the memory runs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--max-tokens", type=int, default=64, help="truncation of both paths; naive pads to it")
    ap.add_argument("--max-timelines", type=int, default=50, help="chitchat fallback only")
    ap.add_argument("--post-pooling", nargs="+", default=["auto"], choices=["auto", "cls_pooler", "mean"],
                    help="TempoFormerConfig.post_pooling values to measure (default auto: mean for MiniLM)")
    ap.add_argument("--no-check", dest="check", action="store_false",
                    help="skip comparing naive and fast logits (eval mode, first batch)")
    ap.add_argument("--profile", type=int, default=0, metavar="W",
                    help="print torch.profiler tables of the fast path at window W to stderr")
    ap.add_argument("--worker", choices=["time", "mem"], help=argparse.SUPPRESS)
    ap.add_argument("--window", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.post_pooling = args.post_pooling[0]
        print(json.dumps((worker_time if args.worker == "time" else worker_mem)(args)))
        return

    started, load0 = time.perf_counter(), os.getloadavg()[0]
    timing, memory = {}, {}
    runs = [(w, pooling) for w in args.windows for pooling in args.post_pooling]
    for w, pooling in runs:
        memory["naive", w, pooling] = run(args, "mem", w, pooling)
        timing[w, pooling] = run(args, "time", w, pooling)
        memory["fast", w, pooling] = timing[w, pooling]["memory"]["fast"]

    first, spec = timing[runs[0]], BACKBONES[args.backbone]
    print(f"TempoFormer training step (collate + forward + focal loss + backward + fused AdamW, as training), "
          f"{spec.model} ({spec.layers - 2} local + 2 TempoFormer layers, hidden {spec.hidden}, "
          f"{spec.parameters_m}M parameters), batch {BATCH_SIZE} consecutive posts (chunk "
          f"batching), {first['source']} ({first['posts']} posts), torch {first['torch']}, {first['threads']} "
          f"threads, seed {args.seed}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}, kernels "
          f"{args.kernels}" + (f" ({KERNEL_SETTINGS})" if args.kernels == "portable" else ""))
    print(f"max tokens per post: {args.max_tokens} for both paths (naive pads every post to {args.max_tokens}, "
          f"fast packs each post's real tokens)")
    print(f"s/step: median wall clock over {args.steps} steps after {args.warmup} warm-up, both paths "
          f"alternating in one process; fwd = forward + loss; bwd+opt = backward + optimiser step; "
          f"cpu = process CPU time (all threads)")
    print(f"peak MB: ru_maxrss of a fresh process over the path's first {1 + args.mem_steps} steps, before the "
          f"other path runs (model, data, tokenizer included); train MB = that minus ru_maxrss before step 1")
    print("GFLOP: matmuls of a step (forward + backward; torch.utils.flop_counter, CPU fused attention kernels "
          "not counted): fast = mean over the measured batches, naive = step 1 (its shapes are fixed); "
          "GFLOP/s = GFLOP / s/step")
    print("GEMM: the machine's fp32 GEMM rate in the timing process (torch.mm of the largest GEMM of a step, "
          "(posts*tokens x hidden) @ (hidden x intermediate), timed between the steps; median); "
          "share = the path's GFLOP/s / GEMM")
    print()
    head = (f"{'window':>6} {'pooling':>10} {'path':>5} {'s/step':>7} {'fwd':>6} {'bwd+opt':>7} {'cpu s':>6} "
            f"{'posts×tok':>11} {'slots':>5} {'GFLOP':>6} {'GFLOP/s':>7} {'peak MB':>7} {'train MB':>8} "
            f"{'naive/fast':>10} {'cpu':>6} {'flop':>6} {'GEMM':>6} {'share':>6}")
    print(head)
    print("-" * len(head))
    for w, pooling in runs:
        t = timing[w, pooling]
        med = {p: {k: statistics.median(s[k] for s in t["steps"][p])
                   for k in ("step_s", "forward_s", "backward_opt_s", "cpu_s")} for p in PATHS}
        for p in PATHS:
            steps, m, mem = t["steps"][p], med[p], memory[p, w, pooling]
            P = statistics.mean(s["posts"] for s in steps)
            L = statistics.mean(s["tokens"] for s in steps)
            slots = statistics.mean(s["slots"] for s in steps)
            ratios = ("", "", "")
            share = mem["gflop"] / m["step_s"] / t["gemm"]["gflop_s"]
            if p == "fast":
                ratios = (f"{med['naive']['step_s'] / m['step_s']:.2f}x",
                          f"{med['naive']['cpu_s'] / m['cpu_s']:.2f}x",
                          f"{memory['naive', w, pooling]['gflop'] / mem['gflop']:.2f}x")
            print(f"{w:>6} {t['pooling']:>10} {p:>5} {m['step_s']:>7.3f} {m['forward_s']:>6.3f} "
                  f"{m['backward_opt_s']:>7.3f} {m['cpu_s']:>6.2f} {P:>5.1f}×{L:<5.1f} {slots:>5.1f} "
                  f"{mem['gflop']:>6.1f} {mem['gflop'] / m['step_s']:>7.1f} {mem['peak_mb']:>7.0f} "
                  f"{mem['peak_mb'] - mem['setup_mb']:>8.0f} {ratios[0]:>10} {ratios[1]:>6} {ratios[2]:>6} "
                  f"{t['gemm']['gflop_s']:>6.1f} {share:>6.0%}")
    print()
    print("posts×tok: input_ids the local layers encode (naive: gathered per window slot, B*w rows); "
          "slots: real window slots (rows of the fast path's 2 TempoFormer layers); pooling: post_pooling "
          "as the model resolved it")
    for w, pooling in runs:
        t = timing[w, pooling]
        if "check_max_abs_diff" in t:
            print(f"window {w}, {t['pooling']}: max |logits naive - fast| = {t['check_max_abs_diff']:.2e}, "
                  f"max |grad naive - fast| = {t['check_max_grad_abs_diff']:.2e} (largest gradient entry "
                  f"{t['check_max_grad']:.2e}; focal loss, same weights, eval, first batch)")
        print(f"window {w}, {t['pooling']}: GEMM shape {' x '.join(map(str, t['gemm']['shape']))}")
        print(f"window {w}, {t['pooling']}: 1-min load average {t['load'][0]:.1f} when its timing process "
              f"started, {t['load'][1]:.1f} when it ended")
    print(f"total {time.perf_counter() - started:.0f} s; 1-min load average {load0:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at end, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
