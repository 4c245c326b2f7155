"""Carry an opt-in backbone (all-mpnet-base-v2: 438 MB) to a lent GPU over several calls.

A call carries at most 64 MiB with the tracked tree, so the weights travel in pieces:
- the word-embedding rows the posts use (every special token too), fp32: the other rows are
  never read, the device gets zeros there (as minilm_pack.py does for MiniLM);
- the encoder's weight matrices in bf16, everything else (embeddings, position bias,
  LayerNorms, biases) in fp32. A GPU run computes every matrix product in bf16 under autocast,
  which rounds these same matrices the same way (round to nearest even), so the first forward
  pass is the one the full-precision file gives; the fp32 master copies start from the rounded
  values (at most 2^-9 of a weight away, less than one optimiser step at lr 1e-4). Runs made
  from such a carry say so: their weights file is not the table's (setup.backbone.matches_table
  false) and the lease's README names the carry.

`split` (here) writes the pieces and a manifest with the digest of the tensors the device must
rebuild; `pack` (here) groups files into carry folders of a given size; `join` (on the device)
rebuilds the folder and checks the digest; `check-tokens` (on the device) tokenises the posts
again and refuses any id that was not carried.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from minilm_pack import add_word_rows, digest, refuse_uncarried, used_ids  # noqa: E402

WORD = "embeddings.word_embeddings.weight"
PIECE = 2 * 2**20  # bytes of tensors per piece file: small, so that carries pack full


def to_bf16(x: np.ndarray) -> np.ndarray:
    """fp32 -> the bf16 bit pattern (uint16), round to nearest even (torch's rounding)."""
    bits = x.astype(np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def from_bf16(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.uint32) << 16).view(np.float32)


def is_matrix(name: str, t: np.ndarray) -> bool:
    """An encoder weight matrix: what autocast computes in bf16 on a GPU."""
    return t.ndim == 2 and name.startswith("encoder.layer.") and name.endswith(".weight")


def split(model_dir: Path, posts: list[str], out: Path, piece_bytes: int = PIECE) -> dict:
    tensors = load_file(str(model_dir / "model.safetensors"))
    ids = used_ids(model_dir, posts)
    word = tensors.pop(WORD)
    shutil.rmtree(out, ignore_errors=True)
    (out / "pieces").mkdir(parents=True)
    shutil.copytree(model_dir, out / "files", ignore=shutil.ignore_patterns("model.safetensors", "desktop.ini"))
    save_file({"ids": ids}, str(out / "pieces" / "word_rows.safetensors"))
    per_piece = max(1, piece_bytes // (word.shape[1] * word.itemsize))
    for k, start in enumerate(range(0, len(ids), per_piece)):
        save_file({"rows": word[ids[start:start + per_piece]]}, str(out / "pieces" / f"word_rows_{k:02d}.safetensors"))
    rebuilt = {WORD: np.zeros_like(word)}
    rebuilt[WORD][ids] = word[ids]
    piece, size, n = {}, 0, 0
    for name in sorted(tensors):
        t = tensors[name]
        stored = to_bf16(t) if is_matrix(name, t) else t
        rebuilt[name] = from_bf16(stored) if is_matrix(name, t) else t
        piece[name] = stored
        size += stored.nbytes
        if size >= piece_bytes:
            save_file(piece, str(out / "pieces" / f"piece_{n:02d}.safetensors"))
            piece, size, n = {}, 0, n + 1
    if piece:
        save_file(piece, str(out / "pieces" / f"piece_{n:02d}.safetensors"))
    manifest = {"vocab": int(word.shape[0]), "rows": int(len(ids)), "posts": posts,
                "bf16": sorted(k for k, t in tensors.items() if is_matrix(k, t)),
                "digest": digest(rebuilt)}
    (out / "pieces" / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def pack(src: Path, dest: Path, limit: int, first: list[Path]) -> list[Path]:
    """Files (first the `first` ones, then src's pieces by size) into carry folders dest/c1, c2, ...
    of at most `limit` bytes each; each folder gets stage.sh, which copies it into $STAGE."""
    files = [*first, *sorted((p for p in src.rglob("*") if p.is_file() and p not in first),
                             key=lambda p: -p.stat().st_size)]
    shutil.rmtree(dest, ignore_errors=True)
    carries: list[list[Path]] = []
    sizes: list[int] = []
    for f in files:
        s = f.stat().st_size
        if s > limit:
            sys.exit(f"backbone_pack: {f} ({s / 2**20:.1f} MiB) is over a carry's {limit / 2**20:.1f} MiB")
        for i, used in enumerate(sizes):  # first fit
            if used + s <= limit:
                carries[i].append(f)
                sizes[i] += s
                break
        else:
            carries.append([f])
            sizes.append(s)
    folders = []
    for i, group in enumerate(carries, 1):
        folder = dest / f"c{i}"
        for f in group:
            rel = f.relative_to(src) if f.is_relative_to(src) else Path(f.name)
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, folder / rel)
        (folder / "stage.sh").write_text(
            '#!/usr/bin/env bash\nset -euo pipefail\nSTAGE=${STAGE:-/tmp/device}\nmkdir -p "$STAGE"\n'
            'here=$(cd "$(dirname "$0")" && pwd)\n'
            'cp -r "$here/." "$STAGE/"\nrm -f "$STAGE/stage.sh"\n'
            f'echo "staged carry {i}: $(du -sm "$here" | cut -f1) MiB; $(du -sm "$STAGE" | cut -f1) MiB in $STAGE"\n')
        folders.append(folder)
    return folders


def join(stage: Path, dest: Path) -> None:
    manifest = json.loads((stage / "pieces" / "manifest.json").read_text())
    ids = load_file(str(stage / "pieces" / "word_rows.safetensors"))["ids"]
    rows = np.concatenate([load_file(str(p))["rows"] for p in sorted((stage / "pieces").glob("word_rows_*.safetensors"))])
    tensors = {}
    for piece in sorted((stage / "pieces").glob("piece_*.safetensors")):
        tensors.update(load_file(str(piece)))
    for name in manifest["bf16"]:
        tensors[name] = from_bf16(tensors[name])
    got = add_word_rows(tensors, ids, rows, manifest, "backbone_pack")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(stage / "files", dest)
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    print(f"backbone_pack join: {dest}, digest {got[:16]} matches; {manifest['rows']} of {manifest['vocab']} "
          f"word rows carried, {len(manifest['bf16'])} matrices carried in bf16")


def check_tokens(stage: Path, model_dir: Path) -> None:
    manifest = json.loads((stage / "pieces" / "manifest.json").read_text())
    refuse_uncarried("backbone_pack", model_dir, manifest["posts"],
                     load_file(str(stage / "pieces" / "word_rows.safetensors"))["ids"])


# each subcommand's options (all paths; "posts" takes several)
OPTIONS = {"split": ("model-dir", "posts", "out"), "join": ("stage", "dest"), "check-tokens": ("stage", "model-dir")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for cmd, options in OPTIONS.items():
        parser = sub.add_parser(cmd)
        for option in options:
            parser.add_argument(f"--{option}", required=True, **({"nargs": "+"} if option == "posts" else {"type": Path}))
    a = p.parse_args()
    if a.cmd == "split":
        m = split(a.model_dir, a.posts, a.out)
        print(f"backbone_pack split: {m['rows']} of {m['vocab']} word rows, {len(m['bf16'])} matrices in bf16, "
              f"digest {m['digest'][:16]}")
    elif a.cmd == "join":
        join(a.stage, a.dest)
    else:
        check_tokens(a.stage, a.model_dir)


if __name__ == "__main__":
    main()
