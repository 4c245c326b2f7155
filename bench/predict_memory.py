"""`tempoformer predict`'s peak memory against the number of timelines it has seen, with and
without the `--max-timelines` bound.

Model: TempoFormer on all-MiniLM-L6-v2 at window 5 (bench/serving.py's build_model: pretrained
backbone, seeded TempoFormer parts). Stream: N timelines, each given --posts-per-timeline short
posts ("post i of user t", timestamps a minute apart), the timelines interleaved round-robin so
every one stays alive to the end. Each row is a fresh process; its peak resident memory comes
from wait4 (ru_maxrss).

  timelines   distinct timelines in the stream
  bound       --max-timelines of the run
  kept        timelines kept at the end: min(timelines, bound)
  peak MB     peak resident memory of the process
  KB/kept     (peak - peak of the smallest run) / (kept - its kept): the memory one kept timeline
              costs
  evicted     the count predict reports on stderr

    HF_HUB_OFFLINE=1 python bench/predict_memory.py                     # 10, 1000, 4000 timelines
    HF_HUB_OFFLINE=1 python bench/predict_memory.py --timelines 10 10000 --bound 1000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
from serving import build_model, env_for, predict_command  # noqa: E402  (bench/serving.py)

SRC = _HERE.parent / "src"
START = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)


def stream(path: Path, timelines: int, posts_per_timeline: int) -> None:
    with open(path, "w") as out:
        for i in range(posts_per_timeline):
            moment = (START + timedelta(minutes=i)).isoformat()
            for t in range(timelines):
                out.write(json.dumps({"timeline_id": f"user{t}", "post_id": f"p{i}",
                                      "text": f"post {i} of user {t}", "timestamp": moment}) + "\n")


def run(model: Path, path: Path, bound: int, threads: int) -> tuple[float, int, float]:
    """(peak MB, evicted, seconds) of one predict process."""
    command = [*predict_command(model, str(path), threads), "--max-timelines", str(bound)]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=env_for(SRC))
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"predict failed:\n{stderr}")
    evicted = re.search(r"(\d+) timeline\(s\) evicted", stderr)
    return usage.ru_maxrss / 1024, int(evicted.group(1)) if evicted else 0, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timelines", type=int, nargs="+", default=[10, 1000, 4000])
    parser.add_argument("--bound", type=int, default=500, help="--max-timelines of the bounded runs")
    parser.add_argument("--posts-per-timeline", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "model"
        subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(_HERE)!r}); "
                        f"from serving import build_model; build_model({str(model)!r}, 5)"],
                       check=True, env=env_for(SRC))
        rows, base = [], None
        for n in args.timelines:
            path = Path(tmp) / f"stream_{n}.jsonl"
            stream(path, n, args.posts_per_timeline)
            for bound in sorted({max(args.timelines), args.bound}, reverse=True):
                if bound < n or bound == max(args.timelines):
                    peak, evicted, seconds = run(model, path, bound, args.threads)
                    kept = min(n, bound)
                    base = base or (peak, kept)
                    per = (peak - base[0]) * 1024 / (kept - base[1]) if kept > base[1] else float("nan")
                    rows.append((n, bound, kept, peak, per, evicted, n * args.posts_per_timeline / seconds))
    print(f"{'timelines':>10} {'bound':>7} {'kept':>6} {'peak MB':>8} {'KB/kept':>8} {'evicted':>8} {'posts/s':>8}")
    for n, bound, kept, peak, per, evicted, rate in rows:
        print(f"{n:>10} {bound:>7} {kept:>6} {peak:>8.0f} {per:>8.1f} {evicted:>8} {rate:>8.0f}")


if __name__ == "__main__":
    main()
