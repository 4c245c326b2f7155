"""`tempoformer predict` as a user feels it: start-up time and posts/s, against the arithmetic.

Models: TempoFormer on all-MiniLM-L6-v2 (`backbone_path("minilm")`: 4 local + 2 TempoFormer
layers, hidden 384), windows 5 and 20, max 128 tokens per post, saved with save_trained. The
weights are the pretrained backbone plus untrained TempoFormer parts (seeded): the time does not
depend on them.
Stream: real chat posts, the chitchat_dataset utterances of the 8 senders with most posts, in
time order with their timestamps (timeline = sender), the first --posts of them.

Per window and source tree, --repeats rounds of three fresh processes of
    python -m tempoformer predict --model M --input FILE|- --threads T
  start s     process start to the first output line, the process given the first post alone:
              imports, loading, one post scored; cpu s: the CPU seconds that process used (wait4)
  posts/s     throughput on a backlog: (N - 1) / (wall clock of a process given the whole
              stream file - that of the one-post process); /cpu s: the same in CPU seconds
  live ms     latency on a live stream: the median time from writing a post to the process's
              stdin to reading its score, each post sent once the one before was scored (the
              first --live posts; no backlog, so each is scored alone)
Repeats alternate between the trees (--src), so other jobs on a shared machine slow them alike;
the table shows medians.
  pooling     the model's post_pooling (the config default, `auto`, as that tree resolves it)
  GFLOP/post  matmul + attention FLOPs of scoring the stream, per post (torch.utils.flop_counter
              in a process of that tree; the CPU fused attention kernel counted as its two
              matmuls), independent of load
  GEMM bound  the best fp32 rate of a plain 1024x1024x1024 torch.mm on T threads, measured here,
              per wall-clock second and per CPU second
  % bound     posts/s x GFLOP/post / GEMM rate: the share of that bound the throughput reaches;
              cpu %: the same per CPU second, which other jobs on the machine disturb less

    HF_HUB_OFFLINE=1 python bench/serving.py                       # current tree, windows 5 and 20
    HF_HUB_OFFLINE=1 python bench/serving.py --src src --src /tmp/old/src   # side by side, e.g. an
                      # older commit exported with `git archive COMMIT src | tar -x -C /tmp/old`
    HF_HUB_OFFLINE=1 python bench/serving.py --profile 5           # + cProfile of scoring (stderr)
Each tree saves its own models (its save_trained), so trees whose folder formats differ compare.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# this file is bench/serving.py: keep its directory off sys.path so `import tempoformer` is the package
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

LABELS = ["New", "Cont"]
MAX_TOKENS = 128
SENDERS = 8


def stream_lines(n_posts: int) -> list[str]:
    """JSONL posts: the utterances of the SENDERS most active chitchat senders, in time order."""
    import chitchat_dataset

    with open(chitchat_dataset._PATH, encoding="utf-8") as handle:
        data = json.load(handle)
    by_sender: dict[str, list] = {}
    for conv_id in sorted(data):
        for turn in data[conv_id]["messages"]:
            for utt in turn:
                if utt["text"].strip():
                    by_sender.setdefault(utt["sender"], []).append((utt["timestamp"], utt["text"]))
    top = sorted(by_sender, key=lambda s: (-len(by_sender[s]), s))[:SENDERS]
    posts = sorted((stamp, sender, i, text) for sender in top
                   for i, (stamp, text) in enumerate(sorted(by_sender[sender])))
    return [json.dumps({"timeline_id": sender[:8], "post_id": f"{sender[:8]}-{i}", "text": text,
                        "timestamp": stamp}) + "\n" for stamp, sender, i, text in posts[:n_posts]]


def build_model(out: str, window: int) -> None:
    """Worker: save a window-`window` MiniLM TempoFormer to `out` with this tree's save_trained."""
    import torch

    from tempoformer.backbones import backbone_path
    from tempoformer.models.tempoformer import TempoFormer, TempoFormerConfig
    from tempoformer.serving.saved_model import save_trained

    torch.manual_seed(0)
    model = TempoFormer(TempoFormerConfig(backbone=backbone_path("minilm"), num_labels=len(LABELS),
                                          window=window)).eval()
    save_trained(out, model, LABELS, window, MAX_TOKENS, backbone_path("minilm"))


def env_for(src: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def predict_command(model: Path, stream: str, threads: int) -> list[str]:
    return [sys.executable, "-m", "tempoformer", "predict", "--model", str(model), "--input", stream,
            "--threads", str(threads)]


def finish(process: subprocess.Popen, what: str) -> float:
    """Wait for `process`; the CPU seconds it used (all threads, from wait4)."""
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"predict failed ({what}):\n{err}")
    return usage.ru_utime + usage.ru_stime


