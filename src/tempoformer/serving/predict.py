"""Score a live stream of posts with a trained TempoFormer (a folder written by export.save_trained).

Input: JSON Lines, one post per line, in arrival order:
    {"timeline_id": "u1", "post_id": "p7", "text": "...", "timestamp": "2024-05-01T10:00:00Z"}
`timestamp` (ISO 8601; without a zone it is UTC) is optional, but within a timeline it must not
go back in time (the post table's rule); other fields are ignored.
Output: one JSON line per post, written and flushed as soon as that post is read:
    {"timeline_id": "u1", "post_id": "p7", "prediction": "New", "probabilities": {"New": 0.8, ...},
     "window": 3}
The window of a post is the last w posts of its timeline seen so far, the post itself last, with
the training windows' layout and time feature (src/tempoformer/data/windows.py): left padding, the
log of each post's gap to the current one in seconds (gaps under 1 s count as 1 s); when a post
of the window has no timestamp, window positions instead, as in training.

Each timeline keeps at most w posts, each with its local encoding (the output of the local
layers, computed once when the post arrives), so a post costs one local encoding and one pass
of the two TempoFormer layers over its window. Lines are read one at a time, never ahead: the
scorer works on a pipe. A bad line stops the stream with an error naming its line number and the
problem; the posts before it have already been written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, TextIO

import numpy as np
import torch

from ..data.windows import log_gap_seconds
from ..device import autocast, pick_device, set_threads


class StreamInputError(ValueError):
    """A line of the input stream that cannot be scored: names the line and the problem."""

    def __init__(self, source: str, line: int, problem: str):
        self.source, self.line, self.problem = source, line, problem
        super().__init__(f"{source}: line {line}: {problem}")


@dataclass
class Post:
    timeline_id: str | int
    post_id: str | int
    text: str
    seconds: float | None  # POSIX time, None without a timestamp


@dataclass
class _Seen:
    post_id: str | int
    seconds: float | None
    local: torch.Tensor  # [L, H] local-layer output of the post's tokens
    length: int  # number of real tokens


def _identifier(record: dict, key: str) -> str | int:
    if key not in record:
        raise ValueError(f"missing field {key!r}")
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise ValueError(f"field {key!r} must be a non-empty string or an integer, got {value!r}")
    return value


def parse_timestamp(value) -> float | None:
    """ISO 8601 text -> POSIX seconds (naive times are UTC); None/absent -> None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"field 'timestamp' must be ISO 8601 text or null, got {value!r}")
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"field 'timestamp' is not an ISO 8601 time: {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def parse_post(line: str) -> Post:
    """One JSON line -> Post; ValueError says what is wrong."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    if "text" not in record:
        raise ValueError("missing field 'text'")
    text = record["text"]
    if not isinstance(text, str):
        raise ValueError(f"field 'text' must be a string, got {text!r}")
    return Post(_identifier(record, "timeline_id"), _identifier(record, "post_id"), text,
                parse_timestamp(record.get("timestamp")))


class StreamScorer:
    """Scores posts one at a time, keeping each timeline's last `window` posts."""

    def __init__(self, model, tokenizer, meta: dict, device: str = "cpu"):
        self.model, self.tokenizer, self.meta, self.device = model.eval(), tokenizer, meta, device
        self.labels: list[str] = meta["labels"]
        self.window: int = meta["window"]
        self.max_tokens: int = meta["max_tokens"]
        self.timelines: dict[tuple[str, str | int], deque[_Seen]] = {}
        self.last_window = 0  # posts in the window of the last post scored

    @classmethod
    def from_dir(cls, model_dir, device: str | None = None) -> StreamScorer:
        from .saved_model import load_trained

        device = pick_device(device)
        model, tokenizer, meta = load_trained(model_dir, device=device)
        return cls(model, tokenizer, meta, device)

    def _encode(self, post: Post) -> _Seen:
        """The post's tokens through the embeddings and local layers, once."""
        ids = self.tokenizer(post.text, truncation=True, max_length=self.max_tokens)["input_ids"]
        input_ids = torch.tensor([ids], device=self.device)
        with autocast(self.device):
            local = self.model.encode_local(input_ids, torch.ones_like(input_ids))[0]  # [L, H]
        return _Seen(post.post_id, post.seconds, local, len(ids))

    @torch.inference_mode()
    def score(self, post: Post) -> np.ndarray:
        """Class probabilities of `post` given the posts of its timeline scored before it."""
        key = (type(post.timeline_id).__name__, post.timeline_id)  # 1 and "1" are two timelines
        history = self.timelines.setdefault(key, deque(maxlen=self.window))
        if history and post.seconds is not None and history[-1].seconds is not None \
                and post.seconds < history[-1].seconds:
            raise ValueError(f"timestamp earlier than the previous post ({history[-1].post_id!r}) "
                             f"of timeline {post.timeline_id!r}: posts must come in time order")
        history.append(self._encode(post))  # the oldest post drops out once the window is full

        # the window as collate_windows lays it out: k distinct posts, left padding to w slots
        posts, w = list(history), self.window
        k = self.last_window = len(posts)
        L = max(p.length for p in posts)
        states = posts[0].local.new_zeros((k, L, posts[0].local.shape[-1]))
        attention_mask = torch.zeros((k, L), dtype=torch.long, device=self.device)
        for i, p in enumerate(posts):
            states[i, : p.length] = p.local
            attention_mask[i, : p.length] = 1
        valid = np.zeros((1, w), dtype=bool)
        valid[0, w - k :] = True
        window_index = np.zeros((1, w), dtype=np.int64)
        window_index[0, w - k :] = np.arange(k)
        time_gap = None
        if all(p.seconds is not None for p in posts):
            gaps = np.zeros((1, w), dtype=np.float64)
            gaps[0, w - k :] = post.seconds - np.array([p.seconds for p in posts], dtype=np.float64)
            time_gap = torch.as_tensor(np.where(valid, log_gap_seconds(gaps), 0.0).astype(np.float32),
                                       device=self.device)
        with autocast(self.device):
            logits = self.model.forward_from_local(
                local_states=states,
                attention_mask=attention_mask,
                window_index=torch.as_tensor(window_index, device=self.device),
                window_mask=torch.as_tensor(valid, device=self.device),
                time_gap=time_gap,
            )
        return torch.softmax(logits.float(), dim=-1)[0].cpu().numpy()

    def score_line(self, line: str) -> dict:
        post = parse_post(line)
        prob = self.score(post)
        return {
            "timeline_id": post.timeline_id,
            "post_id": post.post_id,
            "prediction": self.labels[int(prob.argmax())],
            "probabilities": {label: float(p) for label, p in zip(self.labels, prob)},
            "window": self.last_window,
        }


