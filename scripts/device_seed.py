"""Is the device (CPU fp32 or GPU bf16) or the seed behind a cell's seed-to-seed differences?

Issue 68, factor 6: in some cells of Tables 2-4 seed 0 ran on this CPU and other seeds on lent
GPUs, so a seed that scores higher may be a luckier seed or a device effect. Without a run of
one (fold, seed) on both devices the committed runs cannot separate the two, but they bound it:
cells run on one device only show how far one seed falls from the others by chance.

    .venv/bin/python scripts/device_seed.py results/lrs results/topic_shift_mi

Reads every `runs/<model>/w<window>/fold<f>/seed<s>/metrics.json` under each results folder
(test and dev macro-F1, the device each run recorded) and prints, per cell with several seeds of
all five folds (the random baseline left out: it trains nothing): each seed's mean test / dev
macro-F1 (%) and device; for cells whose seeds ran on different devices, the mean of the CPU
seeds minus the mean of the GPU seeds; for every cell, seed 0 minus the mean of the other seeds.
Then the summary: the CPU - GPU differences of the mixed cells beside seed 0's differences in
the cells run on the CPU only, and how often the mean of as many of the latter, drawn at random
(10,000 draws without replacement, generator seed 0), is at least the mixed cells' mean. The
cells share seeds and folds, so that share is a guide, not a test.

Last, the twins: runs whose recorded fingerprints are equal (the same code, data, settings, fold
and seed) but whose devices differ, such as `tempoformer_cpu_twin` in the Topic Shift MI causes
overlay. Each pair gives CPU - GPU on test and dev for one (fold, seed) with nothing else
changed; beside them, as the scale of chance, the differences between two seeds of one fold on
the same device in the twins' own cell, over all its folds.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
from collections import defaultdict
from pathlib import Path

FOLDS = 5


def cells(results: Path) -> dict[tuple[str, str], dict[int, dict]]:
    """(model, window) -> seed -> {test, dev (means over folds, %), device}, for seeds with all folds."""
    runs: dict[tuple[str, str], dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(results.glob("runs/*/w*/fold*/seed*/metrics.json")):
        m = json.loads(path.read_text())
        if m["model"] == "random":
            continue
        runs[(m["model"], f"w{m['window']}")][m["seed"]].append(m)
    out = {}
    for cell, seeds in runs.items():
        full = {s: r for s, r in seeds.items() if len({m["fold"] for m in r}) == FOLDS}
        if len(full) < 2:
            continue
        out[cell] = {s: {"test": 100 * statistics.mean(m["test"]["macro"] for m in r),
                         "dev": 100 * statistics.mean(m["dev_macro"] for m in r),
                         "device": "/".join(sorted({device(m) for m in r}))}
                     for s, r in sorted(full.items())}
    return out


def device(m: dict) -> str:
    return "gpu" if str(m.get("device")).startswith("cuda") else "cpu"


def twins(results: Path) -> list[tuple[dict, dict]]:
    """(CPU run, GPU run) pairs with equal fingerprints, ordered by model, window, fold, seed."""
    by_print: dict[str, dict[str, dict]] = defaultdict(dict)
    for path in sorted(results.glob("runs/*/w*/fold*/seed*/metrics.json")):
        m = json.loads(path.read_text())
        if m.get("fingerprint"):
            by_print[m["fingerprint"]][device(m)] = m
    pairs = [(d["cpu"], d["gpu"]) for d in by_print.values() if {"cpu", "gpu"} <= d.keys()]
    return sorted(pairs, key=lambda p: (p[1]["model"], p[1]["window"], p[1]["fold"], p[1]["seed"]))


def same_device_seed_gaps(results: Path, model: str, window: int) -> list[float]:
    """Test macro-F1 gaps (%) between every two seeds of one fold on one device, over a cell's folds."""
    runs: dict[tuple[int, str], list[float]] = defaultdict(list)
    for path in sorted(results.glob(f"runs/{model}/w{window}/fold*/seed*/metrics.json")):
        m = json.loads(path.read_text())
        runs[(m["fold"], device(m))].append(100 * m["test"]["macro"])
    return [a - b for scores in runs.values() for i, a in enumerate(scores) for b in scores[i + 1:]]


def difference(a: list[dict], b: list[dict], split: str) -> float:
    return statistics.mean(x[split] for x in a) - statistics.mean(x[split] for x in b)