def timed_predict(src: Path, model: Path, stream: Path, threads: int) -> dict:
    """One fresh predict process on a file: seconds to its first line and to its exit, CPU seconds."""
    started = time.perf_counter()
    process = subprocess.Popen(predict_command(model, str(stream), threads), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env_for(src))
    first, lines = None, 0
    for _ in process.stdout:
        first = first or time.perf_counter() - started
        lines += 1
    cpu = finish(process, f"{src}, {model}")
    return {"start_s": first, "wall_s": time.perf_counter() - started, "posts": lines, "cpu_s": cpu}


def live_predict(src: Path, model: Path, lines: list[str], threads: int) -> float:
    """Median seconds from writing a post to a predict process's stdin to reading its score,
    each post sent only once the one before has been scored (a live stream: no backlog)."""
    process = subprocess.Popen(predict_command(model, "-", threads), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                               env=env_for(src))
    waits = []
    for line in lines:
        t0 = time.perf_counter()
        process.stdin.write(line)
        process.stdin.flush()
        if not process.stdout.readline():
            break
        waits.append(time.perf_counter() - t0)
    process.stdin.close()
    finish(process, f"{src}, {model}, live")
    return statistics.median(waits[1:])  # the first includes the start-up


def measure(src: Path, model: Path, stream: Path, one: Path, live: list[str], threads: int) -> dict:
    """A process on one post (start-up), one on the whole stream file (throughput: what it takes
    beyond the one-post process) and one fed a live stream (latency per post)."""
    alone, full = timed_predict(src, model, one, threads), timed_predict(src, model, stream, threads)
    n = full["posts"] - 1
    return {"start_s": alone["start_s"], "start_cpu_s": alone["cpu_s"],
            "posts_per_s": n / max(full["wall_s"] - alone["wall_s"], 1e-9),
            "posts_per_cpu_s": n / max(full["cpu_s"] - alone["cpu_s"], 1e-9),
            "live_ms": 1000 * live_predict(src, model, live, threads)}


def count_flops(model_dir: str, stream: str) -> None:
    """Worker: matmul + attention FLOPs per post of scoring `stream` with this tree's scorer."""
    import io

    import torch
    from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

    from tempoformer.serving.predict import StreamScorer, score_stream

    def cpu_sdpa(query, key, value, *args, out_shape=None, **kwargs) -> int:
        return sdpa_flop_count(query, key, value)

    torch.set_num_threads(1)
    lines = Path(stream).read_text().splitlines(keepends=True)
    scorer = StreamScorer.from_dir(model_dir, "cpu")
    aten = torch.ops.aten
    with FlopCounterMode(display=False,
                         custom_mapping={aten._scaled_dot_product_flash_attention_for_cpu: cpu_sdpa}) as counter:
        score_stream(scorer, iter(lines), io.StringIO())  # one post at a time: no padding between posts
    meta = json.loads((Path(model_dir) / "tempoformer.json").read_text())
    print(json.dumps({"gflop_per_post": counter.get_total_flops() / 1e9 / len(lines),
                      "post_pooling": meta["model"].get("post_pooling", "cls_pooler")}))


