"""Where the default run's time goes: the rules' `benchmark:` files, summed per rule.

    python bench/default_run.py run DIR [--cores 2] [--configfile FILE]
        runs the workflow (this repository's Snakefile) in the empty folder DIR, timing it and
        noting the load average before and after (DIR/run_time.json), then prints the summary
    python bench/default_run.py summary DIR [DIR2]
        per rule: jobs, total wall seconds, total CPU seconds, the slowest job; with DIR2, the two
        runs side by side (DIR: before, DIR2: after)
    python bench/default_run.py tables DIR DIR2
        which files of the two runs' tables and figures folders differ in their bytes

Wall seconds depend on what else runs on the machine (the `mean_load` of each benchmark file, the
load averages in run_time.json); CPU seconds much less. Train jobs are also summed per model.
Run from the repository root with the package installed (`tempoformer` on PATH) and
HF_HUB_OFFLINE=1. Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def rule_of(rel: Path) -> tuple[str, str | None]:
    """(rule, detail) of a benchmark file, from its path under results/benchmarks/."""
    parts, stem = rel.parts, rel.stem
    if parts[0] == "semantic_change":
        if len(parts) == 2:
            return "semantic_change_tables", None
        if stem == "synthetic":
            return "semantic_change_synthetic", None
        kind, _, rest = stem.partition("_")
        return f"semantic_change_{kind}", re.sub(r"_seed\d+$", "", rest)
    if len(parts) == 1:
        return stem, None
    if parts[1] == "train":
        match = re.match(r"(.+)_w\d+_fold\d+_seed\d+$", stem)
        return "train", match.group(1) if match else stem
    return re.sub(r"_w\d+$", "", stem), None


def read_benchmarks(run_dir: Path) -> list[dict]:
    root = run_dir / "results" / "benchmarks"
    if not root.is_dir():
        raise SystemExit(f"{root}: no benchmark files (run the workflow in {run_dir} first)")
    rows = []
    for path in sorted(root.rglob("*.tsv")):
        with open(path, newline="") as handle:
            records = list(csv.DictReader(handle, delimiter="\t"))
        if not records:
            continue
        rule, detail = rule_of(path.relative_to(root))
        last = records[-1]
        rows.append({"rule": rule, "detail": detail, "file": str(path.relative_to(root)),
                     "s": float(last["s"]), "cpu": float(last.get("cpu_time") or "nan"),
                     "load": float(last.get("mean_load") or "nan")})
    return rows


def per_rule(rows: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "s": 0.0, "cpu": 0.0, "max_s": 0.0})
    for r in rows:
        keys = [r["rule"]] + ([f"{r['rule']}[{r['detail']}]"] if r["rule"] == "train" else [])
        for key in keys:
            entry = out[key]
            entry["jobs"] += 1
            entry["s"] += r["s"]
            entry["cpu"] += r["cpu"]
            entry["max_s"] = max(entry["max_s"], r["s"])
    return dict(out)


def run_time(run_dir: Path) -> dict | None:
    path = run_dir / "run_time.json"
    return json.loads(path.read_text()) if path.is_file() else None


def summary(dirs: list[Path]) -> None:
    tables = [per_rule(read_benchmarks(d)) for d in dirs]
    rules = sorted(set().union(*tables), key=lambda k: -max(t.get(k, {}).get("s", 0.0) for t in tables))
    header = "| rule |" + "".join(" jobs | wall s | CPU s | slowest s |" for _ in dirs)
    print(f"Runs: {', '.join(map(str, dirs))}\n")
    print(header)
    print("|---|" + "---:|---:|---:|---:|" * len(dirs))
    for rule in rules:
        cells = []
        for t in tables:
            e = t.get(rule)
            cells.append(" – | – | – | – |" if e is None else
                         f" {e['jobs']} | {e['s']:.1f} | {e['cpu']:.1f} | {e['max_s']:.1f} |")
        print(f"| {rule} |" + "".join(cells))
    totals = []
    for t in tables:
        top = {k: v for k, v in t.items() if "[" not in k}
        totals.append(f" {sum(e['jobs'] for e in top.values())} | {sum(e['s'] for e in top.values()):.1f} |"
                      f" {sum(e['cpu'] for e in top.values()):.1f} | |")
    print("| all jobs |" + "".join(totals))
    for d in dirs:
        rt = run_time(d)
        if rt:
            print(f"\n{d}: whole run {rt['wall_s']:.0f} s ({rt['wall_s'] / 60:.1f} min), exit {rt['returncode']}, "
                  f"load average before {rt['load_before']}, after {rt['load_after']}, --cores {rt['cores']}")


def run(run_dir: Path, cores: int, configfile: str | None) -> None:
    if run_dir.exists() and any(run_dir.iterdir()):
        raise SystemExit(f"{run_dir} is not empty: the run must start from nothing")
    run_dir.mkdir(parents=True, exist_ok=True)
    cmd = ["snakemake", "-s", str(REPO / "Snakefile"), "-d", str(run_dir), "--cores", str(cores)]
    if configfile:
        cmd += ["--configfile", str(Path(configfile).resolve())]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    load_before = os.getloadavg()
    started = time.perf_counter()
    with open(run_dir / "snakemake.out", "w") as out:
        result = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
    wall = time.perf_counter() - started
    record = {"command": cmd, "cores": cores, "wall_s": wall, "returncode": result.returncode,
              "load_before": [round(x, 2) for x in load_before],
              "load_after": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}
    (run_dir / "run_time.json").write_text(json.dumps(record, indent=1) + "\n")
    summary([run_dir])
    if result.returncode:
        sys.exit(f"snakemake failed (exit {result.returncode}): {run_dir / 'snakemake.out'}")


def compare_tables(a: Path, b: Path) -> None:
    same, different, missing = [], [], []
    for sub in ("results/tables", "results/figures"):
        for path in sorted((a / sub).glob("*")):
            if not path.is_file():
                continue
            other = b / sub / path.name
            if not other.is_file():
                missing.append(str(Path(sub) / path.name))
            elif filecmp.cmp(path, other, shallow=False):
                same.append(str(Path(sub) / path.name))
            else:
                different.append(str(Path(sub) / path.name))
    print(f"{len(same)} files byte-identical, {len(different)} differ, {len(missing)} missing in {b}")
    for name in different:
        print(f"  differs: {name}")
    for name in missing:
        print(f"  missing: {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run the workflow in an empty folder and summarise it")
    p.add_argument("dir", type=Path)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--configfile", help="default: the embedded config/config.yaml")
    p = sub.add_parser("summary", help="per-rule totals of one run, or two side by side")
    p.add_argument("dirs", type=Path, nargs="+")
    p = sub.add_parser("tables", help="byte comparison of two runs' tables and figures")
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    a = parser.parse_args()
    if a.command == "run":
        run(a.dir, a.cores, a.configfile)
    elif a.command == "summary":
        summary(a.dirs)
    else:
        compare_tables(a.a, a.b)


if __name__ == "__main__":
    main()
