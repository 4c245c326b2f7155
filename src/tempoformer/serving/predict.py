"""Score a live stream of posts with a trained TempoFormer (a folder of saved_model.save_trained).

Input: JSON Lines, one post per line, in arrival order:
    {"timeline_id": "u1", "post_id": "p7", "text": "...", "timestamp": "2024-05-01T10:00:00Z"}
`timestamp` (ISO 8601 text, without a zone UTC; or a number of Unix seconds) is optional, but
it must lie in [earliest_timestamp, latest_timestamp] as ingest requires (by default from the
Unix epoch to now plus one day: `--earliest-timestamp`, `--latest-timestamp`), and within a
timeline it must not go back in time: a post may not be earlier than the latest timestamped
post before it, untimed posts in between or not. A `post_id` appears once per timeline; a key
appears once per line. Other fields are ignored.
Output: one JSON line per post, in arrival order, flushed as soon as that post is scored:
    {"timeline_id": "u1", "post_id": "p7", "prediction": "New", "probabilities": {"New": 0.8, ...},
     "window": 3}
The window of a post is the last w posts of its timeline seen so far, the post itself last, with
the training windows' layout and time feature (src/tempoformer/data/windows.py): left padding, the
log of each post's gap to the current one in seconds (gaps under 1 s count as 1 s); when a post
of the window has no timestamp, window positions instead, as in training.

Each timeline keeps at most w posts, each with its local encoding (the output of the local
layers, computed once when the post arrives), so a post costs one local encoding and one pass
of the two TempoFormer layers over its window; besides, it remembers its post ids (to refuse a
repeated one) and its latest timestamp. No line is ever waited for: the lines already at hand are
scored together (line_batches), so on a pipe a post that arrives alone is scored at once, while a
backlog (a file) is scored up to MAX_BATCH posts at a time: the same scores up to float rounding,
twice as fast at window 5 (bench/README.md).

A bad line (not JSON, a missing or mistyped field, a timestamp out of range or back in time, a
repeated id) is refused: reported on stderr with its line number and the problem, leaving no
trace in its timeline, and the stream goes on with the next line; the exit status then says
that lines were refused (REFUSED_STATUS). With `strict` the first bad line stops the stream
instead (the posts before it have already been written). A post the model gives a non-finite
score (damaged weights) always stops the stream: no NaN is ever written.

Memory: at most `max_timelines` timelines are kept (about 50 KB each with MiniLM at window 5:
the local encodings of its last w posts); a post of a new timeline beyond that evicts the least
recently seen one, which, should it come back, starts afresh (an empty window, its old post ids
forgotten). The count of evictions is reported at the end (bench/predict_memory.py).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import stat
import sys
from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, TextIO

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence

from ..data.ingest._common import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, DuplicateKey, TimeRange, unique_keys
from ..data.windows import log_gap_seconds
from ..device import autocast, pick_device, set_threads

from .cli import MAX_TIMELINES, REFUSED_STATUS


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


@dataclass
class _Timeline:
    history: deque  # of _Seen: the last `window` posts
    line_of: dict  # (type name, post_id) -> line it came on (None outside score_stream), every post
    latest: tuple | None = None  # (seconds, post_id) of the latest timed post: untimed ones may follow


def _key(value: str | int) -> tuple[str, str | int]:
    return type(value).__name__, value  # 1 and "1" are two ids


class _TransposedLinear(torch.nn.Module):
    """nn.Linear with its weight stored transposed, [in, out] contiguous: on a CPU, MKL's sgemm
    runs the few-row products of one post (M of 10-30 tokens) about twice as fast in this layout
    as in nn.Linear's [out, in] (bench/serving.py). Same results up to float rounding."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.weight_t = torch.nn.Parameter(linear.weight.detach().t().contiguous(), requires_grad=False)
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        out = flat @ self.weight_t if self.bias is None else torch.addmm(self.bias, flat, self.weight_t)
        return out.view(*x.shape[:-1], out.shape[-1])