def score_stream(scorer: StreamScorer, input_lines: Iterable[str], output: TextIO,
                 source: str = "<input>") -> int:
    """Score each line as it is read; returns the number of posts written. Blank lines are skipped."""
    written = 0
    for number, line in enumerate(input_lines, start=1):
        if not line.strip():
            continue
        try:
            result = scorer.score_line(line)
        except ValueError as error:
            raise StreamInputError(source, number, str(error)) from None
        output.write(json.dumps(result) + "\n")
        output.flush()
        written += 1
    return written


def predict_stream(model_dir, input_lines: Iterable[str], output: TextIO, *, source: str = "<input>",
                   device: str | None = None, threads: int | None = None) -> int:
    """Load the model in `model_dir` and score `input_lines` (JSON posts) onto `output`."""
    set_threads(threads)
    return score_stream(StreamScorer.from_dir(model_dir, device), input_lines, output, source)


def predict_file(model_dir, input_path, output: TextIO = sys.stdout, *, device: str | None = None,
                 threads: int | None = None) -> int:
    """`input_path` a JSONL file, or "-" for standard input (read line by line, as it arrives)."""
    if str(input_path) == "-":
        return predict_stream(model_dir, sys.stdin, output, source="<stdin>", device=device, threads=threads)
    with open(input_path, encoding="utf-8") as lines:
        return predict_stream(model_dir, lines, output, source=str(input_path), device=device,
                              threads=threads)


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--model", required=True, type=Path, help="folder written by save_trained")
    parser.add_argument("--input", default="-", help="JSONL posts in arrival order; - = stdin (default)")
    parser.add_argument("--threads", type=int, help="torch threads")
    parser.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda if available)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tempoformer predict", description=__doc__.split("\n")[0])
    args = add_arguments(parser).parse_args(argv)
    try:
        predict_file(args.model, args.input, sys.stdout, device=args.device, threads=args.threads)
    except (ValueError, FileNotFoundError) as error:
        print(f"tempoformer predict: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
