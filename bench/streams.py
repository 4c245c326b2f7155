"""Benchmark: raw generic Parquet file -> canonical posts -> window streams on disk.

Generates N synthetic posts in T timelines (default 1,000,000 in 10,000: random timeline
lengths, timestamps with log-normal gaps and some ties, random short texts, two labels and a
few unlabelled posts) as a Parquet file in the `generic` format, with its own column names and
rows shuffled out of time order, so the reader has to map, parse, sort and number everything.
Then, for each window size, a fresh child process runs what the pipeline runs:

    posts = tempoformer.data.ingest.ingest("generic", file, columns=...)      # "ingest s"
    streams = tempoformer.data.windows.build_windows(posts, w)                # \
    tempoformer.data.posts.write_parquet_atomic(streams, out)                 # / "windows s"

and the parent reads the child's peak RSS from os.wait4 (ru_maxrss of that child alone), so
each window's memory is measured on its own. "process s" is the child's whole wall time,
including Python start-up and imports. Target (DESIGN): window 20 in <= 10 s and <= 2 GB.

    python bench/streams.py [--posts 1000000] [--timelines 10000] [--windows 5 10 20]
                            [--workdir /tmp/tempoformer-bench] [--seed 0]

Prints a table; makes no assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

COLUMNS = {"timeline_id": "user", "post_id": "id", "timestamp": "time", "text": "body",
           "label": "y"}
TARGET_SECONDS, TARGET_MB, TARGET_WINDOW = 10.0, 2048.0, 20
WORDS = ("the a of to and in is it you that was for on are with as i his they be at one have "
         "this from or had by not word but what some we can out other were all there when up "
         "use your how said an each she which do their time if will way about many then them "
         "write would like so these her long make thing see him two has look more day could go "
         "come did number sound no most people my over know water than call first who may down "
         "side been now find any new work part take get place made live where after back little "
         "only round man year came show every good me give our under name very through just form "
         "sentence great think say help low line differ turn cause much mean before move right "
         "boy old too same tell does set three want air well also play small end put home read "
         "hand port large spell add even land here must big high such follow act why ask men "
         "change went light kind off need house picture try us again animal point mother world "
         "near build self earth father head stand own page should country found answer school "
         "grow study still learn plant cover food sun four between state keep eye never last let "
         "thought city tree cross farm hard start might story saw far sea draw left late "
         "run").split()


def generate(path: Path, n_posts: int, n_timelines: int, seed: int) -> None:
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    # Timeline lengths: at least 1 post each, the rest spread with log-normal weights
    # (so lengths vary from a handful to several hundred posts).
    weights = rng.lognormal(0.0, 0.8, n_timelines)
    lengths = 1 + rng.multinomial(n_posts - n_timelines, weights / weights.sum())
    timeline = np.repeat(np.arange(n_timelines), lengths)
    # Timestamps: a start per timeline in 2015-2020, then log-normal gaps (median ~20 min),
    # 2% of them zero (posts in the same second), whole seconds as in most corpora.
    start = rng.integers(1_420_070_400, 1_577_836_800, n_timelines)
    gaps = np.rint(rng.lognormal(7.0, 2.0, n_posts)).astype(np.int64)
    gaps[rng.random(n_posts) < 0.02] = 0
    first = np.zeros(n_posts, dtype=bool)
    first[np.concatenate([[0], np.cumsum(lengths)[:-1]])] = True
    gaps[first] = 0
    elapsed = np.cumsum(gaps)
    elapsed -= np.repeat(elapsed[first], lengths)  # restart the clock at each timeline
    seconds = start[timeline] + elapsed
    # Texts: 3-15 random words.
    n_words = rng.integers(3, 16, n_posts)
    word_ids = rng.integers(0, len(WORDS), int(n_words.sum()))
    cut = np.concatenate([[0], np.cumsum(n_words)])
    words = np.array(WORDS, dtype=object)[word_ids]
    texts = [" ".join(words[cut[i]:cut[i + 1]]) for i in range(n_posts)]
    labels = np.where(rng.random(n_posts) < 0.15, "change", "stable").astype(object)
    labels[rng.random(n_posts) < 0.01] = None  # a few unlabelled posts
    df = pl.DataFrame({
        "user": [f"user{t:05d}" for t in timeline],
        "id": [f"p{i}" for i in range(n_posts)],
        "time": pl.Series(seconds * 1_000_000).cast(pl.Datetime("us", "UTC")),
        "body": texts,
        "y": pl.Series(labels, dtype=pl.String),
    })
    # Shuffle the rows: the reader must put every timeline back in time order itself.
    df = df[rng.permutation(n_posts)]
    tmp = path.with_suffix(".tmp.parquet")
    df.write_parquet(tmp)
    os.replace(tmp, path)


def child(input_file: str, window: int, output: str) -> None:
    """One measured run; prints a JSON line with its timings."""
    t0 = time.perf_counter()
    # Running a script puts its folder first on sys.path, and bench/ holds a tempoformer.py
    # (another benchmark) that would shadow the package: import the installed package.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    from tempoformer.data.ingest import ingest
    from tempoformer.data.posts import write_parquet_atomic
    from tempoformer.data.windows import build_windows
    t1 = time.perf_counter()
    posts = ingest("generic", input_file, dataset="bench", columns=COLUMNS)
    t2 = time.perf_counter()
    streams = build_windows(posts, window)
    write_parquet_atomic(streams, output)
    t3 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "ingest_s": t2 - t1, "windows_s": t3 - t2,
                      "posts": posts.height, "streams": streams.height}))


def run_window(input_file: Path, window: int, workdir: Path) -> dict:
    output = workdir / f"streams_w{window}.parquet"
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", str(input_file), "--window", str(window),
         "--output", str(output)],
        stdout=subprocess.PIPE, text=True,
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, not all children's
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"window {window}: child failed with exit code {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    result.update(window=window, process_s=wall, peak_mb=usage.ru_maxrss / 1024,  # KiB on Linux
                  output_mb=output.stat().st_size / 2**20)
    output.unlink()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--posts", type=int, default=1_000_000)
    parser.add_argument("--timelines", type=int, default=10_000)
    parser.add_argument("--windows", type=int, nargs="+", default=[5, 10, 20])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/tempoformer-bench"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--window", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.window, args.output)
        return

    args.workdir.mkdir(parents=True, exist_ok=True)
    data = args.workdir / f"generic_{args.posts}_{args.timelines}_s{args.seed}.parquet"
    if not data.exists():
        t = time.perf_counter()
        generate(data, args.posts, args.timelines, args.seed)
        print(f"generated {data} in {time.perf_counter() - t:.1f} s")
    print(f"input: {data} ({data.stat().st_size / 2**20:.0f} MB, {args.posts:,} posts, "
          f"{args.timelines:,} timelines); {os.cpu_count()} CPUs; python {sys.version.split()[0]}; "
          f"load average {os.getloadavg()[0]:.1f} (other jobs slow every figure down)")

    header = ("window", "ingest s", "windows s", "total s", "process s", "peak MB",
              "time/target", "mem/target", "streams MB")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---:" for _ in header) + "|")
    for w in args.windows:
        r = run_window(data, w, args.workdir)
        total = r["ingest_s"] + r["windows_s"]
        print(f"| {w} | {r['ingest_s']:.2f} | {r['windows_s']:.2f} | {total:.2f} | "
              f"{r['process_s']:.2f} | {r['peak_mb']:.0f} | {total / TARGET_SECONDS:.2f} | "
              f"{r['peak_mb'] / TARGET_MB:.2f} | {r['output_mb']:.0f} |", flush=True)
    print(f"target: window {TARGET_WINDOW} in <= {TARGET_SECONDS:.0f} s total and "
          f"<= {TARGET_MB:.0f} MB peak RSS (ratios < 1 meet it)")


if __name__ == "__main__":
    main()