def transpose_linears(model: torch.nn.Module) -> torch.nn.Module:
    """Replace every nn.Linear of `model` (in place) by a _TransposedLinear: for inference only."""
    for module in list(model.modules()):
        for name, child in module.named_children():
            if type(child) is torch.nn.Linear:
                setattr(module, name, _TransposedLinear(child))
    return model


def _identifier(record: dict, key: str) -> str | int:
    if key not in record:
        raise ValueError(f"missing field {key!r}")
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise ValueError(f"field {key!r} must be a non-empty string or an integer, got {value!r}")
    return value


def parse_timestamp(value, span: TimeRange | None = None) -> float | None:
    """ISO 8601 text (naive times are UTC) or Unix seconds -> POSIX seconds; None/absent -> None.
    With `span`, a time outside it is refused as ingest refuses it."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            moment = datetime.fromtimestamp(value, timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"field 'timestamp' {value!r} is not a time in Unix seconds") from None
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"field 'timestamp' is not an ISO 8601 time: {value!r}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
    else:
        raise ValueError(f"field 'timestamp' must be ISO 8601 text, Unix seconds or null, got {value!r}")
    if span is not None and not span.contains(moment):
        if span.earliest and moment < span.earliest:
            bound = f"before earliest_timestamp {span.earliest.isoformat()}"
        else:
            bound = f"after latest_timestamp {span.latest_name}"
        raise ValueError(f"timestamp {moment.isoformat()} is {bound} (--earliest-timestamp / "
                         "--latest-timestamp, as ingest's reader options)")
    return moment.timestamp()


def parse_post(line: str, span: TimeRange | None = None) -> Post:
    """One JSON line -> Post; ValueError says what is wrong."""
    try:
        record = json.loads(line, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None
    except DuplicateKey as error:  # json would keep the last value silently
        raise ValueError(f"key {error.args[0]!r} appears twice in the object") from None
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    if "text" not in record:
        raise ValueError("missing field 'text'")
    text = record["text"]
    if not isinstance(text, str):
        raise ValueError(f"field 'text' must be a string, got {text!r}")
    return Post(_identifier(record, "timeline_id"), _identifier(record, "post_id"), text,
                parse_timestamp(record.get("timestamp"), span))


MAX_BATCH = 32  # lines scored together at most, when that many have already arrived
ENCODE_CHUNK = 16  # posts per local-encoding pass (sorted by length, so little padding)
WINDOW_ROWS = 128  # window posts per pass of the TempoFormer layers (WINDOW_ROWS // w windows)


class StreamScorer:
    """Scores posts in arrival order, keeping each timeline's last `window` posts.

    Posts that are at hand together (score_posts) are scored as a batch: the local layers of one
    post alone are products of ~12 token rows, which stream each layer's weights from memory for
    little arithmetic (about a third of the machine's GEMM rate); a batch makes them compute-bound.
    Scores are those of one post at a time, up to float rounding."""

    def __init__(self, model, tokenizer, meta: dict, device: str = "cpu", max_timelines: int = MAX_TIMELINES):
        if max_timelines < 1:
            raise ValueError(f"max_timelines must be at least 1, got {max_timelines}")
        self.model, self.tokenizer, self.meta, self.device = model.eval(), tokenizer, meta, device
        self.labels: list[str] = meta["labels"]
        self.window: int = meta["window"]
        self.max_tokens: int = meta["max_tokens"]
        # least recently seen first: a new timeline beyond max_timelines evicts the first
        self.timelines: OrderedDict[tuple[str, str | int], _Timeline] = OrderedDict()
        self.max_timelines = max_timelines
        self.evicted = 0
        self.span: TimeRange | None = TimeRange()  # the timestamps accepted: ingest's defaults
        self.last_window = 0  # posts in the window of the last post score() scored
        if hasattr(tokenizer, "ids"):  # saved_model.FastTokenizer, truncating to max_tokens itself
            self._token_ids = tokenizer.ids
        else:  # a transformers tokenizer
            self._token_ids = lambda text: tokenizer(text, truncation=True, max_length=self.max_tokens)["input_ids"]

    @classmethod
    def from_dir(cls, model_dir, device: str | None = None, max_timelines: int = MAX_TIMELINES) -> StreamScorer:
        from .saved_model import load_trained

        device = pick_device(device)
        model, tokenizer, meta = load_trained(model_dir, device=device, fast_tokenizer=True)
        if device == "cpu":
            transpose_linears(model)  # the scorer owns this model
        return cls(model, tokenizer, meta, device, max_timelines)

    def _accept(self, post: Post, line: int | None) -> _Timeline:
        """Check `post` against the posts of its timeline before it (the post table's rules) and
        record its id and time; returns its timeline. ValueError names the problem; a refused
        post leaves no trace (a new timeline is kept only once its first post is accepted)."""
        key = _key(post.timeline_id)  # 1 and "1" are two timelines
        timeline = self.timelines.get(key)
        new = timeline is None
        if new:
            timeline = _Timeline(deque(maxlen=self.window), {})
        where = f"timeline {post.timeline_id!r}"
        earlier = timeline.line_of.get(_key(post.post_id), False)
        if earlier is not False:
            on = f" (line {earlier})" if earlier is not None else ""
            raise ValueError(f"post_id {post.post_id!r} repeats a post of {where}{on}")
        # the latest timed post, not the previous post: an untimed post in between hides nothing
        if post.seconds is not None and timeline.latest is not None and post.seconds < timeline.latest[0]:
            seconds, post_id = timeline.latest
            when = datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")
            raise ValueError(f"timestamp earlier than post {post_id!r} of {where} ({when}), "
                             "which came before it: posts must come in time order")
        timeline.line_of[_key(post.post_id)] = line
        if post.seconds is not None:
            timeline.latest = (post.seconds, post.post_id)
        if new:
            self.timelines[key] = timeline
            if len(self.timelines) > self.max_timelines:
                self.timelines.popitem(last=False)
                self.evicted += 1
        else:
            self.timelines.move_to_end(key)
        return timeline

    def _encode(self, posts: list[Post]) -> list[_Seen]:
        """Each post's tokens through the embeddings and local layers, once: in passes of up to
        ENCODE_CHUNK posts of similar length, padded to the longest of the pass."""
        ids = [self._token_ids(p.text) for p in posts]
        order = sorted(range(len(posts)), key=lambda i: len(ids[i]))
        seen: list[_Seen] = [None] * len(posts)
        for start in range(0, len(order), ENCODE_CHUNK):
            chunk = order[start : start + ENCODE_CHUNK]
            lengths = torch.tensor([len(ids[i]) for i in chunk])
            input_ids = pad_sequence([torch.tensor(ids[i]) for i in chunk], batch_first=True).to(self.device)
            mask = (torch.arange(input_ids.shape[1]) < lengths[:, None]).long().to(self.device)
            with autocast(self.device):
                local = self.model.encode_local(input_ids, mask)  # [n, L, H]
            for j, i in enumerate(chunk):
                n = len(ids[i])
                # a copy: a view would keep the whole pass's tensor alive in the timeline's history
                state = local[j, :n].clone() if len(chunk) > 1 else local[j]
                seen[i] = _Seen(posts[i].post_id, posts[i].seconds, state, n)
        return seen

    def _forward(self, windows: list[list[_Seen]], timed: bool) -> torch.Tensor:
        """Logits [B, C] of B windows (each the posts of a window in order, the current post last),
        laid out as collate_windows does: the distinct posts once, left padding to w slots."""
        w, B = self.window, len(windows)
        index: dict[int, int] = {}
        distinct: list[_Seen] = []
        for window in windows:
            for p in window:
                if id(p) not in index:
                    index[id(p)] = len(distinct)
                    distinct.append(p)
        states = pad_sequence([p.local for p in distinct], batch_first=True)  # [P, L, H], zeros after each post
        lengths = torch.tensor([p.length for p in distinct], device=self.device)
        attention_mask = (torch.arange(states.shape[1], device=self.device) < lengths[:, None]).long()
        valid = np.zeros((B, w), dtype=bool)
        window_index = np.zeros((B, w), dtype=np.int64)
        gaps = np.zeros((B, w), dtype=np.float64)
        for b, window in enumerate(windows):
            k = len(window)
            valid[b, w - k :] = True
            window_index[b, w - k :] = [index[id(p)] for p in window]
            if timed:
                gaps[b, w - k :] = window[-1].seconds - np.array([p.seconds for p in window], dtype=np.float64)
        time_gap = None
        if timed:
            time_gap = torch.as_tensor(np.where(valid, log_gap_seconds(gaps), 0.0).astype(np.float32),
                                       device=self.device)
        with autocast(self.device):
            return self.model.forward_from_local(
                local_states=states,
                attention_mask=attention_mask,
                window_index=torch.as_tensor(window_index, device=self.device),
                window_mask=torch.as_tensor(valid, device=self.device),
                time_gap=time_gap,
            )

    @torch.inference_mode()
    def score_posts(self, posts: list[Post], lines: list[int | None] | None = None):
        """Score `posts` (in arrival order) as one batch, each given the posts of its timeline
        before it. Returns ([(probabilities, window size)] of the posts scored, failure), where
        failure is None or (i, problem): posts[i] was refused or got a non-finite score, and the
        posts before it are the ones scored; a non-finite score has `fatal` set (i, problem, fatal)."""
        lines = lines or [None] * len(posts)
        accepted, timelines, failure = [], [], None
        for i, (post, line) in enumerate(zip(posts, lines)):
            try:
                timelines.append(self._accept(post, line))
            except ValueError as error:
                failure = (i, str(error), False)
                break
            accepted.append(post)
        if not accepted:
            return [], failure
        windows = []
        for timeline, seen in zip(timelines, self._encode(accepted)):
            history = timeline.history  # its own: the timeline may be evicted by a later post of the batch
            history.append(seen)  # the oldest post drops out once the window is full
            windows.append(list(history))
        # a batch without time feature uses window positions as a whole: timed windows apart
        timed = [all(p.seconds is not None for p in window) for window in windows]
        probs: list[np.ndarray] = [None] * len(windows)
        longest = [max(p.length for p in window) for window in windows]
        size = max(1, WINDOW_ROWS // self.window)
        for group in ([i for i, t in enumerate(timed) if t], [i for i, t in enumerate(timed) if not t]):
            # windows of similar longest post together: attention pads each row to a pass's longest
            group = sorted(group, key=longest.__getitem__)
            for start in range(0, len(group), size):
                part = group[start : start + size]
                logits = self._forward([windows[i] for i in part], timed[part[0]])
                for i, prob in zip(part, torch.softmax(logits.float(), dim=-1).cpu().numpy()):
                    probs[i] = prob
        results = []
        for i, (post, prob) in enumerate(zip(accepted, probs)):
            if not np.isfinite(prob).all():
                return results, (i, f"the model gave non-finite scores ({', '.join(map(str, prob))}) for post "
                                    f"{post.post_id!r} of timeline {post.timeline_id!r}: its weights may be damaged",
                                 True)
            results.append((prob, len(windows[i])))
        return results, failure

    def score(self, post: Post, line: int | None = None) -> np.ndarray:
        """Class probabilities of `post` given the posts of its timeline scored before it."""
        results, failure = self.score_posts([post], [line])
        if failure:
            raise ValueError(failure[1])
        prob, self.last_window = results[0]
        return prob

    def result(self, post: Post, prob: np.ndarray, window: int) -> dict:
        return {
            "timeline_id": post.timeline_id,
            "post_id": post.post_id,
            "prediction": self.labels[int(prob.argmax())],
            "probabilities": {label: float(p) for label, p in zip(self.labels, prob)},
            "window": window,
        }

    def score_line(self, line: str, number: int | None = None) -> dict:
        post = parse_post(line)
        return self.result(post, self.score(post, number), self.last_window)


def _pipe_batches(fd: int, max_batch: int) -> Iterator[list[bytes]]:
    """Lines of a pipe or terminal as they arrive: blocks only while no complete line is waiting,
    then takes every line already there (up to max_batch)."""
    buffer, eof = b"", False
    while True:
        while not eof and (b"\n" not in buffer or select.select([fd], [], [], 0)[0]):
            chunk = os.read(fd, 1 << 16)
            eof, buffer = not chunk, buffer + chunk
            if buffer.count(b"\n") >= max_batch:
                break
        *complete, rest = buffer.split(b"\n")
        if eof and rest:  # the last line, without a newline
            complete, rest = [*complete, rest], b""
        if not complete:
            return
        buffer = b"\n".join([*complete[max_batch:], rest])
        yield complete[:max_batch]


def line_batches(source, max_batch: int = MAX_BATCH) -> Iterator[list[tuple[int, str | bytes]]]:
    """The lines of `source`, numbered from 1, in batches of those already at hand: a batch never
    waits for a line beyond its first, so on a pipe each post is scored as soon as it arrives,
    while a backlog (a file, a pipe that is ahead) is scored max_batch posts at a time.
    `source`: a list of lines (all at hand), a file object (a regular file is read ahead, a pipe
    or terminal as it arrives), or any other iterable of lines (taken one at a time)."""
    fd = None
    if not isinstance(source, (list, tuple)):
        try:
            fd = source.fileno()
        except (AttributeError, OSError, ValueError):  # io.StringIO and other iterables
            pass
    if fd is not None and not stat.S_ISREG(os.fstat(fd).st_mode):
        number = 0
        for batch in _pipe_batches(fd, max_batch):
            yield [(number := number + 1, line) for line in batch]
        return
    size = max_batch if fd is not None or isinstance(source, (list, tuple)) else 1
    batch = []
    for number, line in enumerate(source, start=1):
        batch.append((number, line))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class StreamSummary:
    written: int = 0  # posts scored and written
    refused: int = 0  # lines refused (not strict)
    evicted: int = 0  # timelines evicted (max_timelines)

    def report(self, max_timelines: int) -> str:
        return (f"{self.written} posts scored, {self.refused} line(s) refused, {self.evicted} timeline(s) evicted "
                f"(least recently seen, beyond --max-timelines {max_timelines})")


def _stderr_refusal(error: StreamInputError) -> None:
    print(f"refused: {error}", file=sys.stderr, flush=True)


def score_stream(scorer: StreamScorer, input_lines, output: TextIO, source: str = "<input>", *,
                 strict: bool = False, on_refused=_stderr_refusal) -> StreamSummary:
    """Score the lines of `input_lines` (see line_batches) in arrival order. Blank lines are
    skipped. A bad line is passed to `on_refused` (a StreamInputError naming it) and skipped;
    with `strict` it is raised instead, after the posts before it have been written. A
    non-finite score is always raised."""
    summary = StreamSummary()

    def refuse(error: StreamInputError) -> None:
        if strict:
            raise error
        summary.refused += 1
        on_refused(error)

    for batch in line_batches(input_lines):
        pending = []  # (number, Post) or (number, StreamInputError), in line order
        for number, line in batch:
            try:
                if isinstance(line, bytes):
                    line = line.decode("utf-8")
                if line.strip():
                    pending.append((number, parse_post(line, scorer.span)))
            except UnicodeDecodeError as bad:
                pending.append((number, StreamInputError(
                    source, number, f"not UTF-8 text ({bad.reason} at byte {bad.start})")))
            except ValueError as bad:
                pending.append((number, StreamInputError(source, number, str(bad))))
        while pending:
            # the posts up to the next bad line, scored together; then that line refused
            cut = next((i for i, (_, item) in enumerate(pending) if isinstance(item, StreamInputError)),
                       len(pending))
            posts = [post for _, post in pending[:cut]]
            numbers = [number for number, _ in pending[:cut]]
            results, failure = scorer.score_posts(posts, numbers) if posts else ([], None)
            for post, (prob, window) in zip(posts, results):
                output.write(json.dumps(scorer.result(post, prob, window), allow_nan=False) + "\n")  # a NaN would not be JSON
            output.flush()
            summary.written += len(results)
            if failure:
                i, problem, fatal = failure
                error = StreamInputError(source, numbers[i], problem)
                if fatal:
                    raise error
                refuse(error)
                pending = pending[i + 1 :]
            else:
                if cut < len(pending):
                    refuse(pending[cut][1])
                pending = pending[cut + 1 :]
    summary.evicted = scorer.evicted
    return summary


def predict_stream(model_dir, input_lines, output: TextIO, *, source: str = "<input>",
                   device: str | None = None, threads: int | None = None, strict: bool = False,
                   max_timelines: int = MAX_TIMELINES, earliest_timestamp: str | None = EARLIEST_TIMESTAMP,
                   latest_timestamp: str | None = LATEST_TIMESTAMP) -> StreamSummary:
    """Load the model in `model_dir` and score `input_lines` (JSON posts) onto `output`."""
    span = TimeRange(earliest_timestamp, latest_timestamp)
    set_threads(threads)
    scorer = StreamScorer.from_dir(model_dir, device, max_timelines)
    scorer.span = span
    return score_stream(scorer, input_lines, output, source, strict=strict)


def predict_file(model_dir, input_path, output: TextIO = sys.stdout, **options) -> StreamSummary:
    """`input_path` a JSONL file, or "-" for standard input (read as it arrives); `options` those
    of predict_stream."""
    if str(input_path) == "-":
        return predict_stream(model_dir, sys.stdin, output, source="<stdin>", **options)
    if os.path.isdir(input_path):
        raise ValueError(f"--input {input_path}: is a folder, not a JSONL file")
    with open(input_path, "rb") as lines:  # decoded line by line: a bad byte names its line
        return predict_stream(model_dir, lines, output, source=str(input_path), **options)


def check_device(device: str | None) -> str | None:
    """`--device`: cpu, cuda or cuda:N, and a CUDA device only where one exists."""
    import re

    if device is None:
        return None
    if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise ValueError(f"--device {device!r}: expected cpu, cuda or cuda:N")
    if device.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(device.partition(":")[2] or 0)
        if index >= count:
            raise ValueError(f"--device {device}: {'no CUDA device' if not count else f'only {count} CUDA device(s)'}"
                             " on this machine")
    return device


def run(args) -> int:
    """`tempoformer predict`: 0 all posts scored, 1 stopped by an error, REFUSED_STATUS lines refused."""
    def bound(value, default):
        return default if value is None else None if value.lower() in ("none", "null") else value

    try:
        summary = predict_file(args.model, args.input, sys.stdout, device=check_device(args.device),
                               threads=args.threads, strict=args.strict, max_timelines=args.max_timelines,
                               earliest_timestamp=bound(args.earliest_timestamp, EARLIEST_TIMESTAMP),
                               latest_timestamp=bound(args.latest_timestamp, LATEST_TIMESTAMP))
    except BrokenPipeError:
        # the reader went away (`| head`): nothing more to say, and nothing to flush at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ValueError, OSError) as error:
        print(f"tempoformer predict: error: {error}", file=sys.stderr)
        return 1
    if summary.refused or summary.evicted:
        print(f"tempoformer predict: {summary.report(args.max_timelines)}", file=sys.stderr)
    return REFUSED_STATUS if summary.refused else 0


def main(argv: list[str] | None = None) -> int:
    from .cli import add_arguments

    parser = argparse.ArgumentParser(prog="tempoformer predict", description=__doc__.split("\n")[0])
    return run(add_arguments(parser).parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
