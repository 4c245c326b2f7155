"""Carry committed run records across a change of the fingerprint scheme or of code that does
not change what a run computes, without retraining (README, "Reruns").

    .venv/bin/python scripts/migrate_fingerprints.py --from REV \
        --configs "config/lrs.yaml config/lrs_cpu.yaml ..." [--configs "..."] [--write]

For every run record under the configs' results folders (`<results>/<dataset>/runs/<model>/
w<window>/fold<fold>/seed<seed>/metrics.json`, with its predictions.parquet), the fingerprint
the workflow would have given it at git revision REV (REV's package, REV's configs, REV's
fingerprint scheme) is compared with the one it recorded:
- equal under some config set: the run was current at REV; its record gets the fingerprint the
  working tree gives it under that config set;
- equal under none: refused (stale at REV already, or made from settings no config set names);
  its record is left as it is, and the script exits with 1.
Without --write nothing is written: the script prints what it would do.

What it vouches for is that the code changed between REV and the working tree computes the
same thing for these runs; the equivalence tests (tests/test_refactor_equivalence.py) are the
evidence for the change it was written for. REV and the working tree each compute their
fingerprints in a process of their own, importing their own package.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load_config(root: Path, configfiles: list[str]) -> dict:
    """The config Snakemake builds from `--configfile A B ...` in the tree at `root`: deep-merged
    in order, then validated by the tree's schema, which fills in the defaults."""
    import yaml
    from snakemake.utils import update_config, validate

    config: dict = {}
    for name in configfiles or ["config/config.yaml"]:
        with open(root / name) as handle:
            update_config(config, yaml.safe_load(handle) or {})
    validate(config, str(root / "workflow" / "schemas" / "config.schema.yaml"))
    return config


def dump(root: Path, config_sets: list[list[str]]) -> None:
    """Print, as JSON, run folder -> fingerprint for each config set, computed by the package of
    the tree at `root` (run in a process whose sys.path starts with root/src)."""
    from tempoformer.fingerprint import RunFingerprints

    out = []
    for configfiles in config_sets:
        config = load_config(root, configfiles)
        out.append(RunFingerprints(config, root / "src" / "tempoformer").all_runs())
    json.dump(out, sys.stdout)


def fingerprints_at(root: Path, config_sets: list[list[str]]) -> list[dict[str, str]]:
    """Run `dump` for the tree at `root` in a fresh interpreter, from the repository's folder
    (config paths to data are relative to it)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]);"
            "import migrate_fingerprints as m, json, pathlib;"
            "m.dump(pathlib.Path(sys.argv[2]).parent, json.loads(sys.argv[3]))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-c", code, str(REPO / "scripts"), str(root / "src"),
                             json.dumps(config_sets)], cwd=REPO, env=env, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"migrate_fingerprints: computing the fingerprints of {root} failed:\n{result.stderr}")
    return json.loads(result.stdout)


def checkout(rev: str, into: Path) -> Path:
    """The tree of `rev` (package, configs, schema) under `into`."""
    archive = into / "rev.tar"
    with open(archive, "wb") as handle:
        subprocess.run(["git", "-C", str(REPO), "archive", rev, "src", "config", "workflow/schemas"],
                       stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def run_records(results: set[str]) -> list[str]:
    found = []
    for folder in sorted(results):
        found += sorted(glob.glob(f"{folder}/*/runs/*/w*/fold*/seed*/metrics.json"))
    return [os.path.dirname(path) for path in found]


def plan(records: list[str], old: list[dict], new: list[dict]) -> tuple[dict, dict]:
    """run folder -> (recorded, migrated) fingerprint, and run folder -> why it is refused."""
    moves, refused = {}, {}
    for run in records:
        with open(f"{run}/metrics.json") as handle:
            recorded = json.load(handle).get("fingerprint")
        targets = {new_set[run] for old_set, new_set in zip(old, new)
                   if old_set.get(run) == recorded and run in new_set}
        if recorded is None:
            refused[run] = "no recorded fingerprint"
        elif not os.path.exists(f"{run}/predictions.parquet"):
            refused[run] = "predictions.parquet is missing"
        elif not targets:
            refused[run] = "not current at the old revision under any config set given"
        elif len(targets) > 1:
            refused[run] = f"config sets disagree on its new fingerprint: {sorted(targets)}"
        else:
            moves[run] = (recorded, targets.pop())
    return moves, refused


def rewrite(run: str, recorded: str, migrated: str) -> None:
    """Replace the fingerprint in metrics.json, every other byte kept; atomically."""
    path = Path(run) / "metrics.json"
    text = path.read_text()
    field = f'"fingerprint": "{recorded}"'
    if text.count(field) != 1:
        raise SystemExit(f"{path}: expected one {field}, found {text.count(field)}")
    tmp = path.with_name(path.name + ".migrating")
    tmp.write_text(text.replace(field, f'"fingerprint": "{migrated}"'))
    os.replace(tmp, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="rev", required=True,
                        help="git revision at which the committed runs were current")
    parser.add_argument("--configs", action="append", required=True,
                        help="one config set: the --configfile list of a snakemake command, space-separated "
                             "(repeat for each set)")
    parser.add_argument("--write", action="store_true", help="rewrite the records (default: only report)")
    args = parser.parse_args(argv)
    config_sets = [c.split() for c in args.configs]
    with tempfile.TemporaryDirectory() as tmp:
        old = fingerprints_at(checkout(args.rev, Path(tmp)), config_sets)
    new = fingerprints_at(REPO, config_sets)
    os.chdir(REPO)
    results = {load_config(REPO, c)["results"] for c in config_sets}
    moves, refused = plan(run_records(results), old, new)
    unchanged = sum(1 for a, b in moves.values() if a == b)
    for run, why in refused.items():
        print(f"refused {run}: {why}")
    print(f"{len(moves)} runs current at {args.rev}: {len(moves) - unchanged} to rewrite, {unchanged} "
          f"already carry the new fingerprint; {len(refused)} refused")
    if args.write:
        for run, (recorded, migrated) in moves.items():
            if recorded != migrated:
                rewrite(run, recorded, migrated)
        print(f"rewrote {len(moves) - unchanged} records")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
