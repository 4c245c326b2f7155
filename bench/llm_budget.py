"""CPU cost of Table 2's LLM rows (few-shot prompting, tempoformer.llm) with one causal LM:
tokens per prompt and seconds per post, and the whole rows' time from them.

    python bench/llm_budget.py [--model smollm2-135m] [--datasets lrs,topic_shift_mi]
        [--variants u5,u10,s5,s10] [--shots-per label] [--style mistral] [--timed lrs:u5,lrs:s5]
        [--posts 8] [--fold 0] [--seed 0]

Reads results/<dataset>/posts.parquet and folds.parquet (the ingest and folds jobs). For each
dataset and variant (u: post level, window 1; s: stream level, window 5, the paper's; the number
is the shots, per label or in all as --shots-per says), the prompts of every test post of the
fold are built as llm_predict builds them and tokenised: mean and largest prompt length. The
variants in --timed are generated for --posts test posts (greedy, max_new_tokens and batch size
of llm/predict.py's defaults, one torch thread): CPU seconds per post (time.process_time; wall
seconds beside, larger on a busy machine). Every variant is then projected from its mean prompt
length t: seconds per post = b t + c t^2 (prefill dominates, attention grows with t^2; 8 new
tokens), b and c fitted to the timed variants (one timed variant: c = 0), times the dataset's
posts (each post is a test post in exactly one fold, so one seed labels every post once). Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from tempoformer.data.windows import build_windows, window_arrays  # noqa: E402
from tempoformer.llm.bucketing import bucket_answers  # noqa: E402
from tempoformer.llm.generate import generate_answers, load_causal_lm, render  # noqa: E402
from tempoformer.llm.predict import DEFAULTS, ExampleMaker  # noqa: E402
from tempoformer.llm.prompts import build_prompt, resolve_task, sample_shots  # noqa: E402
from tempoformer.training.run import load_run_data  # noqa: E402

LABELS = {"lrs": ["Sw", "N-Sw"], "topic_shift_mi": ["M", "R"]}
STREAM_WINDOW = 5  # the paper's "recent history of window 5"


def prompts_for(data, level: str, shots: int, shots_per: str, style: str, seed: int, rows: np.ndarray):
    """As llm_predict: seeded shots from the fold's training posts, one prompt per row."""
    labels = list(data.labels)
    task = resolve_task("auto", labels)
    train = np.asarray(data.rows["train"])
    make = ExampleMaker(data, level, DEFAULTS["times"], DEFAULTS["max_post_chars"])
    prefer = window_arrays(data.streams, train)[1].all(axis=1) if level == "stream" else None
    shot_rows = sample_shots(data.y, train, len(labels), shots, seed, shots_per, prefer)
    examples = make(shot_rows, [labels[c] for c in data.y[shot_rows]])
    times = DEFAULTS["times"] if make.has_times(np.concatenate([shot_rows, rows])) else "none"
    return [build_prompt(task, level, style, examples, q, times) for q in make(rows)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--datasets", default="lrs,topic_shift_mi")
    ap.add_argument("--variants", default="u5,u10,s5,s10")
    ap.add_argument("--shots-per", default="label", choices=("label", "total"))
    ap.add_argument("--style", default="mistral", choices=("mistral", "llama2"))
    ap.add_argument("--timed", default="lrs:u5,lrs:s5", help="dataset:variant pairs to generate (comma-separated)")
    ap.add_argument("--posts", type=int, default=8, help="test posts generated per timed variant")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--results", default=str(REPO / "results"))
    a = ap.parse_args(argv)
    torch.set_num_threads(1)

    c0, w0 = time.process_time(), time.perf_counter()
    model, tokenizer = load_causal_lm(a.model, "cpu", DEFAULTS["dtype"])
    print(f"model {a.model}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, loaded in "
          f"{time.process_time() - c0:.1f} cpu s ({time.perf_counter() - w0:.1f} wall); style {a.style}, "
          f"shots per {a.shots_per}, max_new_tokens {DEFAULTS['max_new_tokens']}, batch {DEFAULTS['batch_size']}; "
          f"load average {os.getloadavg()[0]:.1f}")

    timed = {tuple(x.split(":")) for x in a.timed.split(",") if x}
    rows_out, timings = [], []
    for name in a.datasets.split(","):
        res = Path(a.results) / name
        data = load_run_data(res / "posts.parquet", res / "folds.parquet", a.fold, LABELS[name])
        n_posts = data.posts.height
        windows = build_windows(data.posts, STREAM_WINDOW)
        for variant in a.variants.split(","):
            level, shots = ("post" if variant[0] == "u" else "stream"), int(variant[1:])
            d = dataclasses.replace(data, streams=windows if level == "stream" else None)
            test = np.asarray(d.rows["test"])
            prompts = prompts_for(d, level, shots, a.shots_per, a.style, a.seed, test)
            rendered = [render(p, tokenizer) for p in prompts]
            lengths = [len(x) for x in tokenizer([t for t, _ in rendered], add_special_tokens=rendered[0][1])["input_ids"]]
            row = {"dataset": name, "variant": variant, "posts": n_posts, "mean": float(np.mean(lengths)),
                   "max": int(np.max(lengths)), "cpu": None, "wall": None}
            if (name, variant) in timed:
                pick = np.random.default_rng(a.seed).choice(len(prompts), size=min(a.posts, len(prompts)), replace=False)
                sample = [prompts[i] for i in pick]
                c0, w0 = time.process_time(), time.perf_counter()
                answers, sample_lengths = generate_answers(model, tokenizer, sample, DEFAULTS["max_new_tokens"],
                                                           DEFAULTS["batch_size"])
                row["cpu"] = (time.process_time() - c0) / len(sample)
                row["wall"] = (time.perf_counter() - w0) / len(sample)
                matched = bucket_answers(answers, resolve_task("auto", d.labels), d.labels, d.labels[0])
                print(f"{name} {variant}: answers {answers}; {matched.summary(answers)['unmatched']} of "
                      f"{len(answers)} match no label")
                row["sample_mean"] = float(np.mean(sample_lengths))
                timings.append((row["sample_mean"], row["cpu"]))
            rows_out.append(row)

    t = np.array([x for x, _ in timings], dtype=float)
    y = np.array([s for _, s in timings], dtype=float)
    if len(timings) >= 2:
        b, c = np.linalg.lstsq(np.stack([t, t ** 2], axis=1), y, rcond=None)[0]
    else:
        b, c = (y[0] / t[0] if len(t) else float("nan")), 0.0
    print(f"\nprompts of the fold-{a.fold} test posts (tokens), timed on {a.posts} of them; projected cpu s per "
          f"post = {1e3 * b:.3f} t/1000 + {1e6 * c:.4f} (t/1000)^2 (fitted to the timed variants)")
    print(f"{'dataset':16} {'variant':7} {'mean tok':>8} {'max tok':>7} {'cpu s/post':>10} {'wall s/post':>11} "
          f"{'proj. s/post':>12} {'posts':>6} {'h per seed':>10}")
    total = 0.0
    for r in rows_out:
        projected = b * r["mean"] + c * r["mean"] ** 2
        hours = projected * r["posts"] / 3600
        total += hours
        measured = f"{r['cpu']:10.2f} {r['wall']:11.2f}" if r["cpu"] is not None else f"{'-':>10} {'-':>11}"
        print(f"{r['dataset']:16} {r['variant']:7} {r['mean']:8.0f} {r['max']:7d} {measured} {projected:12.2f} "
              f"{r['posts']:6d} {hours:10.1f}")
    print(f"all rows above, one seed: {total:.1f} h on one free core; four seeds (the configs' 0, 1, 12, 123): "
          f"{4 * total:.1f} h; load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