def summary(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: none"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    above = sum(v > 0 for v in values)
    return (f"{name}: n {len(values)}, mean {statistics.mean(values):+.2f}, sd {sd:.2f}, "
            f"range {min(values):+.2f} to {max(values):+.2f}, above 0 in {above} of {len(values)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="+", type=Path, help="a dataset's results folder (results/lrs)")
    a = p.parse_args()
    mixed = {"test": [], "dev": []}
    seed0_cpu_only = {"test": [], "dev": []}
    print("| dataset | model | window | per seed: test / dev (device) | CPU - GPU seeds: test, dev | "
          "seed 0 - others: test, dev |")
    print("|---|---|---|---|---:|---:|")
    for results in a.results:
        for (model, window), seeds in sorted(cells(results).items()):
            per_seed = "; ".join(f"s{s} {v['test']:.1f} / {v['dev']:.1f} ({v['device']})" for s, v in seeds.items())
            cpu = [v for v in seeds.values() if v["device"] == "cpu"]
            gpu = [v for v in seeds.values() if v["device"] == "gpu"]
            devices = {v["device"] for v in seeds.values()}
            split = ""
            if cpu and gpu:
                split = ", ".join(f"{difference(cpu, gpu, s):+.2f}" for s in ("test", "dev"))
                for s in mixed:
                    mixed[s].append(difference(cpu, gpu, s))
            seed0 = ""
            if 0 in seeds:
                others = [v for s, v in seeds.items() if s != 0]
                seed0 = ", ".join(f"{difference([seeds[0]], others, s):+.2f}" for s in ("test", "dev"))
                if devices == {"cpu"}:
                    for s in seed0_cpu_only:
                        seed0_cpu_only[s].append(difference([seeds[0]], others, s))
            print(f"| {results.name} | {model} | {window} | {per_seed} | {split} | {seed0} |")
    print()
    draw = random.Random(0)
    for s in ("test", "dev"):
        print(summary(f"{s}: CPU seeds - GPU seeds, cells on both devices", mixed[s]))
        print(summary(f"{s}: seed 0 - the other seeds, cells on the CPU only", seed0_cpu_only[s]))
        if mixed[s] and len(seed0_cpu_only[s]) >= len(mixed[s]):
            target = statistics.mean(mixed[s])
            hits = sum(statistics.mean(draw.sample(seed0_cpu_only[s], len(mixed[s]))) >= target for _ in range(10_000))
            print(f"{s}: share of random draws of {len(mixed[s])} CPU-only seed-0 differences whose mean is at "
                  f"least {target:+.2f}: {hits / 10_000:.3f}")
    for results in a.results:
        pairs = twins(results)
        if not pairs:
            continue
        print(f"\nTwins in {results.name} (equal fingerprints, CPU fp32 against GPU):")
        print("| CPU run | GPU run | fold | seed | test: CPU, GPU, CPU - GPU | dev: CPU, GPU, CPU - GPU |")
        print("|---|---|---:|---:|---:|---:|")
        gaps = {"test": [], "dev": []}
        for cpu, gpu in pairs:
            row = {"test": (100 * cpu["test"]["macro"], 100 * gpu["test"]["macro"]),
                   "dev": (100 * cpu["dev_macro"], 100 * gpu["dev_macro"])}
            for s in gaps:
                gaps[s].append(row[s][0] - row[s][1])
            print(f"| {cpu['model']} | {gpu['model']} | {cpu['fold']} | {cpu['seed']} | "
                  + " | ".join(f"{c:.1f}, {g:.1f}, {c - g:+.2f}" for c, g in row.values()) + " |")
        for s in ("test", "dev"):
            print(summary(f"{s}: CPU twin - GPU run, per (fold, seed)", gaps[s]))
        cell = pairs[0][1]
        chance = same_device_seed_gaps(results, cell["model"], cell["window"])
        if chance:
            print(f"test: two seeds of one fold on one device in {cell['model']} w{cell['window']} (all folds): "
                  f"n {len(chance)} pairs, sd of the gap {statistics.pstdev(chance + [-x for x in chance]):.2f}, "
                  f"mean |gap| {statistics.mean(abs(x) for x in chance):.2f}")


if __name__ == "__main__":
    main()