def gemm_gflops(threads: int, n: int = 1024, seconds: float = 2.0) -> tuple[float, float]:
    """Best fp32 torch.mm rate over ~`seconds` of n x n x n products on `threads` threads, per
    wall-clock second and per CPU second of this process."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    wall = cpu = 0.0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t0, c0 = time.perf_counter(), time.process_time()
        torch.mm(a, b)
        wall = max(wall, 2 * n**3 / (time.perf_counter() - t0) / 1e9)
        cpu = max(cpu, 2 * n**3 / max(time.process_time() - c0, 1e-9) / 1e9)
    return wall, cpu


def profile(model_dir: Path, lines: list[str], threads: int) -> None:
    """cProfile of scoring the stream in this process (current tree), top functions to stderr."""
    import cProfile
    import io
    import pstats

    import torch

    from tempoformer.serving.predict import StreamScorer, score_stream

    torch.set_num_threads(threads)
    scorer = StreamScorer.from_dir(model_dir, "cpu")
    score_stream(scorer, lines[:20], io.StringIO())  # warm-up, then a fresh scorer state
    scorer = StreamScorer(scorer.model, scorer.tokenizer, scorer.meta, "cpu")
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    score_stream(scorer, lines, io.StringIO())
    prof.disable()
    print(f"\ncProfile, window {scorer.window}: {len(lines)} posts in {time.perf_counter() - t0:.2f} s "
          f"(profiled)", file=sys.stderr)
    pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(25)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", action="append", type=Path,
                    help="source tree(s) on PYTHONPATH for the predict processes (default: src)")
    ap.add_argument("--windows", type=int, nargs="+", default=[5, 20])
    ap.add_argument("--posts", type=int, default=600)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--live", type=int, default=60, help="posts of the live (one at a time) stream")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--workdir", type=Path, help="keep models and stream here (default: a temporary folder)")
    ap.add_argument("--profile", type=int, metavar="W", help="cProfile scoring at window W (stderr)")
    ap.add_argument("--build", nargs=2, metavar=("OUT", "WINDOW"), help=argparse.SUPPRESS)
    ap.add_argument("--flops", nargs=2, metavar=("MODEL", "STREAM"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build:
        build_model(args.build[0], int(args.build[1]))
        return
    if args.flops:
        count_flops(*args.flops)
        return

    srcs = [s.resolve() for s in (args.src or [Path(__file__).resolve().parents[1] / "src"])]
    started, load0 = time.perf_counter(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        lines = stream_lines(args.posts)
        stream, one = work / "stream.jsonl", work / "one.jsonl"
        stream.write_text("".join(lines))
        one.write_text(lines[0])
        models = {}
        for k, src in enumerate(srcs):
            for w in args.windows:
                models[src, w] = work / f"tree{k}" / f"w{w}"
                if not models[src, w].is_dir():
                    subprocess.run([sys.executable, __file__, "--build", str(models[src, w]), str(w)],
                                   env=env_for(src), check=True, capture_output=True)
        runs = {key: [] for key in models}
        for _ in range(args.repeats):
            for w in args.windows:
                for src in srcs:
                    runs[src, w].append(measure(src, models[src, w], stream, one, lines[: args.live],
                                                args.threads))
        flops = {key: json.loads(subprocess.run(
            [sys.executable, __file__, "--flops", str(model), str(stream)], env=env_for(key[0]),
            check=True, capture_output=True, text=True).stdout.splitlines()[-1]) for key, model in models.items()}
        gemm = gemm_gflops(args.threads)
        if args.profile:
            profile(models[srcs[0], args.profile], lines, args.threads)

    import torch

    print(f"tempoformer predict, all-MiniLM-L6-v2 TempoFormer, {len(lines)} chitchat posts "
          f"({SENDERS} timelines, timestamps), max {MAX_TOKENS} tokens, --threads {args.threads}, "
          f"torch {torch.__version__}, median of {args.repeats} rounds of fresh processes")
    print(f"GEMM bound: fp32 1024^3 torch.mm on {args.threads} thread(s), best: {gemm[0]:.1f} GFLOP/s "
          f"wall clock, {gemm[1]:.1f} GFLOP per CPU second")
    print()
    head = (f"{'tree':<28} {'window':>6} {'pooling':>10} {'start s':>8} {'cpu s':>6} {'posts/s':>8} "
            f"{'/cpu s':>7} {'live ms':>8} {'GFLOP/post':>10} {'% bound':>8} {'cpu %':>6}")
    print(head)
    print("-" * len(head))
    for src in srcs:
        for w in args.windows:
            r = runs[src, w]
            med = {k: statistics.median(x[k] for x in r)
                   for k in ("start_s", "start_cpu_s", "posts_per_s", "posts_per_cpu_s", "live_ms")}
            g = flops[src, w]["gflop_per_post"]
            print(f"{str(src)[-28:]:<28} {w:>6} {flops[src, w]['post_pooling']:>10} {med['start_s']:>8.2f} "
                  f"{med['start_cpu_s']:>6.2f} {med['posts_per_s']:>8.1f} {med['posts_per_cpu_s']:>7.1f} "
                  f"{med['live_ms']:>8.1f} "
                  f"{g:>10.3f} {100 * med['posts_per_s'] * g / gemm[0]:>7.1f}% "
                  f"{100 * med['posts_per_cpu_s'] * g / gemm[1]:>5.1f}%")
    print()
    print("start s: process start to the first scored post (a process given one post); cpu s: the CPU "
          "seconds that process used")
    print("posts/s: (N - 1) / (wall clock of a process given the stream file - that of the one-post "
          "process); /cpu s: the same in CPU seconds")
    print(f"live ms: median time from writing a post to reading its score, the first {args.live} posts "
          "sent one at a time")
    print("% bound: posts/s x GFLOP/post over the GEMM rate (wall clock); cpu %: the same per CPU second "
          "(less sensitive to other jobs)")
    print(f"total {time.perf_counter() - started:.0f} s; 1-min load average {load0:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at end, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
