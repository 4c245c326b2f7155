"""Run pending `tempoformer train` commands on a lent GPU in whole waves that fit the time left.

A run killed at the deadline is lost (it writes its outputs only at the end), so a wave starts
only if `per_run_s` GPU-seconds per run, measured with a dozen sharing one H100 (31 s), say it
ends inside the budget. Commands whose --out-dir already has metrics.json are skipped.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import tarfile
import time
from pathlib import Path


def out_dir(command: str) -> Path:
    words = shlex.split(command)
    return Path(words[words.index("--out-dir") + 1])


def log_path(command: str) -> Path | None:
    m = re.search(r"2> (\S+)\s*$", command)
    return Path(m.group(1)) if m else None


def summary(run: Path) -> str:
    m = json.loads((run / "metrics.json").read_text())
    return f"test macro {100 * m['test']['macro']:.1f}, {m['seconds']:.0f} s on {m['device']}"


def harvest(commands: list[str], since: float, tar_path: Path) -> None:
    """Outputs and logs of the runs this call finished (earlier ones travelled with the tree)."""
    with tarfile.open(tar_path, "w") as tar:
        for command in commands:
            run = out_dir(command)
            if (run / "metrics.json").exists() and (run / "metrics.json").stat().st_mtime >= since:
                for name in ("metrics.json", "predictions.parquet"):
                    if (run / name).exists():
                        tar.add(run / name)
                if log_path(command) and log_path(command).exists():
                    tar.add(log_path(command))
        print(f"lease_queue: {len(tar.getnames())} files in {tar_path}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commands", type=Path, required=True)
    p.add_argument("--budget", type=float, required=True, help="seconds this call may spend")
    p.add_argument("--parallel", type=int, default=16)
    p.add_argument("--per-run-s", type=float, default=31.0, help="GPU-seconds a run costs when many share")
    p.add_argument("--startup-s", type=float, default=45.0, help="a wave's fixed cost: imports, loading")
    p.add_argument("--log", type=Path, required=True)
    p.add_argument("--tar", type=Path, help="write the finished runs' outputs and logs here at the end")
    a = p.parse_args()

    start, started_at = time.monotonic(), time.time()
    log = a.log.open("a")

    def say(msg: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} +{time.monotonic() - start:5.0f}s {msg}"
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    def report(entry, rc) -> None:
        command, _, t0 = entry
        run = out_dir(command)
        result = summary(run) if (run / "metrics.json").exists() else "no metrics.json"
        say(f"{run}: rc {rc}, {time.monotonic() - t0:.0f} s, {result}")

    commands = [c for c in a.commands.read_text().splitlines() if c.strip()]
    done = [c for c in commands if (out_dir(c) / "metrics.json").exists()]
    todo = [c for c in commands if c not in done]
    say(f"{len(todo)} commands to run, {len(done)} already done; budget {a.budget:.0f} s, "
        f"up to {a.parallel} at a time, {a.per_run_s:.0f} s per run")
    try:
        while todo:
            left = a.budget - (time.monotonic() - start)
            n = min(a.parallel, len(todo), int((left - a.startup_s) // a.per_run_s))
            if n < 1:
                say(f"stop: {left:.0f} s left is too little for a wave; {len(todo)} commands left")
                break
            wave, todo = todo[:n], todo[n:]
            say(f"wave of {n}, expected {a.startup_s + n * a.per_run_s:.0f} s of {left:.0f} s left")
            procs = []
            for command in wave:
                if log_path(command):
                    log_path(command).parent.mkdir(parents=True, exist_ok=True)
                procs.append((command, subprocess.Popen(["bash", "-c", command], start_new_session=True), time.monotonic()))
            deadline = start + a.budget
            while procs and time.monotonic() < deadline:
                for entry in [e for e in procs if e[1].poll() is not None]:
                    procs.remove(entry)
                    report(entry, entry[1].returncode)
                time.sleep(1)
            for command, proc, t0 in procs:  # past the deadline: a wave that ran long
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                report((command, proc, t0), "killed at the deadline")
    finally:
        if a.tar:
            harvest(commands, started_at, a.tar)
    log.close()


if __name__ == "__main__":
    main()
