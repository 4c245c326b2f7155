"""LLM few-shot predictions for one (dataset, window, fold, seed): the paper's Llama2/Mistral U and S rows.

`llm_predict` is called like the Random baseline: no training, one label per test post. The
shots come from the fold's training posts (seeded), so each seed is a different draw of shots;
decoding is greedy, so a seed's run is deterministic.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import torch

from ..data.windows import window_arrays
from ..training.metrics import f1_scores
from .bucketing import bucket_answers
from .generate import generate_answers, load_causal_lm
from .prompts import (
    Example,
    Prompt,
    build_prompt,
    clean_text,
    format_gap,
    resolve_task,
    sample_shots,
)

log = logging.getLogger(__name__)

LEVEL_NAMES = {"post": "post", "u": "post", "stream": "stream", "s": "stream"}
DEFAULTS = {
    "level": "post",  # "post" (U prompts) | "stream" (S prompts: the window's previous posts too)
    "shots": 5,  # the paper: 5 or 10
    "shots_per": "label",  # "label": `shots` of every label | "total": `shots` in all
    "style": "mistral",  # "mistral" (Tables 7, 8) | "llama2" (Tables 9, 10)
    "task": "auto",  # auto (from the label set) | lrs | talklife | topic_shift | chitchat | generic
    "times": "gap",  # stream level: "gap" before the input | "absolute" UTC | "none" (the authors')
    "max_new_tokens": 8,
    "batch_size": 4,
    "fallback": "majority",  # label of unmatched answers: the training fold's majority, or a label name
    "max_post_chars": None,  # truncate each post shown (None: whole posts, as the paper)
    "dtype": "auto",  # auto: bfloat16 on CUDA, float32 on CPU
    "evaluate_dev": False,  # also label the dev posts (doubles the cost) to report dev macro-F1
}
# Ranges of DEFAULTS' numbers (tempoformer/settings.py; the model registry reads a dict config's
# ranges from its module's RANGES): checked at start-up and by the run (registry.validate_params).
RANGES = {"shots": ">= 0", "max_new_tokens": ">= 1", "batch_size": ">= 1", "max_post_chars": ">= 1",
          "shots_per": ("label", "total")}


def _settings(params: dict) -> dict:
    unknown = set(params) - set(DEFAULTS) - {"model"}
    if unknown:
        raise ValueError(f"unknown LLM params {sorted(unknown)}; known: model, {', '.join(DEFAULTS)}")
    if not params.get("model"):
        raise ValueError("LLM params need `model`: a causal LM directory or hub id")
    s = {**DEFAULTS, **params}
    level = LEVEL_NAMES.get(str(s["level"]).lower())
    if level is None:
        raise ValueError(f"unknown level {s['level']!r}; known: post (U), stream (S)")
    s["level"] = level
    if s["times"] not in ("gap", "absolute", "none"):
        raise ValueError(f"unknown times {s['times']!r}; known: gap, absolute, none")
    return s


class ExampleMaker:
    """Turns post rows into prompt examples: the post's text and, at stream level, its window's
    previous posts (oldest first), each prefixed with its time when the timeline has timestamps."""

    def __init__(self, data, level: str, times: str, max_chars: int | None):
        if level == "stream" and data.streams is None:
            raise ValueError("stream-level LLM prompts need the windows (data.streams)")
        self.data, self.level, self.times, self.max_chars = data, level, times, max_chars
        self.texts = data.posts["text"].to_list()
        stamps = data.posts["timestamp"]
        self.seconds = stamps.dt.epoch("us").cast(float).fill_null(float("nan")).to_numpy() / 1e6
        self.stamps = stamps.to_list()

    def text(self, row: int) -> str:
        return clean_text(self.texts[row], self.max_chars)

    def time_prefix(self, row: int, current: int) -> str:
        if self.times == "gap":
            return f"[{format_gap(self.seconds[current] - self.seconds[row])} before] "
        if self.times == "absolute":
            return f"[{self.stamps[row]:%Y-%m-%d %H:%M:%S}] "
        return ""

    def __call__(self, rows: np.ndarray, labels: list[str] | None = None) -> list[Example]:
        rows = np.asarray(rows, dtype=np.int64)
        if self.level == "post":
            return [Example(self.text(r), label=None if labels is None else labels[i])
                    for i, r in enumerate(rows)]
        window_rows, valid, _ = window_arrays(self.data.streams, rows)
        out = []
        for i, r in enumerate(rows):
            slots = window_rows[i][valid[i]]
            if slots[-1] != r:
                raise ValueError(f"the window of post row {r} does not end at it")
            timed = self.times != "none" and not np.isnan(self.seconds[slots]).any()
            history = [(self.time_prefix(h, r) if timed else "") + self.text(h) for h in slots[:-1]]
            query = (self.time_prefix(r, r) if timed and self.times == "absolute" else "") + self.text(r)
            out.append(Example(query, history, None if labels is None else labels[i]))
        return out

    def has_times(self, rows: np.ndarray) -> bool:
        return self.level == "stream" and self.times != "none" and not np.isnan(self.seconds[rows]).all()


def llm_predict(data, params: dict, window: int, seed: int, device: str | None = None):
    """One-hot label predictions [n_test, C] (float32) for data.rows["test"], and an info dict
    (keys selected, dev_macro, grid like the other models, plus llm: answers, unmatched counts,
    shots, one example prompt).

    data: train.RunData (posts with text/timestamp, labels, y, rows, streams for the S level).
    params: model (required) plus the keys of DEFAULTS. window: the run's window (S level: the
    posts shown are that window's). dev_macro is NaN unless evaluate_dev.
    """
    s = _settings(params)
    started = time.perf_counter()
    torch.manual_seed(seed)
    labels = list(data.labels)
    task = resolve_task(s["task"], labels)
    train = np.asarray(data.rows["train"])
    make = ExampleMaker(data, s["level"], s["times"], s["max_post_chars"])

    prefer = None
    if s["level"] == "stream":  # shots with a full window of history show the most context
        prefer = window_arrays(data.streams, train)[1].all(axis=1)
    shot_rows = sample_shots(data.y, train, len(labels), int(s["shots"]), seed, s["shots_per"], prefer)
    shots = make(shot_rows, [labels[c] for c in data.y[shot_rows]])
    times = s["times"] if make.has_times(np.concatenate([shot_rows, data.rows["test"]])) else "none"

    def prompts_for(rows) -> list[Prompt]:
        return [build_prompt(task, s["level"], s["style"], shots, q, times) for q in make(rows)]

    counts = np.bincount(data.y[train], minlength=len(labels))
    fallback = labels[int(counts.argmax())] if s["fallback"] == "majority" else s["fallback"]
    model, tokenizer = load_causal_lm(s["model"], device, s["dtype"])

    def run(rows):
        prompts = prompts_for(rows)
        answers, lengths = generate_answers(model, tokenizer, prompts, int(s["max_new_tokens"]),
                                            int(s["batch_size"]))
        return prompts, answers, lengths, bucket_answers(answers, task, labels, fallback)

    test_rows = np.asarray(data.rows["test"])
    prompts, answers, lengths, result = run(test_rows)
    prob = np.eye(len(labels), dtype=np.float32)[result.pred].reshape(len(test_rows), len(labels))
    dev_macro, dev_info = math.nan, None
    if s["evaluate_dev"]:
        _, dev_answers, _, dev_result = run(np.asarray(data.rows["dev"]))
        dev_macro = f1_scores(data.y[data.rows["dev"]], dev_result.pred, labels)["macro"]
        dev_info = dev_result.summary(dev_answers)
    summary = result.summary(answers)
    log.info("LLM %s: %d answers, %d unmatched -> %s", s["model"], summary["n"], summary["unmatched"],
             fallback)
    selected = {k: s[k] for k in ("level", "shots", "shots_per", "style", "max_new_tokens", "max_post_chars")}
    selected.update(model=str(s["model"]), task=task.name, times=times, window=window)
    post_ids = data.posts["post_id"]
    info = {
        "selected": selected,
        "dev_macro": dev_macro,
        "grid": [],
        "llm": {
            **summary,
            "dev": dev_info,
            "shots": [{"post_id": str(post_ids[int(r)]), "label": labels[int(data.y[r])]} for r in shot_rows],
            "prompt_tokens": {"max": int(max(lengths, default=0)),
                              "mean": round(float(np.mean(lengths)), 1) if lengths else 0.0},
            "example_prompt": prompts[0].text() if prompts else "",
            "generation_seconds": round(time.perf_counter() - started, 2),
        },
    }
    return prob, info
